//! Google's Gemini API: `POST {base}/models/{model}:generateContent` (base
//! `https://generativelanguage.googleapis.com/v1beta`), the key in
//! `x-goog-api-key`. Reference:
//! <https://ai.google.dev/api/generate-content>; field names in the REST
//! API's camelCase, as its discovery document spells them.
//!
//! The system prompt is `systemInstruction`; the history is `contents` of
//! `user` and `model` turns made of parts: `text`, `inlineData` (`{mimeType,
//! data}` in base64), a model's `functionCall` (`{name, args}`) and, in the
//! next user turn, each `functionResponse` (`{name, response: {result}}`),
//! paired by name and order. Tools are one `functionDeclarations` list with
//! each tool's JSON schema as `parametersJsonSchema`; `tool_choice` is
//! `toolConfig.functionCallingConfig.mode` (`AUTO`, `ANY`, `NONE`, a named
//! function as `ANY` with `allowedFunctionNames`). Gemini has no way to forbid
//! parallel calls: `parallel_tool_calls = false` is refused. Sampling goes in
//! `generationConfig` (`temperature`, `topP`, `seed`, `stopSequences`,
//! `maxOutputTokens`), a JSON answer as `responseMimeType` (and
//! `responseJsonSchema`), several samples as `candidateCount`.
//!
//! A part with `thought: true` is reasoning text, kept apart from the
//! answer; `usageMetadata.thoughtsTokenCount` counts it (billed as output, so
//! added to `tokens_out` here). A turn whose parts carry a
//! `thoughtSignature` keeps all its parts whole in [`Reasoning::blocks`], and
//! an episode's later turns send that model turn back as it came: the
//! signatures in their original parts, as the API requires for calls.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::prompt::{Message, Reasoning, Role, ToolMode};

use super::native_wire;
use super::tool_wire::WireNames;
use super::{ChatRequest, Completion, OutputKind, ProviderError, SamplingNames, ToolChoice, Usage};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    /// Raw, so a signed turn can be kept exactly as sent.
    #[serde(default)]
    parts: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

/// The answers of a response body, one per candidate. A prompt the API
/// blocked has no candidate: one empty answer whose finish reason is the block reason.
pub(super) fn completions(
    bytes: &[u8],
    names: &WireNames,
) -> Result<Vec<Completion>, ProviderError> {
    let parsed: Response = native_wire::parse(bytes)?;
    let usage = parsed
        .usage_metadata
        .map_or_else(Usage::default, |u| Usage {
            tokens_in: u.prompt_token_count,
            // Thoughts are billed as output; `candidatesTokenCount` leaves them out.
            tokens_out: match (u.candidates_token_count, u.thoughts_token_count) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
            tokens_cached: u.cached_content_token_count,
            tokens_reasoning: u.thoughts_token_count,
        });
    let served = native_wire::served(parsed.model_version);
    let mut candidates = parsed.candidates;
    if candidates.is_empty() {
        let Some(reason) = parsed.prompt_feedback.and_then(|f| f.block_reason) else {
            return Err(ProviderError::Malformed(
                "the response has no candidates".into(),
            ));
        };
        candidates.push(Candidate {
            content: None,
            finish_reason: Some(reason),
        });
    }
    let count = candidates.len() as u32;
    let shared = (count > 1).then_some(super::SharedUsage {
        choices: count,
        tokens_out: usage.tokens_out,
    });
    candidates
        .into_iter()
        .map(|c| {
            let mut text = String::new();
            let mut tool_calls = Vec::new();
            let (mut thoughts, mut signed) = (Vec::new(), false);
            let raw_parts = c.content.map(|c| c.parts).unwrap_or_default();
            for raw in &raw_parts {
                let part: Part = serde_json::from_value(raw.clone())
                    .map_err(|e| ProviderError::Malformed(format!("a part: {e}")))?;
                signed |= part.thought_signature.is_some();
                if let Some(call) = part.function_call {
                    tool_calls.push(crate::prompt::ToolCall {
                        id: call.id.unwrap_or_default(),
                        name: names.spec(&call.name),
                        arguments: call.args.unwrap_or_else(|| json!({})),
                        invalid: None,
                    });
                } else if let Some(t) = part.text {
                    if part.thought {
                        thoughts.push(t);
                    } else {
                        text.push_str(&t);
                    }
                }
            }
            // Gemini says `STOP` after calls too; the others' word for it is `tool_calls`.
            let finish_reason = c.finish_reason.map(|r| match r.as_str() {
                "STOP" if !tool_calls.is_empty() => "tool_calls".to_owned(),
                other => native_wire::finish_reason(other),
            });
            // A signature without thought text still says the model reasoned.
            let reasoning = (signed || !thoughts.is_empty()).then(|| Reasoning {
                text: thoughts.join("\n"),
                blocks: if signed { raw_parts } else { Vec::new() },
                ..Reasoning::default()
            });
            Ok(Completion {
                logprobs: None,
                text,
                reasoning,
                usage: Usage {
                    tokens_out: usage.tokens_out.filter(|_| shared.is_none()),
                    tokens_reasoning: usage.tokens_reasoning.filter(|_| shared.is_none()),
                    ..usage
                },
                finish_reason,
                shared,
                served: served.clone(),
                tool_calls,
                allowance_spent: false,
            })
        })
        .collect()
}

