//! Where instances come from: procedural generation (Rhai) today, datasets next.

pub mod generate;
pub mod rng;
