//! The latency of one dependent memory load, by working-set size: what a
//! radix-tree lookup pays per level on this machine (see DESIGN.md, "Why
//! lookups are not 3× BTreeMap's here").
//!
//! ```sh
//! cargo run --release -p memkv-bench --example mem_latency
//! ```
//!
//! A random cycle through one 64-byte line after another; each step loads the
//! next line's index from the current one, so no two loads overlap.

use std::time::Instant;

/// One cache line; the first word holds the index of the next line to visit.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Line([u64; 8]);

fn main() {
    let steps = 20_000_000u64;
    for kib in [32usize, 256, 1024, 4096, 8192, 16384, 32768, 65536, 262144] {
        let n = kib * 1024 / 64;
        let mut order: Vec<usize> = (0..n).collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..n).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut lines = vec![Line([0; 8]); n];
        for w in 0..n {
            lines[order[w]].0[0] = order[(w + 1) % n] as u64;
        }
        let mut at = order[0];
        let start = Instant::now();
        for _ in 0..steps {
            at = lines[at].0[0] as usize;
        }
        let ns = start.elapsed().as_nanos() as f64 / steps as f64;
        println!("{kib:>8} KiB: {ns:6.1} ns per dependent load (ended at {at})");
    }
}
