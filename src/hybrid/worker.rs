//! The background merge thread: started when a merge is requested, gone
//! when no more are waiting.
//!
//! A thread lives for one burst of merges: it merges while requests keep
//! coming and exits when none is waiting. So a map that does not merge has
//! no thread, and the thread's allocator caches (jemalloc keeps freed blocks
//! per thread) are returned when it exits instead of lingering. Spawning
//! costs tens of microseconds, next to merges of milliseconds to seconds.
//!
//! Lock order: writers call [`Mailbox::request`] after releasing the fresh
//! delta's lock, and the mailbox's lock is never held while merging, so no
//! thread waits on another in a cycle. Drop takes the thread's handle under
//! the lock and joins it outside, because the thread needs the lock to
//! exit.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// What the map and its merge thread tell each other.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
    /// A merge was requested and has not started: lets writers skip the
    /// lock when one is already on its way.
    pending: AtomicBool,
    /// Set on drop: a running merge stops at its next check.
    pub(crate) cancel: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    requested: bool,
    /// Whether a thread is between its start and its decision to exit.
    running: bool,
    shutdown: bool,
    /// The latest thread (running, or exited and not yet joined).
    thread: Option<JoinHandle<()>>,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks for a merge: the running thread will do it after its current
    /// one, or `spawn` starts a thread. Requests made before the merge starts
    /// count once. False if a thread was needed and `spawn` failed.
    pub(crate) fn request(&self, spawn: impl FnOnce() -> io::Result<JoinHandle<()>>) -> bool {
        if self.pending.swap(true, Ordering::AcqRel) {
            return true;
        }
        let mut state = self.lock();
        if state.shutdown {
            return true;
        }
        state.requested = true;
        if state.running {
            return true;
        }
        // The previous thread decided to exit (under this lock): it is gone
        // or about to be, and needs nothing more from us.
        if let Some(previous) = state.thread.take() {
            let _ = previous.join();
        }
        match spawn() {
            Ok(thread) => {
                state.thread = Some(thread);
                state.running = true;
                true
            }
            Err(_) => {
                state.requested = false;
                self.pending.store(false, Ordering::Release);
                false
            }
        }
    }

    /// Merge thread side: whether to merge (again); false means exit now.
    pub(crate) fn next(&self) -> bool {
        let mut state = self.lock();
        if state.requested && !state.shutdown {
            state.requested = false;
            self.pending.store(false, Ordering::Release);
            return true;
        }
        state.running = false;
        false
    }

    /// Tells a running merge to give up and the thread to exit; returns the
    /// thread to join.
    pub(crate) fn shutdown(&self) -> Option<JoinHandle<()>> {
        self.cancel.store(true, Ordering::Relaxed);
        let mut state = self.lock();
        state.shutdown = true;
        state.thread.take()
    }
}
