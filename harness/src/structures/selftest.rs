//! Structures that misbehave on purpose, so that the integration tests can
//! check how the harness reports a panic, a crash and wrong results. Hidden
//! from `--list` and the default set.

use super::{BuildInput, Structure, btreemap::BTree};

/// Panics in the first lookup.
pub(crate) const PANIC: u8 = 0;
/// Aborts the process (no unwinding, no record from the child).
pub(crate) const ABORT: u8 = 1;
/// Answers every tenth lookup wrong (batched too), skips every tenth
/// entry when read in order, counts one entry too few, and says of every
/// tenth key that its insert replaced a value (in the build, and when a
/// value is replaced, by answering the old value wrong).
pub(crate) const WRONG: u8 = 2;

/// The `btreemap` adapter, failing as `MODE` says.
#[derive(Debug)]
pub(crate) struct Faulty<const MODE: u8>(BTree);

impl<const MODE: u8> Structure for Faulty<MODE> {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let map = BTree::build(input)?;
        if MODE == WRONG {
            for (key, _) in input.entries().filter(|(_, v)| v % 10 == 0) {
                input.answers.said_present(key);
            }
        }
        Ok(Faulty(map))
    }

    const REPLACES: bool = MODE == WRONG;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let old = self.0.replace(key, value)?;
        Some(if old % 10 == 0 { old + 1 } else { old })
    }

    // The default batched lookup (one `get` per key) and batched build (the
    // plain one), read back through the faulty `for_each`.
    const BATCHED: bool = MODE == WRONG;
    const BATCHED_BUILD: bool = MODE == WRONG;

    fn len(&self) -> Option<usize> {
        let len = self.0.len()?;
        Some(if MODE == WRONG { len - 1 } else { len })
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        match MODE {
            PANIC => panic!("selftest: deliberate panic in get"),
            ABORT => std::process::abort(),
            _ => self.0.get(key).map(|v| if v % 10 == 0 { v + 1 } else { v }),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        self.0.for_each(|k, v| {
            if v % 10 != 0 {
                f(k, v)
            }
        });
    }

    fn prefix(&self, prefix: &[u8], f: impl FnMut(&[u8], u64)) {
        self.0.prefix(prefix, f);
    }

    fn range(&self, start: &[u8], end: &[u8], f: impl FnMut(&[u8], u64)) {
        self.0.range(start, end, f);
    }
}
