//! Ollama's answers, streamed or not: each NDJSON chunk's content,
//! `thinking` (a thinking model's reasoning, apart from the content) and
//! tool calls gathered in order, then the last chunk's usage and
//! `done_reason`. Ollama counts no reasoning tokens apart.

use serde::Deserialize;

use super::openai_response::{WireToken, read_tokens};
use super::tool_wire::{WireCall, WireNames};
use super::{Completion, ProviderError, Reasoning, Usage};

#[derive(Deserialize, Default)]
pub(super) struct ChatChunk {
    #[serde(default)]
    message: Option<ChunkMessage>,
    #[serde(default)]
    pub(super) done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    model: Option<String>,
    /// With `logprobs: true` (Ollama 0.12.11+): the chunk's generated tokens.
    #[serde(default)]
    logprobs: Option<Vec<WireToken>>,
}

#[derive(Deserialize, Default)]
struct ChunkMessage {
    #[serde(default)]
    content: String,
    /// What a thinking model reasoned (Ollama 0.9+), apart from `content`.
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

/// What the chunks so far said: the text, the reasoning and the calls, in order.
#[derive(Default)]
pub(super) struct Answer {
    text: String,
    thinking: String,
    calls: Vec<WireCall>,
    /// The chunks' tokens, in order; none until a chunk carries a list.
    logprobs: Option<Vec<WireToken>>,
}

impl Answer {
    /// Takes in one chunk's message.
    pub(super) fn add(&mut self, chunk: &mut ChatChunk) {
        if let Some(message) = chunk.message.take() {
            self.text.push_str(&message.content);
            self.thinking.push_str(&message.thinking);
            self.calls.extend(message.tool_calls.unwrap_or_default());
        }
        if let Some(tokens) = chunk.logprobs.take() {
            self.logprobs.get_or_insert_default().extend(tokens);
        }
    }
}

pub(super) fn parse_chunk(bytes: &[u8]) -> Result<ChatChunk, ProviderError> {
    let chunk: ChatChunk = serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })?;
    if let Some(error) = &chunk.error {
        return Err(ProviderError::Malformed(format!(
            "server error in stream: {error}"
        )));
    }
    Ok(chunk)
}

pub(super) fn finish(
    answer: Answer,
    last: ChatChunk,
    names: &WireNames,
) -> Result<Completion, ProviderError> {
    if !last.done {
        return Err(ProviderError::Malformed(
            "the response is not marked done".into(),
        ));
    }
    Ok(Completion {
        logprobs: read_tokens(answer.logprobs),
        allowance_spent: false,
        text: answer.text,
        reasoning: Reasoning::of(answer.thinking),
        // Ollama counts no reasoning tokens apart: `tokens_reasoning` stays unknown.
        usage: Usage {
            tokens_in: last.prompt_eval_count,
            tokens_out: last.eval_count,
            tokens_cached: None,
            tokens_reasoning: None,
        },
        finish_reason: last.done_reason,
        shared: None,
        served: last
            .model
            .filter(|m| !m.is_empty())
            .map(|model| super::ServedBy {
                model,
                fingerprint: None,
            }),
        tool_calls: answer
            .calls
            .into_iter()
            .map(|c| c.into_call(names))
            .collect(),
    })
}
