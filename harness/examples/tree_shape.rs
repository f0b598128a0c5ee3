//! The shape of the compacted radix tree over a dataset's keys: how many
//! inner nodes, their fan-out, prefix and suffix lengths, and leaf depths.
//! These numbers drove FastArt's layout (see DESIGN.md).
//!
//! ```sh
//! cargo run --release -p memkv-bench --example tree_shape -- data/debian-paths.txt
//! ```
//!
//! It works on the sorted keys alone: the inner nodes of a compacted trie
//! are the intervals of equal longest common prefix between neighbours.

use std::io::BufRead;

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "data/debian-paths-100k.txt".into());
    let file = std::io::BufReader::new(std::fs::File::open(&path)?);
    let mut keys: Vec<Vec<u8>> = file.split(b'\n').collect::<Result<_, _>>()?;
    keys.retain(|k| !k.is_empty());
    keys.sort_unstable();
    keys.dedup();
    let n = keys.len();
    if n < 2 {
        eprintln!("{path}: need at least two distinct keys");
        std::process::exit(1);
    }
    let lcp = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    // lcp[i] between keys i-1 and i; 0 at both ends.
    let mut l = vec![0usize; n + 1];
    for i in 1..n {
        l[i] = lcp(&keys[i - 1], &keys[i]);
    }

    // Inner nodes: (string depth, first key, one past the last key, parent depth).
    let mut nodes: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    for (i, &d) in l.iter().enumerate().skip(1) {
        let mut lo = i - 1;
        while stack.last().expect("root").0 > d {
            let (depth, start) = stack.pop().expect("node");
            let parent = stack.last().expect("root").0.max(d);
            nodes.push((depth, start, i, parent));
            lo = start;
        }
        if stack.last().expect("root").0 < d {
            stack.push((d, lo));
        }
    }
    while let Some((depth, start)) = stack.pop() {
        let parent = stack.last().map_or(0, |p| p.0);
        nodes.push((depth, start, n, parent));
    }

    let mut fanout = [0usize; 5];
    let mut prefix_sum = 0usize;
    // Depth (inner nodes above) per leaf, and ancestors with small subtrees,
    // by difference arrays over the key positions each node covers.
    let mut depth = vec![0i64; n + 1];
    let small = [16usize, 64, 256];
    let mut shallow = vec![vec![0i64; n + 1]; small.len()];
    for &(d, lo, hi, parent) in &nodes {
        let children = (lo + 1..hi).filter(|&i| l[i] == d).count() + 1;
        fanout[match children {
            0..=2 => 0,
            3..=4 => 1,
            5..=16 => 2,
            17..=48 => 3,
            _ => 4,
        }] += 1;
        prefix_sum += if d == 0 { 0 } else { d - parent - 1 };
        depth[lo] += 1;
        depth[hi] -= 1;
        for (j, &k) in small.iter().enumerate() {
            if hi - lo <= k {
                shallow[j][lo] += 1;
                shallow[j][hi] -= 1;
            }
        }
    }
    let mean = |diff: &[i64]| {
        let (mut run, mut sum) = (0i64, 0i64);
        for &x in &diff[..n] {
            run += x;
            sum += run;
        }
        sum as f64 / n as f64
    };
    let suffix_sum: usize = (0..n)
        .map(|i| {
            let d = l[i].max(l[i + 1]);
            keys[i].len().saturating_sub(d + 1)
        })
        .sum();
    let bytes: usize = keys.iter().map(Vec::len).sum();

    println!(
        "{path}: {n} distinct keys, {:.2} bytes on average",
        bytes as f64 / n as f64
    );
    println!(
        "mean common prefix with the previous key: {:.2} bytes",
        l[1..n].iter().sum::<usize>() as f64 / (n - 1) as f64
    );
    println!(
        "inner nodes: {} ({:.3} per key)",
        nodes.len(),
        nodes.len() as f64 / n as f64
    );
    println!(
        "children per node: <=2: {}, 3-4: {}, 5-16: {}, 17-48: {}, 49+: {}",
        fanout[0], fanout[1], fanout[2], fanout[3], fanout[4]
    );
    println!(
        "mean compressed prefix: {:.2} bytes",
        prefix_sum as f64 / nodes.len() as f64
    );
    println!(
        "mean key bytes below a leaf's parent: {:.2}",
        suffix_sum as f64 / n as f64
    );
    println!("mean inner nodes above a leaf: {:.2}", mean(&depth));
    for (j, &k) in small.iter().enumerate() {
        println!(
            "  of which in subtrees of <= {k} keys: {:.2}",
            mean(&shallow[j])
        );
    }
    Ok(())
}
