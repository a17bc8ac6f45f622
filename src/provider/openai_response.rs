//! The OpenAI-compatible wire's answers: each choice's text, its reasoning
//! (`reasoning_content` from DeepSeek, llama-server and vLLM, `reasoning`
//! from OpenRouter and newer vLLM), its tool calls under the spec's names,
//! and usage with the cached prompt tokens and the reasoning tokens
//! (`completion_tokens_details.reasoning_tokens`).

use serde::Deserialize;

use super::tool_wire::{WireCall, WireNames};
use super::{Completion, ProviderError, Reasoning, Usage};
use crate::prompt::{Logprobs, TokenLogprob};

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    system_fingerprint: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
    /// With `logprobs: true`: `{content: [{token, logprob, top_logprobs}]}`.
    #[serde(default)]
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct ChoiceLogprobs {
    #[serde(default)]
    content: Option<Vec<WireToken>>,
}

/// One generated token as OpenAI, vLLM and llama-server list it.
#[derive(Deserialize)]
pub(super) struct WireToken {
    token: String,
    logprob: Option<f64>,
    #[serde(default)]
    top_logprobs: Vec<WireAlternative>,
}

#[derive(Deserialize)]
struct WireAlternative {
    token: String,
    logprob: Option<f64>,
}

/// The generated tokens of a choice's (or an Ollama message's) `logprobs`
/// list, bounded; `None` when the answer carried no list at all.
pub(super) fn read_tokens(tokens: Option<Vec<WireToken>>) -> Option<Box<Logprobs>> {
    let tokens = tokens?
        .into_iter()
        .take(crate::prompt::MAX_LOGPROB_TOKENS)
        .map(|t| {
            let top = t
                .top_logprobs
                .into_iter()
                .map(|a| (a.token, a.logprob.unwrap_or(f64::NEG_INFINITY)))
                .collect();
            TokenLogprob::bounded(&t.token, t.logprob.unwrap_or(f64::NEG_INFINITY), top)
        })
        .collect();
    Some(Box::new(Logprobs {
        tokens,
        continuations: Vec::new(),
    }))
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek, llama-server (`--reasoning-format deepseek`) and vLLM.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, and vLLM's newer name for the same field.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The answers of a response body, one per choice, calls under the spec's names.
pub(super) fn completions(
    bytes: &[u8],
    names: &WireNames,
) -> Result<Vec<Completion>, ProviderError> {
    let parsed: ChatResponse = serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })?;
    if parsed.choices.is_empty() {
        return Err(ProviderError::Malformed(
            "the response has no choices".into(),
        ));
    }
    let usage = parsed.usage.map_or_else(Usage::default, |u| Usage {
        tokens_in: u.prompt_tokens,
        tokens_out: u.completion_tokens,
        tokens_cached: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        tokens_reasoning: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
    });
    let served = parsed
        .model
        .filter(|m| !m.is_empty())
        .map(|model| super::ServedBy {
            model,
            fingerprint: parsed.system_fingerprint.filter(|f| !f.is_empty()),
        });
    let count = parsed.choices.len() as u32;
    // With several choices the server's output count is not per choice (OpenAI sums them,
    // llama-server counts one): keep the request's figure aside instead of guessing.
    let shared = (count > 1).then_some(super::SharedUsage {
        choices: count,
        tokens_out: usage.tokens_out,
    });
    Ok(parsed
        .choices
        .into_iter()
        .map(|c| Completion {
            logprobs: read_tokens(c.logprobs.and_then(|l| l.content)),
            allowance_spent: false,
            tool_calls: c
                .message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|call| call.into_call(names))
                .collect(),
            text: c.message.content.unwrap_or_default(),
            reasoning: c
                .message
                .reasoning_content
                .or(c.message.reasoning)
                .and_then(Reasoning::of),
            usage: Usage {
                tokens_in: usage.tokens_in,
                // Per-choice counts are unknown with several choices (see `shared`).
                tokens_out: usage.tokens_out.filter(|_| shared.is_none()),
                tokens_reasoning: usage.tokens_reasoning.filter(|_| shared.is_none()),
                tokens_cached: usage.tokens_cached,
            },
            finish_reason: c.finish_reason,
            shared,
            served: served.clone(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(body: serde_json::Value) -> Vec<Completion> {
        completions(body.to_string().as_bytes(), &WireNames::new(&[])).unwrap()
    }

    #[test]
    fn reasoning_comes_from_either_field_apart_from_the_content() {
        // (message, text, reasoning): `reasoning_content` wins over `reasoning`;
        // blank reasoning is none.
        let cases = [
            (
                json!({"content": "5", "reasoning_content": "2+3"}),
                "5",
                Some("2+3"),
            ),
            (
                json!({"content": "5", "reasoning": "2+3"}),
                "5",
                Some("2+3"),
            ),
            (
                json!({"content": "5", "reasoning_content": "a", "reasoning": "b"}),
                "5",
                Some("a"),
            ),
            (
                json!({"content": null, "reasoning_content": "2+"}),
                "",
                Some("2+"),
            ),
            (
                json!({"content": "5", "reasoning_content": "  "}),
                "5",
                None,
            ),
            (json!({"content": "5"}), "5", None),
        ];
        for (message, text, reasoning) in cases {
            let body = json!({"choices": [{"message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 9,
                          "completion_tokens_details": {"reasoning_tokens": 6}}});
            let c = &parse(body)[0];
            assert_eq!(c.text, text, "{message}");
            assert_eq!(c.reasoning.as_ref().map(|r| r.text.as_str()), reasoning);
            assert_eq!(
                (c.usage.tokens_out, c.usage.tokens_reasoning),
                (Some(9), Some(6))
            );
        }
    }

    #[test]
    fn several_choices_get_no_reasoning_count_each_and_no_details_none_at_all() {
        let choice = json!({"message": {"content": "5", "reasoning_content": "r"}});
        let body = json!({"choices": [choice, choice], "usage": {"prompt_tokens": 3,
            "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 6}}});
        for c in parse(body) {
            assert_eq!((c.usage.tokens_out, c.usage.tokens_reasoning), (None, None));
            assert!(c.reasoning.is_some());
        }
        let body = json!({"choices": [choice], "usage": {"completion_tokens": 9}});
        assert_eq!(parse(body)[0].usage.tokens_reasoning, None);
    }
}
