//! Which wire a model speaks, as `provider = "..."` names it.

use serde::{Deserialize, Serialize};

/// Which wire format a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible `/v1/chat/completions`.
    OpenAi,
    /// Ollama `/api/chat`.
    Ollama,
    /// Recorded golden transcripts.
    Replay,
    /// A llama.cpp `llama-server` the harness starts and stops itself.
    LlamaCpp,
    /// A vLLM server the harness starts and stops itself.
    Vllm,
    /// A program run once per request (`command`).
    Exec,
    /// Anthropic's Messages API, `/v1/messages`.
    Anthropic,
    /// Google's Gemini API, `models/{model}:generateContent`.
    Gemini,
    /// OpenAI's Responses API, `/v1/responses`.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl ProviderKind {
    /// The prefix used in model references.
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Replay => "replay",
            ProviderKind::LlamaCpp => "llamacpp",
            ProviderKind::Vllm => "vllm",
            ProviderKind::Exec => "exec",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenAiResponses => "openai-responses",
        }
    }

    /// Whether the harness runs the server itself (`llamacpp`, `vllm`).
    pub fn is_managed(self) -> bool {
        matches!(self, ProviderKind::LlamaCpp | ProviderKind::Vllm)
    }
}
