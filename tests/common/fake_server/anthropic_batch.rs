//! Anthropic's Message Batches on the batch fake, as the references
//! describe them (<https://docs.anthropic.com/en/api/creating-message-batches>,
//! <https://docs.anthropic.com/en/api/retrieving-message-batch-results>):
//! `POST /v1/messages/batches` `{requests: [{custom_id, params}]}` with
//! unique `custom_id`s of `[a-zA-Z0-9_-]{1,64}`; a `MessageBatch`
//! `in_progress`, then `canceling` for a cancelled one, then `ended` with a
//! `results_url`; the results JSONL, a line per request in reverse order:
//! `{custom_id, result: {type: succeeded, message} | {type: errored, error}
//! | {type: canceled} | {type: expired}}`. The fake's states map on
//! Anthropic's: `validating` and `finalizing` are `in_progress`.

use serde_json::{Value, json};

use super::batch::{Batch, Ending, LineReply, Shared, Store, answer, error, reply};
use super::{COMPLETION_TOKENS, PROMPT_TOKENS};

/// `POST /v1/messages/batches`.
pub(super) fn create(store: &mut Store, body: &[u8]) -> (&'static str, Vec<u8>) {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error("400 Bad Request", "body is not JSON");
    };
    store.creates.push(request.clone());
    let Some(requests) = request["requests"].as_array() else {
        return error("400 Bad Request", "no requests");
    };
    let mut ids = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for r in requests {
        let id = r["custom_id"].as_str().unwrap_or_default();
        let valid = (1..=64).contains(&id.len())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && r["params"]["model"].is_string()
            && r["params"]["max_tokens"].is_u64()
            && r["params"]["messages"].is_array();
        if !valid || !ids.insert(id.to_owned()) {
            return error("400 Bad Request", "a request's custom_id or params");
        }
        lines.push(json!({"custom_id": id, "body": r["params"]}));
    }
    store.next += 1;
    let id = format!("msgbatch_{}", store.next);
    let batch = Batch::new(String::new(), lines);
    let reply = object(&id, &batch);
    store.batches.insert(id, batch);
    reply
}

/// A `MessageBatch`.
pub(super) fn object(id: &str, b: &Batch) -> (&'static str, Vec<u8>) {
    let status = match b.status {
        "cancelling" => "canceling",
        "completed" | "expired" | "cancelled" | "failed" => "ended",
        _ => "in_progress",
    };
    let total = b.lines.len() as u64;
    let counts = if status == "ended" {
        json!({"processing": 0, "succeeded": total, "errored": 0, "canceled": 0, "expired": 0})
    } else {
        json!({"processing": total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
    };
    let results_url = (status == "ended")
        .then(|| format!("https://api.anthropic.com/v1/messages/batches/{id}/results"));
    let object = json!({
        "id": id, "type": "message_batch", "processing_status": status,
        "request_counts": counts, "ended_at": null, "created_at": "2026-11-27T00:00:00Z",
        "expires_at": "2026-11-28T00:00:00Z", "cancel_initiated_at": null,
        "archived_at": null, "results_url": results_url
    });
    ("200 OK", object.to_string().into_bytes())
}

/// `GET /v1/messages/batches/{id}/results` of an ended batch.
pub(super) fn results(shared: &Shared, store: &Store, id: &str) -> (&'static str, Vec<u8>) {
    let Some(batch) = store.batches.get(id) else {
        return error("404 Not Found", "no such batch");
    };
    if batch.polls <= shared.in_progress + 2 {
        return error("400 Bad Request", "the batch is still processing");
    }
    let mut out = String::new();
    for (i, line) in batch.lines.iter().enumerate().rev() {
        let failed = shared.ending == Ending::Failed;
        let result = match reply(shared, batch.lines.len(), i, line) {
            _ if failed => errored("invalid_request_error", "the request was refused"),
            LineReply::Error("batch_expired", _) => json!({"type": "expired"}),
            LineReply::Error("batch_cancelled", _) => json!({"type": "canceled"}),
            LineReply::Error(_, message) => errored("api_error", message),
            LineReply::Omit => continue,
            LineReply::Garbage => {
                out.push_str("{\"custom_id\": \"trunc\n");
                continue;
            }
            LineReply::Correct => succeeded(line, i, 0),
            LineReply::Wrong => succeeded(line, i, 1),
        };
        out.push_str(&format!(
            "{}\n",
            json!({"custom_id": line["custom_id"], "result": result})
        ));
    }
    ("200 OK", out.into_bytes())
}

fn errored(kind: &str, message: &str) -> Value {
    json!({"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}})
}

fn succeeded(line: &Value, i: usize, offset: i64) -> Value {
    let message = json!({
        "id": format!("msg_{i}"), "type": "message", "role": "assistant",
        "model": line["body"]["model"],
        "content": [{"type": "text", "text": answer(line, offset).to_string()}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": COMPLETION_TOKENS}
    });
    json!({"type": "succeeded", "message": message})
}
