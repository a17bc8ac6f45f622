//! `harness`: test and rank LLMs with test categories written as data.
//!
//! A category is a TOML spec: a Rhai script makes instances, minijinja
//! templates render prompts, declarative rules verify answers, and golden
//! files show what changed. The binary is a thin layer over this library.

#![warn(unreachable_pub)]

mod check;
mod cli;
mod client;
mod config;
mod environ;
mod error;
mod extract;
mod failure;
mod files;
mod format;
mod golden;
mod interrupt;
mod media;
mod metrics;
mod net;
mod output;
mod progress;
mod prompt;
mod provider;
mod report;
mod run;
mod sandbox;
mod scripting;
mod secrets;
mod source;
mod spec;
mod synth;
mod text;
mod verify;
mod view;

// The public face: what the binary, the integration tests and the benches
// use, and nothing else; every module is the crate's own.

/// The command line's entry point.
pub use cli::main;

/// Checking a spec file: its schema, rules, examples and golden files.
pub use check::{CheckOptions, check_file};
/// `harness.toml`.
pub use config::Config;
/// What a check or run does with golden files, and the CI variables that make it strict.
pub use golden::{CI_VARIABLES, GoldenMode};
/// A loaded spec and the JSON Schema of spec files.
pub use spec::{Spec, schema as spec_schema, schema_text as spec_schema_text};

/// Writing the reports of a run.
pub use report::{ReportContext, ReportKind, ReportOutput, SpecInfo, write_reports};
/// The report's language, and money as the reports print it.
pub use text::{Lang, money};

/// The TLS provider the HTTP clients use, installed once.
pub use net::install_tls;
/// Asking a model directly.
pub use provider::{ChatRequest, ModelSetup, OllamaClient, ProviderKind};
/// Tokens a prompt is estimated at, when a server reports none.
pub use run::cost::prompt_tokens;

/// The Python interpreter the sandbox runs.
pub use sandbox::python::interpreter as python_interpreter;
/// Running a program in the sandbox.
pub use sandbox::{Limits, Outcome, Program, Sandbox, Termination, Warm, own_uids};
