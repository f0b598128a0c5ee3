//! Leaves: a value and the key bytes below the leaf's parent, in one block.
//!
//! ```text
//!  | value: V (or a pointer to a boxed V) | suffix field (see `bytes`) |   padded to 8 bytes
//! ```
//!
//! A leaf stores only the part of its key that the path from the root does
//! not already spell out. For a `u64` value and the 8-byte average suffix of
//! the Debian paths that is 8 + 1 + 8 = 17 bytes, 24 in the arena.
//!
//! Values are stored inline when their alignment is at most the arena's
//! 8 bytes and they are not huge; otherwise the leaf holds the pointer that
//! `Box::into_raw` gave for it (a raw pointer, not a `Box`: reading a value
//! through `&self` must not assert the unique access a `Box` stands for).
//! Which one is decided at compile time per `V`.

use std::marker::PhantomData;
use std::ptr;

use super::arena::UNIT;
use super::bytes;

/// Largest value stored inline in a leaf; larger ones are boxed so that a leaf
/// always fits an arena block.
const MAX_INLINE_VALUE: usize = 512;

/// Compile-time facts about leaves holding a `V`.
pub(crate) struct Leaf<V>(PhantomData<V>);

impl<V> Leaf<V> {
    /// Whether `V` sits in the leaf itself (else a pointer to a box does).
    pub(crate) const INLINE: bool = align_of::<V>() <= UNIT && size_of::<V>() <= MAX_INLINE_VALUE;

    /// Bytes before the suffix field.
    pub(crate) const VALUE_BYTES: usize = if Self::INLINE {
        size_of::<V>()
    } else {
        size_of::<*mut V>()
    };

    /// Heap bytes a leaf owns outside the arena besides its suffix: the box of
    /// a boxed value.
    pub(crate) const BOXED_VALUE_BYTES: usize = if Self::INLINE { 0 } else { size_of::<V>() };

    /// Units of a leaf whose suffix is `suffix_len` bytes long.
    #[inline]
    pub(crate) const fn units(suffix_len: usize) -> usize {
        let bytes = Self::VALUE_BYTES + bytes::field_size(suffix_len);
        bytes.div_ceil(UNIT)
    }

    /// Units of the leaf at `leaf`.
    ///
    /// # Safety
    /// `leaf` must point to a live leaf block of this `V`.
    #[inline]
    pub(crate) unsafe fn stored_units(leaf: *const u8) -> usize {
        // SAFETY: a live leaf has a valid suffix field after the value.
        let field = unsafe { bytes::stored_size(leaf.add(Self::VALUE_BYTES)) };
        (Self::VALUE_BYTES + field).div_ceil(UNIT)
    }

    /// The key bytes stored in the leaf.
    ///
    /// # Safety
    /// `leaf` must point to a live leaf block; the slice must not outlive it.
    #[inline(always)]
    pub(crate) unsafe fn suffix<'a>(leaf: *const u8) -> &'a [u8] {
        // SAFETY: a live leaf has a valid suffix field after the value.
        unsafe { bytes::read(leaf.add(Self::VALUE_BYTES)) }
    }

    /// Pointer to the suffix field.
    ///
    /// # Safety
    /// `leaf` must point into a leaf block.
    #[inline]
    pub(crate) unsafe fn suffix_field(leaf: *mut u8) -> *mut u8 {
        // SAFETY: the field starts inside the block.
        unsafe { leaf.add(Self::VALUE_BYTES) }
    }

    /// Pointer to the value.
    ///
    /// # Safety
    /// `leaf` must point to a live leaf block holding a value.
    #[inline(always)]
    pub(crate) unsafe fn value(leaf: *mut u8) -> *mut V {
        if Self::INLINE {
            // Blocks are 8-aligned and `V` needs at most that.
            leaf.cast::<V>()
        } else {
            // SAFETY: a boxed leaf starts with the pointer to its live box
            // (aligned: 8).
            unsafe { leaf.cast::<*mut V>().read() }
        }
    }

    /// Moves `value` into the fresh leaf block at `leaf`.
    ///
    /// # Safety
    /// `leaf` must point to a block of at least `VALUE_BYTES` bytes whose value
    /// slot holds no live value.
    #[inline]
    pub(crate) unsafe fn write_value(leaf: *mut u8, value: V) {
        // SAFETY: room and alignment per the contract and `INLINE`.
        unsafe {
            if Self::INLINE {
                leaf.cast::<V>().write(value);
            } else {
                leaf.cast::<*mut V>().write(Box::into_raw(Box::new(value)));
            }
        }
    }

    /// Moves the value out; the slot then holds no live value.
    ///
    /// # Safety
    /// `leaf` must point to a live leaf block holding a value.
    #[inline]
    pub(crate) unsafe fn take_value(leaf: *mut u8) -> V {
        // SAFETY: the slot holds a live value (or box), read exactly once.
        unsafe {
            if Self::INLINE {
                leaf.cast::<V>().read()
            } else {
                *Box::from_raw(leaf.cast::<*mut V>().read())
            }
        }
    }

    /// Drops the value in place; the slot then holds no live value.
    ///
    /// # Safety
    /// As for [`Leaf::take_value`].
    #[inline]
    pub(crate) unsafe fn drop_value(leaf: *mut u8) {
        // SAFETY: the slot holds a live value (or box), dropped exactly once.
        unsafe {
            if Self::INLINE {
                ptr::drop_in_place(leaf.cast::<V>());
            } else {
                drop(Box::from_raw(leaf.cast::<*mut V>().read()));
            }
        }
    }
}
