//! Scoring continuations on the OpenAI-compatible completions wire: `POST
//! {base}/completions` with `echo: true`, `logprobs` and one generated
//! token, as lm-evaluation-harness asks for `loglikelihood` (its
//! `local-completions` model). The answer echoes the prompt's tokens with
//! `text_offset` and `token_logprobs`; the continuation's tokens are those
//! from its first character on, before the generated one.
//!
//! llama-cpp-python's server and vLLM return the echoed prompt's
//! log-probabilities. llama.cpp's `llama-server` returns them for generated
//! tokens only: that is refused as [`ProviderError::NoPromptLogprobs`] at the
//! first answer, never read as a score.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::body::{self, Cap};
use super::openai::OpenAiClient;
use super::{ChatRequest, Completion, ProviderError, ScoreRequest, Usage};
use crate::prompt::{Continuation, Logprobs, TokenLogprob};

#[derive(Deserialize)]
struct ScoreResponse {
    choices: Vec<ScoreChoice>,
    #[serde(default)]
    usage: Option<ScoreUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct ScoreChoice {
    /// Which prompt of the request this answers (0 when the request sent one).
    #[serde(default)]
    index: usize,
    #[serde(default)]
    logprobs: Option<Value>,
}

#[derive(Deserialize)]
struct ScoreUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// The legacy completions `logprobs` object: parallel lists per token.
#[derive(Deserialize)]
struct EchoLogprobs {
    tokens: Vec<String>,
    text_offset: Vec<usize>,
    token_logprobs: Vec<Option<f64>>,
    #[serde(default)]
    top_logprobs: Option<Vec<Option<Map<String, Value>>>>,
}

impl OpenAiClient {
    /// Scores every continuation of `request.score`, at most `max_prompts`
    /// to a request (the completions `prompt` list), one after another so a
    /// server's prompt cache reuses the shared context, and longest first
    /// (see [`longest_first`]).
    pub(crate) async fn score(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        let Some(score) = &request.score else {
            return Err(ProviderError::Config("no continuations to score".into()));
        };
        let order = longest_first(&score.continuations);
        let prompts: Vec<(String, usize)> = order.iter().map(|&i| score.prompt(i)).collect();
        let mut scored_in_order = Vec::with_capacity(prompts.len());
        let (mut tokens_in, mut tokens_out) = (Some(0), Some(0));
        let mut served = None;
        for batch in prompts.chunks(self.max_prompts.max(1) as usize) {
            let body = self.score_body(request, batch);
            let bytes = self.post(&self.completions_endpoint, &body).await?;
            let (scored, usage, model) = read_scores(&bytes, batch)?;
            scored_in_order.extend(scored);
            tokens_in = tokens_in.zip(usage.tokens_in).map(|(a, b)| a + b);
            tokens_out = tokens_out.zip(usage.tokens_out).map(|(a, b)| a + b);
            served = served.or(model);
        }
        // Back in the choices' order.
        let mut by_choice: Vec<(usize, Continuation)> =
            order.into_iter().zip(scored_in_order).collect();
        by_choice.sort_by_key(|(i, _)| *i);
        let continuations: Vec<Continuation> = by_choice.into_iter().map(|(_, c)| c).collect();
        Ok(Completion {
            logprobs: Some(Box::new(Logprobs {
                tokens: Vec::new(),
                continuations,
            })),
            usage: Usage {
                tokens_in,
                tokens_out,
                ..Usage::default()
            },
            served: served.map(|model| super::ServedBy {
                model,
                fingerprint: None,
            }),
            ..Completion::default()
        })
    }

    /// One prompt goes as a string, as every server takes it; several as a
    /// list, which only some servers take (vLLM, OpenAI).
    fn score_body(&self, request: &ChatRequest, batch: &[(String, usize)]) -> Value {
        let prompt = match batch {
            [(one, _)] => json!(one),
            _ => json!(batch.iter().map(|(p, _)| p).collect::<Vec<_>>()),
        };
        let mut body = json!({
            "model": self.model,
            "prompt": prompt,
            "echo": true,
            "logprobs": request.logprobs.unwrap_or(1).max(1),
            "max_tokens": 1,
            "temperature": 0,
        });
        if let Some(seed) = request.seed {
            body["seed"] = json!(seed);
        }
        super::merge_extra(&mut body, request);
        body
    }

