//! Dropping a map stops its merge thread, even in the middle of a merge.
//! (Alone in its binary: it counts the process's merge threads.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use memkv::{HybridConfig, HybridMap};

#[path = "common/gate.rs"]
mod gate;

use gate::{GATES, Gated};

/// The value that holds the merge at the gate.
const HOLD: u64 = u64::MAX;
type Value = Gated<0, HOLD>;

/// Threads of this process named like the map's merge thread (Linux: the
/// name is cut to 15 bytes in /proc).
fn merge_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "memkv-hybrid-me")
        .count()
}

/// Polls `done` every millisecond until it holds or `timeout` passes;
/// whether it held.
fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs threads")]
fn drop_during_a_merge_joins_the_thread() {
    let Some(me) = gate::thread_id().filter(|_| std::path::Path::new("/proc/self/task").exists())
    else {
        eprintln!("no /proc: skipped");
        return;
    };
    let gate = &GATES[0];
    assert_eq!(merge_threads(), 0);
    let map: HybridMap<Value> = HybridConfig::new().manual().build();
    for i in 0..50_000u64 {
        map.insert(format!("usr/share/doc/pkg{i:06}/copyright"), Gated(i));
    }
    assert_eq!(merge_threads(), 0, "no thread before the first merge");
    // A merge that completes: its thread exits when no other is waiting.
    map.merge_in_background();
    assert!(
        wait_for(Duration::from_secs(20), || map.stats().merges > 0
            && merge_threads() == 0),
        "the merge thread did not exit"
    );
    assert!(!map.is_merging());
    for i in 0..50_000u64 {
        map.insert(format!("usr/share/man/man1/cmd{i:06}.1.gz"), Gated(i));
    }
    // Its value holds the next merge at the gate after the new part's first
    // 10,001 keys, so the merge is running (for sure, whatever the
    // scheduling) with 90,000 keys still to build, and is past the part's
    // first 4,096: a merge that checked only there would go on to the end.
    map.insert("usr/share/doc/pkg010000/held", Gated(HOLD));
    map.merge_in_background();
    gate.wait_reached(Duration::from_secs(20));
    let stats = map.stats();
    assert!(stats.merging && map.is_merging(), "{stats:?}");
    assert_eq!((stats.merges, stats.sealed_deltas), (1, 1), "{stats:?}");
    assert_eq!(merge_threads(), 1);
    // The map's memory counts every layer, and the part being built (past
    // its first 4,096 keys, so its size is known). Checked at the end: a
    // failure here would leave the merge held, and the test waiting for it.
    let layers = stats.delta_bytes + stats.base_bytes + stats.building_bytes;
    let memory = map.memory_usage();
    let encoded_before = gate.encoded();
    // The gate opens once this thread is inside `drop`, asleep joining the
    // merge thread: the map has told the merge to stop by then, and the
    // merge must notice at its next check (every 4,096 keys), not build
    // the whole base first.
    let dropping = AtomicBool::new(false);
    let (elapsed, merge_ended) = thread::scope(|s| {
        s.spawn(|| {
            while !dropping.load(Ordering::SeqCst) {
                thread::yield_now();
            }
            let asleep = gate::wait_until_asleep(me, Duration::from_secs(20));
            gate.open();
            assert!(asleep, "the dropping thread never waited for the merge");
        });
        dropping.store(true, Ordering::SeqCst);
        let started = Instant::now();
        drop(map);
        // The merge thread can only have ended past the gate.
        (started.elapsed(), gate.is_open())
    });
    let encoded = gate.encoded() - encoded_before;
    // `join` returns once the thread has run its last instruction, but the
    // kernel lists it in /proc a moment longer (it clears the thread id
    // before it reaps the task), so the task is given a moment to go; it
    // must not encode anything meanwhile.
    wait_for(Duration::from_secs(5), || merge_threads() == 0);
    println!(
        "drop during a merge of 100,001 keys took {elapsed:?}; the merge encoded {encoded} \
         values after it was told to stop"
    );
    assert!(merge_ended, "drop returned before the merge thread ended");
    assert_eq!(merge_threads(), 0, "the merge thread outlived the map");
    assert_eq!(
        gate.encoded() - encoded_before,
        encoded,
        "the merge thread went on after drop returned"
    );
    assert!(
        encoded <= 4096,
        "the merge went on for {encoded} values after the map was dropped"
    );
    assert!(stats.building_bytes > 0, "{stats:?}");
    assert!(memory >= layers, "{memory} B, layers {stats:?}");
}