/// The body of `request` asking for `n` candidates.
pub(super) fn request_body(request: &ChatRequest, n: u32) -> Result<Value, ProviderError> {
    let names = WireNames::new(&request.tools);
    let (system, history) = native_wire::split_system(&request.messages);
    let mut contents = wire_contents(&history, &names)?;
    if let Some(prefill) = &request.prefill {
        push_part(&mut contents, "model", json!({"text": prefill}));
    }
    let mut config = Value::Object(request.sampling(&SamplingNames {
        max_tokens: "maxOutputTokens",
        top_p: "topP",
        seed: None,
        stop: Some("stopSequences"),
    }));
    let generation = config.as_object_mut().expect("object");
    if let Some(seed) = request.seed {
        // The API's seed is an int32: a larger one is folded into range, the same way every time.
        generation.insert("seed".into(), json!(seed as u32 as i32));
    }
    if n > 1 {
        generation.insert("candidateCount".into(), json!(n));
    }
    match &request.format {
        OutputKind::Text => {}
        OutputKind::Json => {
            generation.insert("responseMimeType".into(), json!("application/json"));
        }
        OutputKind::JsonSchema(schema) => {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), schema.clone());
        }
    }
    let mut body = json!({"contents": contents, "generationConfig": config});
    let map = body.as_object_mut().expect("object");
    if let Some(system) = system {
        map.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    insert_tools(map, request, &names)?;
    super::merge_extra(&mut body, request);
    Ok(body)
}

/// `tools` and `toolConfig`, when the request has tools.
fn insert_tools(
    map: &mut Map<String, Value>,
    request: &ChatRequest,
    names: &WireNames,
) -> Result<(), ProviderError> {
    if request.tools.is_empty() {
        return Ok(());
    }
    if request.parallel_tool_calls == Some(false) {
        return Err(native_wire::cannot_carry(
            "Gemini",
            "`parallel_tool_calls = false`",
        ));
    }
    let declarations = names.declarations(
        &request.tools,
        |name, parameters| json!({"name": name, "parametersJsonSchema": parameters}),
    );
    map.insert(
        "tools".into(),
        json!([{"functionDeclarations": declarations}]),
    );
    let config = match &request.tool_choice {
        None => return Ok(()),
        Some(ToolChoice::Mode(ToolMode::Auto)) => json!({"mode": "AUTO"}),
        Some(ToolChoice::Mode(ToolMode::Required)) => json!({"mode": "ANY"}),
        Some(ToolChoice::Mode(ToolMode::None)) => json!({"mode": "NONE"}),
        Some(ToolChoice::Function { function }) => {
            json!({"mode": "ANY", "allowedFunctionNames": [names.wire(function)]})
        }
    };
    map.insert(
        "toolConfig".into(),
        json!({"functionCallingConfig": config}),
    );
    Ok(())
}

/// Adds `part` to the last turn when it has `role`, else starts one.
fn push_part(contents: &mut Vec<Value>, role: &str, part: Value) {
    native_wire::push_to_turn(contents, role, "parts", part);
}

/// The history as Gemini turns. A tool result names its tool (Gemini pairs
/// results with calls by name and order); its text goes as `{result}`, the
/// object the API requires. A call's arguments that were not an object go as `{}`.
fn wire_contents(history: &[&Message], names: &WireNames) -> Result<Vec<Value>, ProviderError> {
    let mut contents = Vec::new();
    for m in history {
        match m.role {
            Role::Assistant if let Some(parts) = signed_parts(m) => {
                for part in parts {
                    push_part(&mut contents, "model", part.clone());
                }
            }
            Role::Assistant => {
                if !m.content.is_empty() || m.tool_calls.is_empty() {
                    push_part(&mut contents, "model", json!({"text": m.content}));
                }
                for call in &m.tool_calls {
                    let args = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        json!({})
                    };
                    let call = json!({"name": names.wire(&call.name), "args": args});
                    push_part(&mut contents, "model", json!({"functionCall": call}));
                }
            }
            Role::Tool => {
                let name = names.wire(m.tool_name.as_deref().unwrap_or_default());
                let response = json!({"name": name, "response": {"result": m.content}});
                push_part(&mut contents, "user", json!({"functionResponse": response}));
            }
            Role::User | Role::System => {
                if !m.content.is_empty() || m.images.is_empty() {
                    push_part(&mut contents, "user", json!({"text": m.content}));
                }
                for image in &m.images {
                    let data = image.base64().map_err(|e| super::image_error(&e))?;
                    let inline = json!({"mimeType": image.mime, "data": data});
                    push_part(&mut contents, "user", json!({"inlineData": inline}));
                }
            }
        }
    }
    Ok(contents)
}

