//! A global allocator for memory tests: the system allocator, counting the
//! bytes each thread holds. A test binary that includes this module counts
//! every allocation of its own threads; [`held`] reads the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the bytes each thread holds.
struct Counting;

thread_local! {
    /// Bytes this thread asked for, less those it gave back.
    static NET: Cell<isize> = const { Cell::new(0) };
    /// The most `NET` has been since [`reset_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Blocks this thread asked for (allocations and reallocations).
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count_call() {
    let _ = CALLS.try_with(|calls| calls.set(calls.get() + 1));
}

fn count(bytes: isize) {
    // `try_with`: a thread's last frees may come after its locals are gone.
    let _ = NET.try_with(|net| {
        net.set(net.get() + bytes);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(net.get())));
    });
}

// SAFETY: every call is passed on to `System` unchanged; counting has no
// effect on the blocks.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_call();
        count(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_call();
        count(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_call();
        count(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes this thread holds now.
pub(crate) fn held() -> isize {
    NET.with(Cell::get)
}

/// Starts measuring this thread's peak from what it holds now.
#[allow(dead_code)] // (not every test binary measures peaks)
pub(crate) fn reset_peak() {
    PEAK.with(|peak| peak.set(held()));
}

/// The most this thread has held since [`reset_peak`]. (Blocks it
/// allocated and another thread freed still count as held here.)
#[allow(dead_code)]
pub(crate) fn peak() -> isize {
    PEAK.with(Cell::get)
}

/// Blocks this thread has asked for so far (allocations and
/// reallocations, not frees).
#[allow(dead_code)]
pub(crate) fn allocations() -> usize {
    CALLS.with(Cell::get)
}
