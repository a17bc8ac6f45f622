//! Anthropic's Message Batches: `POST {base}/messages/batches` with
//! `{requests: [{custom_id, params}]}`, each `params` a Messages request
//! body; `GET {base}/messages/batches/{id}` until its `processing_status`
//! is `ended` (from `in_progress`, or `canceling`); then the JSONL of
//! `GET {base}/messages/batches/{id}/results`, a line per request:
//! `{custom_id, result: {type: succeeded, message} | {type: errored,
//! error} | {type: canceled} | {type: expired}}`. The results are read from
//! that documented path under the model's own base URL, not from the
//! `results_url` the batch names, so the key goes nowhere else.
//! References: <https://docs.anthropic.com/en/docs/build-with-claude/batch-processing>,
//! <https://docs.anthropic.com/en/api/creating-message-batches>,
//! <https://docs.anthropic.com/en/api/retrieving-message-batch-results>.

use serde_json::{Value, json};

use super::batch::{BatchEntry, BatchResults, BatchState, BatchStatus, RequestCounts};
use super::body::{self, Cap};
use super::native::NativeClient;
use super::native_wire::parse;
use super::{ChatRequest, ProviderError, classify};
use crate::failure::FailureKind;

impl NativeClient {
    /// `{base}/messages/batches` and what follows.
    fn batches_url(&self, rest: &str) -> String {
        let endpoint = &self.connection.endpoint;
        let (head, query) = endpoint.split_at(endpoint.find('?').unwrap_or(endpoint.len()));
        format!("{head}/batches{rest}{query}")
    }

    async fn send_batch(&self, builder: reqwest::RequestBuilder) -> Result<Vec<u8>, ProviderError> {
        let c = &self.connection;
        let builder = (self.headers.iter()).fold(builder.timeout(c.timeout), |b, (name, value)| {
            b.header(*name, value.as_str())
        });
        let response = builder.send().await.map_err(|e| classify(&e, c.timeout))?;
        let cap = Cap::new(c.max_response_bytes, c.timeout);
        if !response.status().is_success() {
            return Err(body::error_status(response, cap).await);
        }
        body::read(response, cap).await
    }

    /// One request of a batch: `{custom_id, params}`.
    pub(crate) fn anthropic_batch_line(
        &self,
        custom_id: &str,
        request: &ChatRequest,
    ) -> Result<String, ProviderError> {
        let line = json!({"custom_id": custom_id, "params": self.body(request, 1)?});
        Ok(line.to_string())
    }

    /// Creates a batch of `lines`: its id.
    pub(crate) async fn anthropic_submit(&self, lines: &[String]) -> Result<String, ProviderError> {
        let requests = (lines.iter())
            .map(|l| serde_json::from_str(l).map_err(|e| ProviderError::Config(e.to_string())))
            .collect::<Result<Vec<Value>, _>>()?;
        let http = &self.connection.http;
        let create = http
            .post(self.batches_url(""))
            .json(&json!({"requests": requests}));
        let batch: Value = parse(&self.send_batch(create).await?)?;
        match batch["id"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err(ProviderError::Malformed("the batch has no id".into())),
        }
    }

    /// One poll of batch `id`, in the provider-neutral form.
    pub(crate) async fn anthropic_poll(&self, id: &str) -> Result<BatchStatus, ProviderError> {
        let get = self
            .connection
            .http
            .get(self.batches_url(&format!("/{id}")));
        let batch: Value = parse(&self.send_batch(get).await?)?;
        status(id, &batch)
    }

    /// The result lines of an ended batch.
    pub(crate) async fn anthropic_results(
        &self,
        status: &BatchStatus,
    ) -> Result<BatchResults, ProviderError> {
        let mut results = BatchResults::default();
        if status.output_file_id.is_none() {
            return Ok(results);
        }
        let url = self.batches_url(&format!("/{}/results", status.id));
        let bytes = self.send_batch(self.connection.http.get(url)).await?;
        super::batch::read_lines(&bytes, &mut results, entry);
        Ok(results)
    }
}

/// A `MessageBatch` as a [`BatchStatus`]: `output_file_id` is set once the
/// batch has results (`results_url`).
fn status(id: &str, batch: &Value) -> Result<BatchStatus, ProviderError> {
    let state = match batch["processing_status"].as_str() {
        Some("in_progress") => BatchState::InProgress,
        Some("canceling") => BatchState::Cancelling,
        Some("ended") => BatchState::Ended,
        other => {
            return Err(ProviderError::Malformed(format!(
                "batch {id}: processing_status {other:?}"
            )));
        }
    };
    let n = |key: &str| batch["request_counts"][key].as_u64().unwrap_or(0);
    let failed = n("errored") + n("canceled") + n("expired");
    Ok(BatchStatus {
        id: id.to_owned(),
        status: state,
        request_counts: Some(RequestCounts {
            total: n("processing") + n("succeeded") + failed,
            completed: n("succeeded"),
            failed,
        }),
        output_file_id: batch["results_url"].as_str().map(str::to_owned),
        error_file_id: None,
        errors: None,
    })
}

/// One results line's entry.
fn entry(line: &Value) -> BatchEntry {
    let result = &line["result"];
    match result["type"].as_str() {
        Some("succeeded") if result["message"].is_object() => {
            BatchEntry::Body(result["message"].clone())
        }
        Some("canceled") => BatchEntry::Failed(FailureKind::BatchCancelled, "canceled".into()),
        Some("expired") => BatchEntry::Failed(FailureKind::BatchExpired, "expired".into()),
        _ => {
            let error = &result["error"]["error"];
            let kind = error["type"].as_str().unwrap_or("error");
            let message = error["message"].as_str().unwrap_or("no message");
            BatchEntry::Failed(FailureKind::BatchFailed, format!("{kind}: {message}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_batch_reads_as_a_status_and_its_results_as_entries() {
        let batch = json!({"id": "msgbatch_1", "type": "message_batch", "processing_status": "ended",
            "request_counts": {"processing": 0, "succeeded": 2, "errored": 1, "canceled": 1, "expired": 1},
            "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"});
        let s = status("msgbatch_1", &batch).unwrap();
        assert_eq!(s.describe(), "ended 2/5 done, 3 failed");
        assert!(s.status.ended());
        let failed = |line: Value| match entry(&line) {
            BatchEntry::Failed(kind, message) => (kind, message),
            BatchEntry::Body(_) => panic!("no failure"),
        };
        let errored = json!({"custom_id": "a", "result": {"type": "errored",
            "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}}});
        assert_eq!(
            failed(errored),
            (
                FailureKind::BatchFailed,
                "invalid_request_error: bad".into()
            )
        );
        let expired = json!({"custom_id": "b", "result": {"type": "expired"}});
        assert_eq!(failed(expired).0, FailureKind::BatchExpired);
        let canceled = json!({"custom_id": "c", "result": {"type": "canceled"}});
        assert_eq!(failed(canceled).0, FailureKind::BatchCancelled);
        let bad = json!({"id": "x", "processing_status": "done"});
        assert!(status("x", &bad).is_err());
    }
}
