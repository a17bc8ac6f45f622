//! Where instances come from: procedural generation (Rhai) and datasets.

pub mod dataset;
pub mod generate;
pub mod rng;
