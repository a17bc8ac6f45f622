//! Model providers: one request/response shape, several wire formats.
//!
//! `openai` speaks `/v1/chat/completions` (OpenAI, vLLM, llama.cpp, LiteLLM),
//! `ollama` speaks Ollama's `/api/chat`, `anthropic`, `gemini` and
//! `responses` the native APIs of Anthropic, Google and OpenAI (`native`
//! holds what they share), `replay` answers from recorded golden
//! transcripts, `exec` runs a program per request. Errors are classified so the runner knows what to retry.
//! `llamacpp` and `vllm` models are servers the harness runs itself (the
//! client layer's `managed`); once ready they are asked through the `openai`
//! client. [`ModelSetup`] is a model's whole configuration, parsed from a
//! reference (`openai:NAME@URL`) or from `harness.toml`. Each wire keeps a
//! model's reasoning apart from its answer (`reasoning_content`, `reasoning`,
//! Ollama's `thinking`, Anthropic's `thinking` blocks, Gemini's thought
//! parts, Responses summaries; `reasoning` moves an inline `<think>` block
//! out of every wire's text) with the reasoning tokens its usage reports.
//! `tokenize` asks an OpenAI-compatible server's tokenizer how it splits a
//! text, for `check`.
//!
//! Imports go down only: `prompt` (messages), `golden` (replayed
//! transcripts), `media`, `secrets`, `sandbox` (an `exec` program's input
//! file) and `text`. No cache, retries or limits here: those are the
//! client layer's.

mod anthropic;
mod anthropic_batch;
mod batch;
mod batch_setup;
mod body;
mod error;
pub(crate) mod exec;
mod gemini;
pub(crate) mod model_ref;
mod native;
mod native_wire;
mod ollama;
mod ollama_response;
mod openai;
mod openai_response;
mod openai_score;
pub(crate) mod price;
mod provider_kind;
mod rate_headers;
mod reasoning;
pub(crate) mod reasoning_setting;
pub(crate) mod replay;
mod responses;
mod retry_after;
mod sampling;
mod scrub;
mod server_options;
mod shared;
pub(crate) mod tokenize;
use scrub::scrub;
mod tool_wire;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::prompt::Message;
pub(crate) use crate::prompt::{Reasoning, Tool, ToolCall, ToolChoice};

pub(crate) use batch::{BatchApi, BatchEntry, BatchState, BatchStatus};
pub(crate) use batch_setup::{BatchConfig, BatchSetup};
pub(crate) use body::DEFAULT_MAX_RESPONSE_BYTES;
pub(crate) use error::ProviderError;
pub(crate) use error::classify;
pub(crate) use exec::{ExecCall, ExecClient, ExecOptions};
pub(crate) use model_ref::{ModelRefError, ServerOptions};
pub use model_ref::{ModelSetup, ProviderKind};
pub(crate) use native::{NativeClient, default_base_url as native_base_url};
pub use ollama::OllamaClient;
pub(crate) use ollama::base_from_env as ollama_base_from_env;
pub(crate) use openai::{OpenAiClient, default_base_url as openai_default_base_url};
pub(crate) use price::{Billed, PER_MILLION, Price, TokenPrice};
pub(crate) use rate_headers::allowance_spent;
pub(crate) use reasoning::split_think;
pub(crate) use reasoning_setting::SweepCell;
pub(crate) use replay::ReplayProvider;
pub(crate) use retry_after::parse_retry_after;
pub(crate) use sampling::{OPENAI_SAMPLING, SamplingNames};

/// The shape of answer a request asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "schema")]
pub enum OutputKind {
    /// Free text.
    Text,
    /// Any JSON object.
    Json,
    /// JSON constrained by this schema.
    JsonSchema(Value),
}