/// The parts of a model turn that carried thought signatures, as the API
/// sent them: that turn goes back whole, never rebuilt. Only parts (objects
/// without another wire's `type`) count.
fn signed_parts(m: &Message) -> Option<&[Value]> {
    let blocks = &m.reasoning.as_ref()?.blocks;
    let parts = !blocks.is_empty()
        && blocks
            .iter()
            .all(|b| b.is_object() && b.get("type").is_none());
    parts.then_some(blocks.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::native_wire::test_request as request;

    fn tools() -> Value {
        json!([{"name": "math.factorial", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}])
    }

    #[test]
    fn an_episode_becomes_user_and_model_turns() {
        let r = request(json!({
            "messages": crate::provider::native_wire::test_episode(),
            "tools": tools(), "tool_choice": {"function": "math.factorial"},
            "seed": 7, "stop": ["END"], "format": {"type": "json_schema", "schema": {"type": "object"}}
        }));
        let body = request_body(&r, 3).unwrap();
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "5!?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "math_factorial", "args": {"n": 5}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "math_factorial", "response": {"result": "120"}}}]}
            ])
        );
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "Be brief."}]})
        );
        assert_eq!(
            body["generationConfig"],
            json!({"temperature": 0.0, "maxOutputTokens": 64, "seed": 7, "stopSequences": ["END"],
                   "candidateCount": 3, "responseMimeType": "application/json",
                   "responseJsonSchema": {"type": "object"}})
        );
        assert_eq!(
            body["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["math_factorial"]}})
        );
        assert_eq!(
            body["tools"][0]["functionDeclarations"][0]["name"],
            "math_factorial"
        );
        let mut serial = r.clone();
        serial.parallel_tool_calls = Some(false);
        assert!(matches!(
            request_body(&serial, 1),
            Err(ProviderError::Config(_))
        ));
    }

    #[test]
    fn candidates_read_text_calls_thoughts_and_usage() {
        let names = WireNames::new(&serde_json::from_value::<Vec<_>>(tools()).unwrap());
        let body = json!({
            "candidates": [
                {"content": {"role": "model", "parts": [
                    {"text": "thinking...", "thought": true},
                    {"text": "Calling."},
                    {"functionCall": {"name": "math_factorial", "args": {"n": 5}}}]},
                 "finishReason": "STOP", "index": 0},
                {"content": {"role": "model", "parts": [{"text": "12"}]}, "finishReason": "MAX_TOKENS", "index": 1}
            ],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 6,
                              "thoughtsTokenCount": 4, "totalTokenCount": 19},
            "modelVersion": "gemini-x-001"
        });
        let answers = completions(body.to_string().as_bytes(), &names).unwrap();
        assert_eq!(answers[0].text, "Calling.");
        let thought = answers[0].reasoning.as_ref().unwrap();
        assert_eq!(
            (thought.text.as_str(), thought.blocks.len()),
            ("thinking...", 0)
        );
        assert_eq!(answers[1].reasoning, None);
        assert_eq!(answers[0].tool_calls[0].name, "math.factorial");
        assert_eq!(answers[0].finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(answers[1].finish_reason.as_deref(), Some("length"));
        assert_eq!(
            answers[0].shared,
            Some(super::super::SharedUsage {
                choices: 2,
                tokens_out: Some(10)
            })
        );
        assert_eq!(answers[1].usage.tokens_in, Some(9));
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
        let answer = completions(blocked.to_string().as_bytes(), &names).unwrap();
        assert_eq!(
            (answer[0].text.as_str(), answer[0].finish_reason.as_deref()),
            ("", Some("SAFETY"))
        );
        assert!(matches!(
            completions(b"{}", &names),
            Err(ProviderError::Malformed(_))
        ));
    }

    #[test]
    fn a_signed_turn_is_kept_whole_and_sent_back_as_it_came() {
        let names = WireNames::new(&serde_json::from_value::<Vec<_>>(tools()).unwrap());
        let parts = json!([
            {"text": "5! is 120", "thought": true},
            {"functionCall": {"name": "math_factorial", "args": {"n": 5}}, "thoughtSignature": "CiQB+/sig=="}
        ]);
        let body = json!({"candidates": [{"content": {"role": "model", "parts": parts},
            "finishReason": "STOP"}], "usageMetadata": {"thoughtsTokenCount": 3}});
        let answer = completions(body.to_string().as_bytes(), &names)
            .unwrap()
            .remove(0);
        let reasoning = answer.reasoning.clone().unwrap();
        assert_eq!(json!(reasoning.blocks), parts);
        assert_eq!(answer.usage.tokens_reasoning, Some(3));
        let mut history = crate::provider::native_wire::test_episode();
        history[2]["reasoning"] = json!(reasoning);
        let r = request(json!({"messages": history, "tools": tools()}));
        let sent = request_body(&r, 1).unwrap();
        assert_eq!(
            sent["contents"][1],
            json!({"role": "model", "parts": parts})
        );
        // Another wire's blocks are not parts: the turn is rebuilt.
        history[2]["reasoning"]["blocks"] = json!([{"type": "thinking", "thinking": "x"}]);
        let r = request(json!({"messages": history, "tools": tools()}));
        let sent = request_body(&r, 1).unwrap();
        assert!(sent["contents"][1]["parts"][0]["functionCall"].is_object());
    }
}
