//! The immutable layer (in progress).