/// One chat request, provider-neutral. Made by [`ChatRequest::new`] and
/// struct update from it, so a new field has its default in one place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation, shared: an agent episode's turns and the client's
    /// copies of a request hold one history, so a turn costs its new messages.
    #[serde(
        serialize_with = "shared::serialize",
        deserialize_with = "shared::deserialize"
    )]
    pub messages: Arc<Vec<Message>>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Generation limit; every request carries one.
    pub max_tokens: u32,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sampling seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub stop: Vec<String>,
    /// Requested answer shape.
    pub format: OutputKind,
    /// Context window (Ollama `num_ctx`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_ctx: Option<u32>,
    /// Extra body fields from the model's `options.extra_body`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, Value>,
    /// For an `exec` model: the rendered command line and the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecCall>,
    /// Tools the model may call; a request without any keeps its old cache key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Whether and which tool the model must call (only with tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether several calls in one turn are allowed (only with tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The model's `tool_prefill`, when this request requires a call: the
    /// start of the assistant's turn, sent as a last assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<String>,
    /// How much the model thinks; unset keeps a request's old cache key.
    #[serde(
        default,
        skip_serializing_if = "crate::prompt::ReasoningSetting::is_empty"
    )]
    pub reasoning: crate::prompt::ReasoningSetting,
    /// Ask for the generated tokens' log-probabilities with this many
    /// alternatives each; unset keeps a request's old cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<u32>,
    /// Score continuations of a text instead of chatting (`loglikelihood`):
    /// the wire asks for the echoed prompt's log-probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<ScoreRequest>,
    /// The MCP servers behind some of `tools` (`command` and `args`, or
    /// `url`): never sent, but part of the cache key, so another server
    /// with the same tools makes other keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

/// Continuations to score after one context, each by the log-probability
/// of its tokens (lm-evaluation-harness's `loglikelihood` requests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRequest {
    /// The text the continuations follow (no chat template is applied).
    pub context: String,
    /// The continuations, each scored as `context + continuation`.
    pub continuations: Vec<String>,
}

impl ScoreRequest {
    /// The prompt of continuation `i` and the character at which its
    /// continuation starts. Trailing white space of the context moves to
    /// the continuation, as lm-eval moves it (`_encode_pair`), so the word
    /// boundary tokenizes as it would in running text.
    pub fn prompt(&self, i: usize) -> (String, usize) {
        let context = self.context.trim_end();
        let prompt = format!("{}{}", self.context, self.continuations[i]);
        (prompt, context.chars().count())
    }
}

impl ChatRequest {
    /// A request of `messages` for free text of at most `max_tokens` at
    /// temperature 0, with nothing else set: no sampling options, no tools,
    /// no extra body fields.
    pub fn new(messages: impl Into<Arc<Vec<Message>>>, max_tokens: u32) -> ChatRequest {
        ChatRequest {
            messages: messages.into(),
            temperature: 0.0,
            max_tokens,
            top_p: None,
            seed: None,
            stop: Vec::new(),
            format: OutputKind::Text,
            num_ctx: None,
            extra: serde_json::Map::new(),
            exec: None,
            tools: Vec::new(),
            tool_choice: None,
            parallel_tool_calls: None,
            prefill: None,
            reasoning: crate::prompt::ReasoningSetting::default(),
            logprobs: None,
            score: None,
            mcp_servers: Vec::new(),
        }
    }

    /// A request asking a model on its own terms (the judge, the simulated
    /// user), not a spec's: its options' sampling settings, context window and
    /// extra body, over `temperature` and `max_tokens` where they set none.
    pub(crate) fn with_options(
        options: &model_ref::ModelOptions,
        messages: Vec<Message>,
        temperature: f64,
        max_tokens: u32,
    ) -> ChatRequest {
        ChatRequest {
            temperature: options.temperature.unwrap_or(temperature),
            top_p: options.top_p,
            seed: options.seed,
            num_ctx: options.num_ctx,
            extra: options.extra_body.clone().unwrap_or_default(),
            ..ChatRequest::new(messages, options.max_tokens.unwrap_or(max_tokens))
        }
    }

