//! Dropping a map stops its merge thread, even in the middle of a merge.
//! (Alone in its binary: it counts the process's merge threads.)

use std::thread;
use std::time::{Duration, Instant};

use memkv::{HybridConfig, HybridMap};

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

#[test]
fn drop_during_a_merge_joins_the_thread() {
    if !std::path::Path::new("/proc/self/task").exists() {
        eprintln!("no /proc: skipped");
        return;
    }
    assert_eq!(merge_threads(), 0);
    let map: HybridMap<u64> = HybridConfig::new().manual().build();
    for i in 0..50_000u64 {
        map.insert(format!("usr/share/doc/pkg{i:06}/copyright"), i);
    }
    assert_eq!(merge_threads(), 0, "no thread before the first merge");
    // A merge that completes: its thread exits when no other is waiting.
    map.merge_in_background();
    let deadline = Instant::now() + Duration::from_secs(20);
    while map.stats().merges == 0 || merge_threads() > 0 {
        assert!(Instant::now() < deadline, "the merge thread did not exit");
        thread::sleep(Duration::from_millis(1));
    }
    for i in 0..50_000u64 {
        map.insert(format!("usr/share/man/man1/cmd{i:06}.1.gz"), i);
    }
    // A merge that is running when the map is dropped.
    map.merge_in_background();
    while !map.stats().merging {
        assert!(
            map.stats().merges == 1,
            "the merge ended before it was seen running"
        );
        assert!(Instant::now() < deadline);
        thread::yield_now();
    }
    assert_eq!(merge_threads(), 1);
    let started = Instant::now();
    drop(map);
    println!(
        "drop during a merge of 100,000 keys took {:?}",
        started.elapsed()
    );
    assert_eq!(merge_threads(), 0, "the merge thread outlived the map");
}