    /// Posts `body` to `endpoint` and reads the answer's bytes (bounded).
    async fn post(&self, endpoint: &str, body: &Value) -> Result<Vec<u8>, ProviderError> {
        let response = self.post_json(endpoint, body).await?;
        let cap = Cap::new(self.max_response_bytes, self.timeout);
        if !response.status().is_success() {
            return Err(body::error_status(response, cap).await);
        }
        body::read(response, cap).await
    }
}

/// The continuations' indexes, longest (in characters) first, ties in order,
/// as lm-eval orders its requests. A server that reuses the previous
/// prompt's cache evaluates only what follows the common prefix, and a
/// token evaluated alone gets a slightly different row than in a batch
/// (llama-cpp-python: −5.8266 against −5.8370 for `" 11"` asked right after
/// `" 1"`). Asked shortest first, a continuation that extends another would
/// be scored on that row; longest first, no continuation follows one it
/// extends, so its numbers are those of a fresh evaluation.
fn longest_first(continuations: &[String]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..continuations.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(continuations[i].chars().count()));
    order
}

/// Each prompt's continuation (prompt, first character of its continuation)
/// scored by an echo answer's choice of the same index; the request's usage
/// and the model the server named.
fn read_scores(
    bytes: &[u8],
    batch: &[(String, usize)],
) -> Result<(Vec<Continuation>, Usage, Option<String>), ProviderError> {
    let parsed: ScoreResponse = serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })?;
    let usage = parsed.usage.map_or_else(Usage::default, |u| Usage {
        tokens_in: u.prompt_tokens,
        tokens_out: u.completion_tokens,
        ..Usage::default()
    });
    let mut answers: Vec<Option<Value>> = vec![None; batch.len()];
    let mut seen = vec![false; batch.len()];
    for choice in parsed.choices {
        let Some(slot) = seen.get_mut(choice.index) else {
            return Err(ProviderError::Malformed(format!(
                "a choice answers prompt {} of a request that sent {}",
                choice.index,
                batch.len()
            )));
        };
        if std::mem::replace(slot, true) {
            return Err(ProviderError::Malformed(format!(
                "two choices answer prompt {}",
                choice.index
            )));
        }
        answers[choice.index] = choice.logprobs;
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(ProviderError::Malformed(format!(
            "no choice answers prompt {missing} of {}",
            batch.len()
        )));
    }
    let generated = usage.tokens_out.is_some_and(|n| n > 0);
    let scored = answers
        .into_iter()
        .zip(batch)
        .map(|(logprobs, (prompt, start))| read_echo(logprobs, generated, prompt, *start))
        .collect::<Result<_, _>>()?;
    let model = parsed.model.filter(|m| !m.is_empty());
    Ok((scored, usage, model))
}

/// The continuation of `prompt` from character `start` on, from one
/// choice's echoed `logprobs`; `generated`: the usage counts generated tokens.
fn read_echo(
    logprobs: Option<Value>,
    generated: bool,
    prompt: &str,
    start: usize,
) -> Result<Continuation, ProviderError> {
    let logprobs = logprobs.ok_or_else(|| no_prompt_logprobs("the answer has no `logprobs`"))?;
    let echo: EchoLogprobs = serde_json::from_value(logprobs).map_err(|e| {
        no_prompt_logprobs(&format!(
            "its `logprobs` are not the echoed prompt's tokens, text offsets and log-probabilities ({e})"
        ))
    })?;
    let end = prompt.chars().count();
    // The generated token follows the prompt in the list. A server that
    // generated one and lists none lists the prompt one row late (each token
    // with the next one's distribution): llama-cpp-python does when the
    // model adds no BOS token. Its numbers are wrong, not scores.
    if generated && echo.text_offset.iter().all(|&o| o < end) {
        return Err(no_prompt_logprobs(
            "it listed no entry for the generated token, so its echoed \
             log-probabilities are one row late (llama-cpp-python does so when the \
             model adds no BOS token: start it with \
             `--kv_overrides tokenizer.ggml.add_bos_token=bool:true`)",
        ));
    }
    Ok(Continuation::of(continuation_tokens(&echo, end, start)?))
}