    /// This request with `messages` instead of its own (an episode's next turn).
    pub(crate) fn with_messages(&self, messages: Arc<Vec<Message>>) -> ChatRequest {
        ChatRequest {
            messages,
            ..self.clone()
        }
    }

    /// The request of sample `sample`: the seed, when set, becomes `seed + sample`, so
    /// samples differ on a seeded server yet every sample reproduces (sample 0 keeps the seed).
    pub fn for_sample(&self, sample: u32) -> ChatRequest {
        let mut request = self.clone();
        request.seed = self.seed.map(|s| s.wrapping_add(u64::from(sample)));
        request
    }
}

/// The error of an image that is no longer what was loaded when its request is sent.
fn image_error(e: &crate::media::MediaError) -> ProviderError {
    ProviderError::ImageChanged(e.to_string())
}

/// Merges a request's extra fields into a wire body.
pub(crate) fn merge_extra(body: &mut Value, request: &ChatRequest) {
    if let Some(map) = body.as_object_mut() {
        for (k, v) in &request.extra {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub tokens_in: Option<u64>,
    /// Generated tokens.
    pub tokens_out: Option<u64>,
    /// Of the prompt tokens, those the provider read from its prompt cache
    /// (OpenAI's `prompt_tokens_details.cached_tokens`), billed at `cached_input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_cached: Option<u64>,
    /// Of the generated tokens, those spent reasoning (OpenAI's
    /// `completion_tokens_details.reasoning_tokens`); unknown where the wire
    /// does not say (Ollama), never estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_reasoning: Option<u64>,
}

/// One answer from a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The generated text: the answer, without the reasoning.
    pub text: String,
    /// What the model reasoned before answering, kept apart from `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Token counts.
    pub usage: Usage,
    /// Why generation stopped (`stop`, `length`, ...), when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Set when this answer was one of several choices of one request (OpenAI `n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedUsage>,
    /// Which model the server says answered, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<ServedBy>,
    /// The tools the model called, in order; names as the spec wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::prompt::ToolCall>,
    /// The generated tokens' log-probabilities, or the scored
    /// continuations, when the request asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Box<crate::prompt::Logprobs>>,
    /// The response's rate-limit headers said the allowance is spent (see
    /// [`rate_headers`]): an adaptive concurrency slows down as on a 429.
    /// About the server at that moment, not the answer: never stored.
    #[serde(skip)]
    pub allowance_spent: bool,
}

impl Completion {
    /// An answer of `text` alone with its token counts: no reasoning, calls,
    /// log-probabilities or server details, which a caller adds by name.
    pub fn new(text: impl Into<String>, usage: Usage) -> Completion {
        Completion {
            text: text.into(),
            usage,
            ..Completion::default()
        }
    }
}

/// The model identity a server reports with an answer: the response's `model`
/// field and, where present, its `system_fingerprint` (the backend build).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedBy {
    /// The response's `model` field.
    pub model: String,
    /// The response's `system_fingerprint`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl std::fmt::Display for ServedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.fingerprint {
            Some(fp) => write!(f, "`{}` ({fp})", self.model),
            None => write!(f, "`{}`", self.model),
        }
    }
}

/// Usage of a request that returned several choices. Servers disagree on what
/// `completion_tokens` then counts (OpenAI: all choices; llama-server: one), so
/// no per-choice output count is invented: `usage.tokens_out` stays unset and
/// the request's own figure is kept here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedUsage {
    /// Choices the request returned.
    pub choices: u32,
    /// The `completion_tokens` the server reported for the whole request.
    pub tokens_out: Option<u64>,
}

/// A ready client for one configured model.
pub(crate) enum Provider {
    /// OpenAI-compatible server.
    OpenAi(OpenAiClient),
    /// Ollama server.
    Ollama(OllamaClient),
    /// Recorded transcripts.
    Replay(ReplayProvider),
    /// A program run per request.
    Exec(ExecClient),
    /// Anthropic's, Google's or OpenAI's own API.
    Native(NativeClient),
}

