//! Golden instances: `golden/<spec>/instances.jsonl`, what a spec generates
//! for its seed (variables, rendered messages, tools, expected values), one line each.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::prompt::Message;

/// One line of `golden/<spec>/instances.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GoldenInstance {
    /// Instance index.
    pub index: u64,
    /// Instance id.
    pub id: String,
    /// Generated variables.
    pub vars: Map<String, Value>,
    /// Rendered messages.
    pub messages: Vec<Message>,
    /// The tools sent with the messages; absent when none, so older files still compare.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<crate::prompt::Tool>,
    /// Each rule's expected value.
    pub expected: Map<String, Value>,
}

/// The golden instances file of a spec.
pub(crate) fn instances_path(golden_dir: &Path, spec_id: &str) -> PathBuf {
    golden_dir.join(spec_id).join("instances.jsonl")
}