/// The tokens at characters `start..end` of the echoed prompt.
fn continuation_tokens(
    echo: &EchoLogprobs,
    end: usize,
    start: usize,
) -> Result<Vec<TokenLogprob>, ProviderError> {
    let n = echo.tokens.len();
    if echo.text_offset.len() != n || echo.token_logprobs.len() != n {
        return Err(ProviderError::Malformed(format!(
            "echoed logprobs of unequal lengths: {n} tokens, {} offsets, {} log-probabilities",
            echo.text_offset.len(),
            echo.token_logprobs.len()
        )));
    }
    // The prompt's own tokens start at offset 0; a server that echoes
    // nothing of it lists the generated token alone, at the prompt's end.
    if echo.text_offset.first().is_none_or(|&o| o >= start) {
        return Err(no_prompt_logprobs(
            "it listed log-probabilities for generated tokens only, not for the echoed prompt",
        ));
    }
    let mut tokens = Vec::new();
    for i in (0..n).filter(|&i| (start..end).contains(&echo.text_offset[i])) {
        let Some(logprob) = echo.token_logprobs[i] else {
            return Err(no_prompt_logprobs(&format!(
                "token {i} of the echoed prompt has no log-probability"
            )));
        };
        let top = echo
            .top_logprobs
            .as_ref()
            .and_then(|all| all.get(i).cloned().flatten())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(text, lp)| lp.as_f64().map(|lp| (text, lp)))
            .collect();
        tokens.push(TokenLogprob::bounded(&echo.tokens[i], logprob, top));
        if tokens.len() == crate::prompt::MAX_LOGPROB_TOKENS {
            break;
        }
    }
    if tokens.is_empty() {
        return Err(no_prompt_logprobs(
            "no echoed token starts inside the continuation",
        ));
    }
    Ok(tokens)
}

fn no_prompt_logprobs(why: &str) -> ProviderError {
    ProviderError::NoPromptLogprobs(format!(
        "the server returned no log-probabilities for the prompt: {why}. \
         `loglikelihood` needs a server that echoes them (llama-cpp-python's \
         server, vLLM); llama.cpp's llama-server scores generated tokens only"
    ))
}

