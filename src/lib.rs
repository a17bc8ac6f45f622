//! `harness`: test and rank LLMs with test categories written as data.
//!
//! A category is a TOML spec: a Rhai script makes instances, minijinja
//! templates render prompts, declarative rules verify answers, and golden
//! files show what changed. The binary is a thin layer over this library.

pub mod check;
pub mod cli;
pub mod client;
pub mod config;
pub mod error;
pub mod extract;
pub mod files;
pub mod format;
pub mod golden;
pub mod media;
pub mod metrics;
pub mod net;
pub mod progress;
pub mod prompt;
pub mod provider;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod scripting;
pub mod secrets;
pub mod source;
pub mod spec;
pub mod synth;
pub mod text;
pub mod verify;
