//! The size-hint check the model tests share.

/// Whether `hint`, an iterator's `size_hint()`, bounds `left`, the items
/// still to come; with `bounded`, it must give an upper bound too.
pub(crate) fn bounds(hint: (usize, Option<usize>), left: usize, bounded: bool) -> bool {
    let (least, most) = hint;
    least <= left && most.map_or(!bounded, |most| left <= most)
}
