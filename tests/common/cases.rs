//! Case counts for properties that need more (or fewer) cases than
//! proptest's default, which still follow `PROPTEST_CASES`.

use proptest::test_runner::Config;

/// `cases` where proptest runs its default of 256 cases, scaled as
/// `PROPTEST_CASES` scales that default (at least one): CI lowers it where
/// each case costs more (valgrind, emulated targets), and a fixed count in
/// a config would ignore that.
pub(crate) fn scaled(cases: u32) -> u32 {
    const PROPTEST_DEFAULT: u64 = 256;
    let scaled = u64::from(cases) * u64::from(Config::default().cases) / PROPTEST_DEFAULT;
    u32::try_from(scaled).unwrap_or(u32::MAX).max(1)
}
