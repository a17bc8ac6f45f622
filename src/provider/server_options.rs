//! `[models.<name>.server]`: how the harness starts a managed model server
//! (`llamacpp`, `vllm`). Configuration only; the client layer runs the server.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ModelSetup;

/// Seconds to wait for readiness by default (20 minutes: a large model's first vLLM start).
pub(crate) const DEFAULT_READY_TIMEOUT_SECS: f64 = 1200.0;

/// How a managed server is started: `[models.<name>.server]` in harness.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerOptions {
    /// The server executable (default: found on PATH, then in the harness cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Context tokens per request slot (llama.cpp: `-c` is this times the slots;
    /// vLLM: `--max-model-len`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx_size: Option<u32>,
    /// CPU threads (llama.cpp `--threads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Parallel slots (default: the model's `concurrency` × `max_n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
    /// A Jinja chat template file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<PathBuf>,
    /// Fraction of GPU memory vLLM may take (`--gpu-memory-utilization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    /// Arguments appended after the harness's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Seconds to wait for readiness (default 1200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_timeout_secs: Option<f64>,
}

impl ServerOptions {
    /// Request slots: `parallel`, else one per request in flight and choice.
    pub fn slots(&self, setup: &ModelSetup) -> u32 {
        self.parallel.unwrap_or_else(|| {
            let in_flight = u32::try_from(setup.concurrency.max(1)).unwrap_or(u32::MAX);
            in_flight.saturating_mul(setup.max_n.max(1))
        })
    }

    /// Makes relative paths absolute against `base` (the config file's directory);
    /// a bare `binary` name (`llama-server`) stays for the OS to find on PATH.
    /// Absolute, so a resume from another directory finds the same files.
    pub fn resolve_paths(&mut self, base: &Path) {
        let absolute = |p: &mut PathBuf| {
            let joined = base.join(&*p);
            *p = std::path::absolute(&joined).unwrap_or(joined);
        };
        if let Some(p) = self.chat_template.as_mut().filter(|p| p.is_relative()) {
            absolute(p);
        }
        if let Some(p) = self
            .binary
            .as_mut()
            .filter(|p| p.is_relative() && p.components().count() > 1)
        {
            absolute(p);
        }
    }
}
