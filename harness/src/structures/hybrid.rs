//! `memkv::HybridMap` — a slot for the hybrid layer, written later.
//!
//! When it lands: an adapter here, `run` = `measure::run::<Hybrid>`, and
//! `default: true` in the registry.

use crate::measure::Prepared;
use crate::record::Record;

/// Reports that the structure is not available in this build.
pub(crate) fn run(_: &Prepared, record: &mut Record) {
    record.error = Some("not yet available: memkv::HybridMap has not been written".into());
}
