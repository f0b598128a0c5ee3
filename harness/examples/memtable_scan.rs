//! Full scans of active memtables: `ArtMemtable` and `ShardedArtMemtable`
//! against `SkipListMemtable`, all filled with the same entries in one
//! process and scanned in alternating rounds, so the ratios are not swayed
//! by this machine's drift from one process to the next.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example memtable_scan                      # 600 k entries, random order
//! cargo run --release -p memkv-bench --example memtable_scan -- --order sequential
//! cargo run --release -p memkv-bench --example memtable_scan -- --keys 3000000
//! ```
//!
//! The harness's memtable mode times the scan of a *frozen* memtable (a
//! flush); an engine also scans the active one, for range reads, through
//! the cursor that copies batches of entries under the memtable's lock.
//! The entries are those of the harness's `lsm` workload: 16-byte keys
//! (a 4-byte table id and 12 pseudo-random bytes, or a counter for
//! `--order sequential`) and 100-byte values, one version each. Every
//! entry is checked: the keys in order, each with the value
//! and sequence number it was inserted with, in one untimed scan of each;
//! the timed scans read what the harness's flush reads (the key, the
//! sequence number, the value's first and last byte) and are checked by
//! their count and a sum of those.

use std::time::Instant;

use clap::{Parser, ValueEnum};
use memkv::memtable::{
    ArtMemtable, EntryCursor, MAX_SEQNO, Memtable, MemtableRead, ShardedArtMemtable,
    SkipListMemtable, ValueKind,
};

/// The order the entries are inserted in.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Order {
    Random,
    Sequential,
}

/// Scans of active memtables, alternating (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// Entries in each memtable.
    #[arg(long, default_value_t = 600_000, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// The order the entries are inserted in.
    #[arg(long, value_enum, default_value_t = Order::Random)]
    order: Order,
    /// Scans of each memtable, alternating.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
}

/// The value of the entry with sequence number `seqno`: 100 bytes that
/// differ from one entry to the next.
fn value(seqno: u64) -> [u8; 100] {
    let mut v = [0u8; 100];
    for (i, chunk) in v.chunks_mut(8).enumerate() {
        let word = seqno
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(i as u32 * 7);
        chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
    }
    v
}

/// The keys in insertion order.
fn keys(n: usize, order: Order) -> Vec<[u8; 16]> {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n as u64)
        .map(|i| {
            let mut key = [0u8; 16];
            key[..4].copy_from_slice(&7u32.to_be_bytes());
            match order {
                Order::Sequential => key[8..].copy_from_slice(&i.to_be_bytes()),
                Order::Random => {
                    for byte in &mut key[4..] {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        *byte = state as u8;
                    }
                }
            }
            key
        })
        .collect()
}

/// Scans `mem` whole and checks every entry against `expected` (keys in
/// order, each with its sequence number); the number of entries wrong.
fn check<M: MemtableRead>(mem: &M, expected: &[([u8; 16], u64)]) -> usize {
    let mut cursor = mem.range(.., MAX_SEQNO);
    let mut wrong = 0;
    let mut want = expected.iter();
    while let Some(entry) = cursor.next_entry() {
        let ok = want.next().is_some_and(|(key, seqno)| {
            entry.user_key == key
                && entry.seqno == *seqno
                && entry.kind == ValueKind::Value
                && entry.value == value(*seqno)
        });
        wrong += usize::from(!ok);
    }
    wrong + want.count()
}

/// What a timed scan reads of each entry, as the harness's flush does: the
/// key's last byte, the sequence number, the value's first and last byte.
fn digest(key: &[u8], seqno: u64, value: &[u8]) -> u64 {
    u64::from(key[key.len() - 1]) + seqno + u64::from(value[0]) + u64::from(value[value.len() - 1])
}

/// Scans `mem` whole, reading each entry as [`digest`] does; the entries
/// and the sum of their digests.
fn scan<M: MemtableRead>(mem: &M) -> (usize, u64) {
    let mut cursor = mem.range(.., MAX_SEQNO);
    let (mut entries, mut sum) = (0, 0u64);
    while let Some(entry) = cursor.next_entry() {
        entries += 1;
        sum = sum.wrapping_add(digest(entry.user_key, entry.seqno, entry.value));
    }
    (entries, sum)
}

fn main() {
    let args = Args::parse();
    let n = usize::try_from(args.keys).expect("a key count that fits in memory");
    let keys = keys(n, args.order);
    let art = ArtMemtable::default();
    let sharded = ShardedArtMemtable::default();
    let skip_list = SkipListMemtable::default();
    for (i, key) in keys.iter().enumerate() {
        let seqno = i as u64 + 1;
        art.insert(key, seqno, ValueKind::Value, value(seqno));
        sharded.insert(key, seqno, ValueKind::Value, value(seqno));
        skip_list.insert(key, seqno, ValueKind::Value, value(seqno));
    }
    // Duplicate random keys keep their newest version first, then the
    // older ones: the expected scan, by key and newest first.
    let mut expected: Vec<([u8; 16], u64)> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| (*key, i as u64 + 1))
        .collect();
    expected.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    println!(
        "{n} entries inserted in {:?} order into each memtable",
        args.order
    );

    // Every entry checked once, untimed; each timed scan then checked by
    // its count and digest.
    assert_eq!(check(&art, &expected), 0, "ArtMemtable scanned wrong");
    assert_eq!(
        check(&sharded, &expected),
        0,
        "ShardedArtMemtable scanned wrong"
    );
    assert_eq!(
        check(&skip_list, &expected),
        0,
        "SkipListMemtable scanned wrong"
    );
    let want = expected.iter().fold(0u64, |sum, (key, seqno)| {
        sum.wrapping_add(digest(key, *seqno, &value(*seqno)))
    });
    let rate = |scan_one: &dyn Fn() -> (usize, u64)| {
        let start = Instant::now();
        let got = scan_one();
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(got, (expected.len(), want), "a scan read other entries");
        expected.len() as f64 / seconds
    };
    let (mut art_ratios, mut sharded_ratios) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        let art_rate = rate(&|| scan(&art));
        let sharded_rate = rate(&|| scan(&sharded));
        let skip_list_rate = rate(&|| scan(&skip_list));
        art_ratios.push(art_rate / skip_list_rate);
        sharded_ratios.push(sharded_rate / skip_list_rate);
        println!(
            "round {round}: art {:.2} M entries/s, sharded {:.2} M, skip list {:.2} M: \
             art/skip list {:.2}, sharded/skip list {:.2}",
            art_rate / 1e6,
            sharded_rate / 1e6,
            skip_list_rate / 1e6,
            art_rate / skip_list_rate,
            sharded_rate / skip_list_rate
        );
    }
    let median = |mut ratios: Vec<f64>| {
        ratios.sort_by(f64::total_cmp);
        ratios[ratios.len() / 2]
    };
    println!(
        "medians: art/skip list {:.2}, sharded/skip list {:.2} ({} entries a scan, every one checked)",
        median(art_ratios),
        median(sharded_ratios),
        expected.len()
    );
}