/// Identifies which instance and sample a request is for (replay and logging).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestKey<'a> {
    /// The spec id.
    pub spec: &'a str,
    /// Instance index.
    pub instance: u64,
    /// Sample index.
    pub sample: u32,
    /// For a judge's request: the judged rule's name and the judge sample.
    pub judge: Option<(&'a str, u32)>,
    /// In an agent episode, the model's turn (0 for the first request), or
    /// with `user` the simulated user's turn (0 for its first answer).
    pub turn: u32,
    /// A simulated user's turn (`[agent.user]`), numbered apart from the model's.
    pub user: bool,
}

impl Provider {
    /// Sends one request.
    pub(crate) async fn complete(
        &self,
        request: &ChatRequest,
        key: RequestKey<'_>,
    ) -> Result<Completion, ProviderError> {
        let result = match (self, &request.score) {
            (Provider::Replay(r), _) => r.complete(key),
            (Provider::OpenAi(c), Some(score)) => {
                openai_score::check_score(score)?;
                c.score(request).await
            }
            (_, Some(_)) => Err(ProviderError::NoPromptLogprobs(format!(
                "the {} wire cannot score continuations: `loglikelihood` needs an \
                 OpenAI-compatible `/v1/completions` that echoes the prompt's \
                 log-probabilities (llama-cpp-python's server, vLLM)",
                self.wire_name()
            ))),
            (Provider::OpenAi(c), None) => c.complete(request).await,
            (Provider::Ollama(c), None) => c.complete(request).await,
            (Provider::Exec(c), None) => c.complete(request).await,
            (Provider::Native(c), None) => c.complete(request).await,
        };
        let mut completion = scrub(result.map(|c| vec![c]))?.remove(0);
        // A replayed answer is kept as it was recorded.
        if self.is_remote() {
            completion.separate_reasoning();
            if request.logprobs.is_some() && completion.logprobs.is_none() {
                return Err(ProviderError::NoLogprobs(format!(
                    "the request asked for log-probabilities (`logprobs`) and the {} \
                     answer carried none: this server or wire does not return them",
                    self.wire_name()
                )));
            }
        }
        tool_wire::settle_calls(&mut completion, key.turn);
        Ok(completion)
    }

    /// Whether several samples can be asked in one request (OpenAI's `n`, Gemini's).
    pub(crate) fn supports_n(&self) -> bool {
        matches!(self, Provider::OpenAi(_)) || matches!(self, Provider::Native(c) if c.supports_n())
    }

    /// Sends one request for `n` answers; providers without `n` get a config error.
    pub(crate) async fn complete_n(
        &self,
        request: &ChatRequest,
        n: u32,
    ) -> Result<Vec<Completion>, ProviderError> {
        let mut completions = scrub(match self {
            Provider::OpenAi(c) => c.complete_n(request, n).await,
            Provider::Native(c) => c.complete_n(request, n).await,
            _ => Err(ProviderError::Config(
                "this provider cannot return several choices per request".into(),
            )),
        })?;
        for c in &mut completions {
            c.separate_reasoning();
            tool_wire::settle_calls(c, 0);
        }
        Ok(completions)
    }

    /// The wire's name, for errors.
    fn wire_name(&self) -> &'static str {
        match self {
            Provider::OpenAi(_) => "OpenAI-compatible",
            Provider::Ollama(_) => "Ollama",
            Provider::Replay(_) => "replay",
            Provider::Exec(_) => "exec",
            Provider::Native(c) => c.wire_name(),
        }
    }

    /// Whether answers come from the network (and so belong in the cache).
    pub(crate) fn is_remote(&self) -> bool {
        !matches!(self, Provider::Replay(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_body_fields_reach_the_wire() {
        let mut request = ChatRequest::new(Vec::new(), 8);
        request
            .extra
            .insert("cache_prompt".into(), Value::Bool(false));
        let mut body = serde_json::json!({"model": "m"});
        merge_extra(&mut body, &request);
        assert_eq!(body["cache_prompt"], Value::Bool(false));
    }
}
