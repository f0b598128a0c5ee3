//! An insert whose allocation fails half-way must leave the tree readable.
//!
//! On stable Rust a failing allocation aborts, as in the standard
//! collections; only an allocation error hook that panics (nightly's
//! `set_alloc_error_hook`) makes it unwind. The fork an insert builds above
//! a leaf or node then used to free the block it replaced before allocating
//! the fork's prefix, and the tree named a freed block. This test makes that
//! allocation fail and reads the map afterwards; `.ci/run` runs it, under
//! valgrind, where a nightly toolchain is installed:
//!
//! ```sh
//! RUSTFLAGS="--cfg memkv_alloc_error_hook" cargo +nightly test --test art_alloc_failure
//! ```
#![cfg(memkv_alloc_error_hook)]
#![feature(alloc_error_hook)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use memkv::FastArt;

/// The system allocator, failing once for an allocation of `FAIL_SIZE` bytes.
struct FailingOnce;

static FAIL_SIZE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, or returns null (a failure).
unsafe impl GlobalAlloc for FailingOnce {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if FAIL_SIZE
            .compare_exchange(layout.size(), 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: FailingOnce = FailingOnce;

/// A key prefix whose length no other allocation of the test has.
const SHARED: usize = 1001;

/// Inserts `keys`, then `new` with the allocation of the fork's
/// `SHARED`-byte prefix failing, and checks that the map still holds
/// `keys` and takes `new` at the next try.
fn insert_failing_at_the_fork(keys: &[Vec<u8>], new: &[u8]) {
    let mut map = FastArt::new();
    for (i, key) in keys.iter().enumerate() {
        map.insert(key, i.to_string());
    }
    std::alloc::set_alloc_error_hook(|layout| {
        panic!("allocation of {} bytes failed", layout.size())
    });
    FAIL_SIZE.store(SHARED, Ordering::SeqCst);
    let failed = catch_unwind(AssertUnwindSafe(|| map.insert(new, "new".to_string())));
    let _ = std::alloc::take_alloc_error_hook();
    assert!(failed.is_err(), "the fork's prefix allocation failed");
    assert_eq!(FAIL_SIZE.load(Ordering::SeqCst), 0);
    assert_eq!(map.len(), keys.len());
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(map.get(key), Some(&i.to_string()));
    }
    assert_eq!(map.get(new), None);
    let walked: Vec<Vec<u8>> = map.keys().collect();
    let mut sorted = keys.to_vec();
    sorted.sort();
    assert_eq!(walked, sorted);
    assert_eq!(map.insert(new, "new".to_string()), None);
    assert_eq!(map.get(new).map(String::as_str), Some("new"));
}

#[test]
fn a_failed_fork_above_a_node_leaves_the_node() {
    let shared = vec![b'p'; SHARED];
    // A node with a 1,003-byte prefix (out of line) above "a" and "b".
    let keys = [
        [&shared[..], b"xya"].concat(),
        [&shared[..], b"xyb"].concat(),
    ];
    insert_failing_at_the_fork(&keys, &[&shared[..], b"z"].concat());
}

#[test]
fn a_failed_fork_above_a_leaf_leaves_the_leaf() {
    let shared = vec![b'p'; SHARED];
    // A leaf whose suffix keeps 299 bytes (out of line) below the fork.
    let keys = [[&shared[..], &[b'a'; 300][..]].concat()];
    insert_failing_at_the_fork(&keys, &[&shared[..], b"z"].concat());
}
