//! Many lookups under way at once, so that their cache misses overlap.
//!
//! A lookup in a structure much larger than the caches is a chain of cache
//! misses, each address read from the block before. The misses of different
//! lookups do not depend on each other: [`interleave`] keeps up to [`LANES`]
//! lookups under way, and each turn takes one lookup forward until it must
//! wait for memory (having prefetched what it reads next), then moves on to
//! the next lookup. A lane whose lookup ends takes the next one.

/// Lookups under way at once: enough to cover a miss to memory with the
/// steps of the others, few enough that their prefetched blocks stay in the
/// L1 cache until used (8 lanes did less on the Debian paths, 32 no more).
pub(crate) const LANES: usize = 16;

/// Runs lookups `0..count`, each starting in state `start`. `advance(i,
/// state)` takes lookup `i` forward: `None` when it waits for memory (it
/// prefetched what it reads next), `Some(result)` when it is over, which
/// `found(i, result)` receives. Results come in no particular order.
#[inline]
pub(crate) fn interleave<S: Copy, R>(
    count: usize,
    start: S,
    mut advance: impl FnMut(usize, &mut S) -> Option<R>,
    mut found: impl FnMut(usize, R),
) {
    let mut lanes = [(0, start); LANES];
    let mut active = count.min(LANES);
    for (index, lane) in lanes[..active].iter_mut().enumerate() {
        lane.0 = index;
    }
    let mut next = active;
    while active > 0 {
        let mut i = 0;
        while i < active {
            let (index, state) = &mut lanes[i];
            let index = *index;
            let Some(result) = advance(index, state) else {
                i += 1;
                continue;
            };
            found(index, result);
            if next < count {
                lanes[i] = (next, start);
                next += 1;
                i += 1;
            } else {
                // The last lane takes this one's place.
                active -= 1;
                lanes[i] = lanes[active];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `count` lookups of `steps(i)` steps each; returns the lookups
    /// in the order they were advanced, and the order they were found.
    fn run(count: usize, steps: impl Fn(usize) -> usize) -> (Vec<usize>, Vec<usize>) {
        let (mut advanced, mut found) = (Vec::new(), Vec::new());
        interleave(
            count,
            0,
            |i, taken: &mut usize| {
                advanced.push(i);
                *taken += 1;
                (*taken == steps(i)).then_some(i)
            },
            |i, result| {
                assert_eq!(i, result);
                found.push(i);
            },
        );
        (advanced, found)
    }

    #[test]
    fn lookups_take_turns() {
        let (advanced, found) = run(3, |_| 3);
        // Each lookup goes one step per turn; one that ends hands its lane
        // to the last.
        assert_eq!(advanced, [0, 1, 2, 0, 1, 2, 0, 2, 1]);
        assert_eq!(found, [0, 2, 1]);
    }

    #[test]
    fn a_lane_whose_lookup_ends_takes_the_next() {
        let count = 3 * LANES + 5;
        let (advanced, mut found) = run(count, |i| 1 + i % 4);
        assert_eq!(advanced[..LANES], (0..LANES).collect::<Vec<_>>());
        let steps: usize = (0..count).map(|i| 1 + i % 4).sum();
        assert_eq!(advanced.len(), steps, "a step too many or too few");
        found.sort_unstable();
        assert_eq!(found, (0..count).collect::<Vec<_>>());
        // The lookup that takes a lane waits for the lane's next turn.
        let (advanced, _) = run(LANES + 1, |i| if i == 0 { 1 } else { 2 });
        assert_eq!(advanced[..=LANES], (0..=LANES).collect::<Vec<_>>());
        let (advanced, found) = run(0, |_| 1);
        assert!(advanced.is_empty() && found.is_empty());
    }
}
