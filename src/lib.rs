//! memkv: memory-efficient ordered maps from byte-string keys.
//!
//! (Crate guide to be written with the layers.)

mod error;
mod fmt;

pub mod art;
pub mod frozen;
pub mod hybrid;
pub mod memtable;

pub use crate::art::FastArt;
pub use crate::error::{Error, Result};
pub use crate::frozen::{FrozenLayer, FrozenLayerBuilder, FrozenValue};
pub use crate::hybrid::{HybridConfig, HybridMap};
pub use crate::memtable::{ArtMemtable, Memtable, SkipListMemtable, VecMemtable};
