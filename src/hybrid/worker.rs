//! The background merge thread's mailbox: requests, shutdown, cancellation.
//!
//! The thread itself is spawned and joined by the map (it needs the map's
//! shared state); this is the part both sides lock. Lock order: a writer
//! calls [`Mailbox::request`] after releasing the fresh delta's lock, and the
//! worker holds the mailbox lock only while waiting, never while merging, so
//! neither can wait on the other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// What the map tells its worker.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
    wake: Condvar,
    /// A merge was requested and has not started yet: lets writers skip the
    /// lock when one is already on its way.
    pending: AtomicBool,
    /// Set on drop: a running merge stops at its next check.
    pub(crate) cancel: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    requested: bool,
    shutdown: bool,
}

impl Mailbox {
    /// Asks for a merge (at most one waits: repeated requests before it
    /// starts are one).
    pub(crate) fn request(&self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.requested = true;
        self.wake.notify_one();
    }

    /// Worker side: waits for a request (true) or for shutdown (false).
    pub(crate) fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.shutdown {
                return false;
            }
            if state.requested {
                state.requested = false;
                self.pending.store(false, Ordering::Release);
                return true;
            }
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Tells the worker to stop (and a running merge to give up).
    pub(crate) fn shutdown(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.shutdown = true;
        self.wake.notify_all();
    }
}