/// What `score` needs of a request: continuations, every one non-empty.
pub(crate) fn check_score(score: &ScoreRequest) -> Result<(), ProviderError> {
    if score.continuations.iter().any(String::is_empty) {
        return Err(ProviderError::Config(
            "an empty continuation cannot be scored".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo(tokens: &[(&str, usize, Option<f64>)]) -> Vec<u8> {
        let logprobs = json!({
            "tokens": tokens.iter().map(|t| t.0).collect::<Vec<_>>(),
            "text_offset": tokens.iter().map(|t| t.1).collect::<Vec<_>>(),
            "token_logprobs": tokens.iter().map(|t| t.2).collect::<Vec<_>>(),
            "top_logprobs": tokens.iter().map(|t| t.2.map(|lp| json!({t.0: lp, "x": -9.0}))).collect::<Vec<_>>(),
        });
        json!({"choices": [{"text": "Ответ: 5.", "logprobs": logprobs}],
               "usage": {"prompt_tokens": 4, "completion_tokens": 1}, "model": "m"})
        .to_string()
        .into_bytes()
    }

    /// One prompt's continuation, usage and model, as `read_scores` reads them.
    fn read_score(
        bytes: &[u8],
        prompt: &str,
        start: usize,
    ) -> Result<(Continuation, Usage, Option<String>), ProviderError> {
        let (mut scored, usage, model) = read_scores(bytes, &[(prompt.to_owned(), start)])?;
        Ok((scored.remove(0), usage, model))
    }

    #[test]
    fn the_continuation_is_the_echoed_tokens_from_its_start_before_the_generated_one() {
        // "Ответ:" + " 5" and a generated ".": offsets in characters.
        let request = ScoreRequest {
            context: "Ответ:".into(),
            continuations: vec![" 5".into()],
        };
        let (prompt, start) = request.prompt(0);
        assert_eq!((prompt.as_str(), start), ("Ответ: 5", 6));
        let bytes = echo(&[
            ("Отв", 0, None),
            ("ет", 3, Some(-1.0)),
            (":", 5, Some(-0.5)),
            (" 5", 6, Some(-2.25)),
            (".", 8, Some(-0.1)),
        ]);
        let (c, usage, model) = read_score(&bytes, &prompt, start).unwrap();
        assert_eq!(c.logprob, -2.25);
        assert!(c.greedy);
        assert_eq!(c.tokens.len(), 1);
        assert_eq!((usage.tokens_in, model.as_deref()), (Some(4), Some("m")));
    }

    #[test]
    fn trailing_space_of_the_context_moves_to_the_continuation() {
        let request = ScoreRequest {
            context: "Q: 2+2? A: ".into(),
            continuations: vec!["4".into()],
        };
        assert_eq!(request.prompt(0), ("Q: 2+2? A: 4".into(), 10));
    }

    #[test]
    fn generated_tokens_alone_are_refused_by_name() {
        // llama-server's shape: no echo, only the generated token listed.
        let bytes = echo(&[(".", 8, Some(-0.1))]);
        let error = read_score(&bytes, "Ответ: 5", 6).unwrap_err();
        assert!(
            matches!(error, ProviderError::NoPromptLogprobs(_)),
            "{error}"
        );
        assert!(error.to_string().contains("llama-server"), "{error}");
        // The chat-style `content` list is no echo either.
        let chat =
            json!({"choices": [{"logprobs": {"content": [{"token": ".", "logprob": -0.1}]}}]});
        let error = read_score(chat.to_string().as_bytes(), "Ответ: 5", 6).unwrap_err();
        assert!(
            matches!(error, ProviderError::NoPromptLogprobs(_)),
            "{error}"
        );
        let none = json!({"choices": [{"text": "."}]});
        let error = read_score(none.to_string().as_bytes(), "Ответ: 5", 6).unwrap_err();
        assert!(
            matches!(error, ProviderError::NoPromptLogprobs(_)),
            "{error}"
        );
    }

    #[test]
    fn an_echo_without_its_generated_token_is_refused_as_misaligned() {
        // llama-cpp-python without a BOS: the prompt's tokens, one row late,
        // and no entry for the token it generated (usage says one).
        let bytes = echo(&[("Ответ:", 0, None), (" 5", 6, Some(-2.0))]);
        let error = read_score(&bytes, "Ответ: 5", 6).unwrap_err();
        assert!(error.to_string().contains("one row late"), "{error}");
    }

    #[test]
    fn a_continuation_token_without_a_logprob_is_refused() {
        let bytes = echo(&[("Ответ:", 0, None), (" 5", 6, None), (".", 8, Some(-0.1))]);
        assert!(matches!(
            read_score(&bytes, "Ответ: 5", 6),
            Err(ProviderError::NoPromptLogprobs(_))
        ));
    }

    #[test]
    fn continuations_go_longest_first_and_ties_keep_their_order() {
        let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            longest_first(&texts(&[" 3", " 1", " 11", " 2"])),
            [2, 0, 1, 3]
        );
        assert_eq!(
            longest_first(&texts(&[" да", " нет", " не знаю"])),
            [2, 1, 0]
        );
    }

    #[test]
    fn a_batch_is_matched_by_index_and_every_prompt_must_be_answered() {
        let entry = |ll: f64| {
            json!({"tokens": ["Q:", " 5", "."], "text_offset": [0, 2, 4],
                   "token_logprobs": [null, ll, -0.1]})
        };
        let batch = [("Q: 5".to_owned(), 2), ("Q: 5".to_owned(), 2)];
        // The server may list its choices in any order.
        let answer = json!({"choices": [
            {"index": 1, "logprobs": entry(-2.0)},
            {"index": 0, "logprobs": entry(-1.0)}],
            "usage": {"prompt_tokens": 6, "completion_tokens": 2}});
        let (scored, usage, _) = read_scores(answer.to_string().as_bytes(), &batch).unwrap();
        let lls: Vec<f64> = scored.iter().map(|c| c.logprob).collect();
        assert_eq!((lls, usage.tokens_out), (vec![-1.0, -2.0], Some(2)));
        for (choices, why) in [
            (
                json!([{"index": 0, "logprobs": entry(-1.0)}]),
                "no choice answers prompt 1",
            ),
            (
                json!([{"index": 0, "logprobs": entry(-1.0)}, {"index": 0, "logprobs": entry(-1.0)}]),
                "two choices answer prompt 0",
            ),
            (
                json!([{"index": 0, "logprobs": entry(-1.0)}, {"index": 2, "logprobs": entry(-1.0)}]),
                "prompt 2 of a request that sent 2",
            ),
        ] {
            let answer = json!({"choices": choices});
            let error = read_scores(answer.to_string().as_bytes(), &batch).unwrap_err();
            assert!(error.to_string().contains(why), "{error}");
        }
    }
}
