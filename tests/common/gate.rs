//! A value type whose encoding can hold a merge open, so that tests can act
//! while a merge is known to be running (the idea of `Gated` in
//! `hybrid_merge.rs`), and a way to wait until another thread is blocked.
//!
//! Included with `#[path = "common/gate.rs"] mod gate;` by the tests that
//! use it; each test binary has its own gates.

// Each test binary uses a part of this.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use memkv::frozen::{FrozenValue, IntColumn};

/// How long a held merge waits for its gate before it gives up (with a
/// panic, which fails the merge): a test that fails while a merge is held
/// then fails instead of hanging.
const HOLD_AT_MOST: Duration = Duration::from_secs(60);

/// A gate that holds a merge: closed at first; [`Gated`] values of the
/// gate's hold value wait in `encode` until it opens. Once open it stays
/// open.
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    cond: Condvar,
    /// Values of this gate's [`Gated`] type encoded so far.
    encoded: AtomicU64,
}

#[derive(Debug)]
struct GateState {
    /// A merge reached the gate (encoded the hold value while it was closed).
    reached: bool,
    open: bool,
}

/// The gates; a test uses gate `G` through `Gated<G, HOLD>`.
pub(crate) static GATES: [Gate; 3] = [Gate::new(), Gate::new(), Gate::new()];

impl Gate {
    const fn new() -> Self {
        Gate {
            state: Mutex::new(GateState {
                reached: false,
                open: false,
            }),
            cond: Condvar::new(),
            encoded: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Merge side: marks the gate reached and waits until it is open.
    fn hold(&self) {
        let deadline = Instant::now() + HOLD_AT_MOST;
        let mut state = self.lock();
        if state.open {
            return;
        }
        state.reached = true;
        self.cond.notify_all();
        while !state.open {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the gate never opened: merge abandoned");
            state = self
                .cond
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits until a merge holds at the gate (or the gate is open).
    ///
    /// # Panics
    /// After `timeout`.
    pub(crate) fn wait_reached(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while !state.reached && !state.open {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no merge reached the gate in {timeout:?}");
            state = self
                .cond
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether a merge reached the gate (it may have been opened since).
    pub(crate) fn is_reached(&self) -> bool {
        self.lock().reached
    }

    /// Whether a merge is holding at the gate now.
    pub(crate) fn is_holding(&self) -> bool {
        let state = self.lock();
        state.reached && !state.open
    }

    /// Lets the held merge (and every later one) go on.
    pub(crate) fn open(&self) {
        self.lock().open = true;
        self.cond.notify_all();
    }

    pub(crate) fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Values of this gate's type encoded so far (by merges).
    pub(crate) fn encoded(&self) -> u64 {
        self.encoded.load(Ordering::SeqCst)
    }
}

/// Runs its function if dropped while its thread panics: a test thread that
/// fails can open a gate (rather than have the test wait for the held
/// merge to give up) and tell the other threads to stop.
pub(crate) struct OnPanic<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for OnPanic<F> {
    fn drop(&mut self) {
        if thread::panicking() {
            (self.0)();
        }
    }
}

/// A `u64` value whose encoding, for the value `HOLD`, waits at gate
/// `GATE` (of [`GATES`]) until the gate is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gated<const GATE: usize, const HOLD: u64>(pub(crate) u64);

impl<const GATE: usize, const HOLD: u64> FrozenValue for Gated<GATE, HOLD> {
    const TYPE_NAME: &'static str = "Gated";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        let gate = &GATES[GATE];
        gate.encoded.fetch_add(1, Ordering::SeqCst);
        if self.0 == HOLD {
            gate.hold();
        }
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Gated(encoded)
    }
}

/// The calling thread's id (Linux: from `/proc/thread-self`).
pub(crate) fn thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Whether thread `tid` of this process is asleep (state `S`: waiting on a
/// lock, a join, a condition variable...). Linux only; `None` elsewhere.
fn is_asleep(tid: u32) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (name) S ...": the name may hold spaces and parentheses.
    let state = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .next()?;
    Some(state == "S")
}

/// Waits until thread `tid` is asleep: a thread that announced it is about
/// to take a lock (or join a thread) and then sleeps is waiting for it.
/// Returns false if it did not fall asleep within `timeout` (or /proc
/// cannot say).
pub(crate) fn wait_until_asleep(tid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match is_asleep(tid) {
            Some(true) => return true,
            Some(false) if Instant::now() < deadline => thread::yield_now(),
            _ => return false,
        }
    }
}
