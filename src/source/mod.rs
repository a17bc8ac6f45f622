//! Where instances come from: procedural generation (Rhai, [`generate`])
//! and datasets ([`dataset`]). Both hand the compiled spec a map of instance
//! variables per index; prompts and rules come later.
//!
//! Imports go down only: `format` (the `[generate]` and `[dataset]` tables),
//! `scripting` (the Rhai engine and seeded RNG), `verify` (variable lookup),
//! `error` and `text`.

pub(crate) mod dataset;
pub(crate) mod generate;
