//! The OpenAI Batch API on the chat completions wire: one JSONL file of
//! requests, each `{custom_id, method: "POST", url: "/v1/chat/completions",
//! body}`, uploaded to `POST {base}/files` (multipart, `purpose=batch`);
//! `POST {base}/batches` with that `input_file_id`, `endpoint` and
//! `completion_window = "24h"`; `GET {base}/batches/{id}` until the status
//! is one that ends (`completed`, `failed`, `expired`, `cancelled`); then
//! `GET {base}/files/{id}/content` of `output_file_id` and `error_file_id`.
//! Schemas: `Batch`, `CreateBatchRequest`, `BatchRequestCounts` and
//! `CreateFileRequest` of the vendored OpenAPI document (version 2.3.0).
//!
//! A results line is `{custom_id, response: {status_code, body}, error}`;
//! lines are matched by `custom_id`, never by order. A line that is not
//! JSON, or names no `custom_id`, is counted and skipped: the requests it
//! would have answered get a named error from the caller, never a guess.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{self, Cap};
use super::native::NativeClient;
use super::openai::OpenAiClient;
use super::tool_wire::WireNames;
use super::{ChatRequest, Completion, Provider, ProviderError};
use crate::failure::FailureKind;

/// A batch's status, as the provider names it (`Batch.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BatchState {
    /// The input file is being checked.
    Validating,
    /// The input file was refused; nothing ran.
    Failed,
    /// Requests are running.
    InProgress,
    /// Results are being written.
    Finalizing,
    /// Every request ran; results are ready.
    Completed,
    /// The completion window passed; finished requests have results.
    Expired,
    /// Cancellation was asked for.
    Cancelling,
    /// Cancelled; finished requests have results.
    Cancelled,
    /// Anthropic's end, whatever became of the requests: each result says.
    Ended,
}

impl BatchState {
    /// Whether the batch will not change again.
    pub(crate) fn ended(self) -> bool {
        matches!(
            self,
            BatchState::Failed
                | BatchState::Completed
                | BatchState::Expired
                | BatchState::Cancelled
                | BatchState::Ended
        )
    }

    /// The provider's name of the state, for progress lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BatchState::Validating => "validating",
            BatchState::Failed => "failed",
            BatchState::InProgress => "in_progress",
            BatchState::Finalizing => "finalizing",
            BatchState::Completed => "completed",
            BatchState::Expired => "expired",
            BatchState::Cancelling => "cancelling",
            BatchState::Cancelled => "cancelled",
            BatchState::Ended => "ended",
        }
    }

    /// What a request of an ended batch without a result line failed with.
    pub(crate) fn missing_kind(self) -> FailureKind {
        match self {
            BatchState::Expired => FailureKind::BatchExpired,
            BatchState::Cancelled | BatchState::Cancelling => FailureKind::BatchCancelled,
            BatchState::Failed => FailureKind::BatchFailed,
            // A completed batch owes every request a line: its absence is a partial file.
            _ => FailureKind::MalformedResponse,
        }
    }
}

/// `Batch.request_counts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct RequestCounts {
    /// Requests in the batch.
    pub total: u64,
    /// Requests that succeeded.
    pub completed: u64,
    /// Requests that failed.
    pub failed: u64,
}

/// One poll's view of a batch (`Batch`): its id, state and counts; the
/// files of its results, of the requests that succeeded and of those that
/// did not; why it failed as a whole (`errors.data[].message`). A missing
/// optional field reads as `None`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BatchStatus {
    pub id: String,
    pub status: BatchState,
    pub request_counts: Option<RequestCounts>,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub errors: Option<Value>,
}

impl BatchStatus {
    /// `in_progress 3/8 done, 1 failed`: the state and its counts.
    pub(crate) fn describe(&self) -> String {
        match self.request_counts {
            Some(c) if c.total > 0 => format!(
                "{} {}/{} done, {} failed",
                self.status.name(),
                c.completed,
                c.total,
                c.failed
            ),
            _ => self.status.name().to_owned(),
        }
    }

    /// The batch-wide errors' messages, joined.
    fn error_text(&self) -> String {
        let messages: Vec<&str> = self
            .errors
            .as_ref()
            .and_then(|e| e["data"].as_array())
            .map(|list| list.iter().filter_map(|e| e["message"].as_str()).collect())
            .unwrap_or_default();
        messages.join("; ")
    }
}

/// One request's result line, matched by its `custom_id`.
#[derive(Debug, Clone)]
pub(crate) enum BatchEntry {
    /// A 200 response: its body, to be read as a chat completion.
    Body(Value),
    /// A failed, expired or cancelled request, named.
    Failed(FailureKind, String),
}

/// What the results files held: each `custom_id`'s entry, and how many
/// lines could not be read.
#[derive(Debug, Default)]
pub(crate) struct BatchResults {
    /// By `custom_id`.
    pub entries: HashMap<String, BatchEntry>,
    /// Lines that were not JSON or named no `custom_id`.
    pub unreadable: usize,
}

#[derive(Deserialize)]
struct FileObject {
    id: String,
}

/// A model's batch API: OpenAI's Batch API or Anthropic's Message Batches.
#[derive(Clone, Copy)]
pub(crate) enum BatchApi<'a> {
    /// `/v1/files` and `/v1/batches`.
    OpenAi(&'a OpenAiClient),
    /// `/v1/messages/batches`.
    Anthropic(&'a NativeClient),
}

impl Provider {
    /// This wire's batch API, when it has one the harness speaks.
    pub(crate) fn batch_client(&self) -> Option<BatchApi<'_>> {
        match self {
            Provider::OpenAi(c) => Some(BatchApi::OpenAi(c)),
            Provider::Native(c) if c.is_anthropic() => Some(BatchApi::Anthropic(c)),
            _ => None,
        }
    }
}

impl BatchApi<'_> {
    /// The line of one request, named `custom_id`.
    pub(crate) fn batch_line(
        self,
        custom_id: &str,
        request: &ChatRequest,
    ) -> Result<String, ProviderError> {
        match self {
            BatchApi::OpenAi(c) => c.batch_line(custom_id, request),
            BatchApi::Anthropic(c) => c.anthropic_batch_line(custom_id, request),
        }
    }

    /// Submits `lines` as one batch: its id.
    pub(crate) async fn submit_batch(self, lines: &[String]) -> Result<String, ProviderError> {
        match self {
            BatchApi::OpenAi(c) => c.submit_batch(lines).await,
            BatchApi::Anthropic(c) => c.anthropic_submit(lines).await,
        }
    }

    /// One poll of batch `id`.
    pub(crate) async fn poll_batch(self, id: &str) -> Result<BatchStatus, ProviderError> {
        match self {
            BatchApi::OpenAi(c) => c.poll_batch(id).await,
            BatchApi::Anthropic(c) => c.anthropic_poll(id).await,
        }
    }

    /// The result lines of an ended batch.
    pub(crate) async fn batch_results(
        self,
        status: &BatchStatus,
    ) -> Result<BatchResults, ProviderError> {
        match self {
            BatchApi::OpenAi(c) => c.batch_results(status).await,
            BatchApi::Anthropic(c) => c.anthropic_results(status).await,
        }
    }

    /// One answered entry's body as the answer to `request`.
    pub(crate) fn batch_answer(
        self,
        request: &ChatRequest,
        body: &Value,
    ) -> Result<Completion, ProviderError> {
        let bytes =
            serde_json::to_vec(body).map_err(|e| ProviderError::Malformed(e.to_string()))?;
        let names = WireNames::new(&request.tools);
        let answers = match self {
            BatchApi::OpenAi(_) => super::openai_response::completions(&bytes, &names),
            BatchApi::Anthropic(_) => super::anthropic::completion(&bytes, &names).map(|a| vec![a]),
        };
        // As a live answer is made: scrubbed of keys, reasoning apart, calls settled.
        let mut answer = super::scrub::scrub(answers)?.remove(0);
        answer.separate_reasoning();
        super::tool_wire::settle_calls(&mut answer, 0);
        Ok(answer)
    }
}

impl OpenAiClient {
    /// The JSONL line of one request.
    pub(crate) fn batch_line(
        &self,
        custom_id: &str,
        request: &ChatRequest,
    ) -> Result<String, ProviderError> {
        let line = json!({
            "custom_id": custom_id,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": self.body(request, 1)?,
        });
        Ok(line.to_string())
    }

    fn url(&self, path: &str) -> String {
        // `endpoint` is `{base}/chat/completions` (a query after it kept).
        let (head, query) = self
            .endpoint
            .split_at(self.endpoint.find('?').unwrap_or(self.endpoint.len()));
        let base = head.trim_end_matches("/chat/completions");
        format!("{base}{path}{query}")
    }

    fn authorized(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.timeout(self.timeout);
        match &self.api_key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    async fn send(&self, builder: reqwest::RequestBuilder) -> Result<Vec<u8>, ProviderError> {
        let response = self
            .authorized(builder)
            .send()
            .await
            .map_err(|e| super::classify(&e, self.timeout))?;
        let cap = Cap::new(self.max_response_bytes, self.timeout);
        if !response.status().is_success() {
            return Err(body::error_status(response, cap).await);
        }
        body::read(response, cap).await
    }

    async fn send_json<T: for<'de> Deserialize<'de>>(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<T, ProviderError> {
        super::native_wire::parse(&self.send(builder).await?)
    }

    /// Uploads `lines` as a batch input file and creates the batch: its id.
    pub(crate) async fn submit_batch(&self, lines: &[String]) -> Result<String, ProviderError> {
        let mut jsonl = lines.join("\n");
        jsonl.push('\n');
        // reqwest is built without multipart: the form is two parts, written
        // out, split by a boundary the file does not contain.
        let boundary = (0u32..)
            .map(|n| format!("harness-batch-boundary-{n}"))
            .find(|b| !jsonl.contains(b.as_str()))
            .expect("some boundary is not in the file");
        let mut form = Vec::new();
        form.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
            )
            .as_bytes(),
        );
        form.extend_from_slice(jsonl.as_bytes());
        form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let upload = self
            .http
            .post(self.url("/files"))
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(form);
        let file: FileObject = self.send_json(upload).await?;
        let create = self.http.post(self.url("/batches")).json(&json!({
            "input_file_id": file.id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }));
        let batch: BatchStatus = self.send_json(create).await?;
        Ok(batch.id)
    }

    /// One poll of batch `id`.
    pub(crate) async fn poll_batch(&self, id: &str) -> Result<BatchStatus, ProviderError> {
        self.send_json(self.http.get(self.url(&format!("/batches/{id}"))))
            .await
    }

    /// The result lines of an ended batch, from its output and error files.
    pub(crate) async fn batch_results(
        &self,
        status: &BatchStatus,
    ) -> Result<BatchResults, ProviderError> {
        let mut results = BatchResults::default();
        for file in [&status.output_file_id, &status.error_file_id]
            .into_iter()
            .flatten()
        {
            let url = self.url(&format!("/files/{file}/content"));
            let bytes = self.send(self.http.get(url)).await?;
            read_lines(&bytes, &mut results, |line| entry(line, status.status));
        }
        if status.status == BatchState::Failed {
            let why = status.error_text();
            results.entries.clear();
            results.unreadable = 0;
            let message = format!("batch {} failed: {why}", status.id);
            results.entries.insert(
                String::new(),
                BatchEntry::Failed(FailureKind::BatchFailed, message),
            );
        }
        Ok(results)
    }
}

/// Reads one results file's lines into `results`, each line's entry as
/// `entry` makes it.
pub(super) fn read_lines(
    bytes: &[u8],
    results: &mut BatchResults,
    entry: impl Fn(&Value) -> BatchEntry,
) {
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            results.unreadable += 1;
            continue;
        };
        let Some(id) = value["custom_id"].as_str() else {
            results.unreadable += 1;
            continue;
        };
        results.entries.insert(id.to_owned(), entry(&value));
    }
}

/// One line's entry: a 200's body, or the failure it names.
fn entry(line: &Value, state: BatchState) -> BatchEntry {
    let response = &line["response"];
    let status = response["status_code"].as_u64();
    if status == Some(200) && response["body"].is_object() {
        return BatchEntry::Body(response["body"].clone());
    }
    let error = if line["error"].is_object() {
        &line["error"]
    } else {
        &response["body"]["error"]
    };
    let code = error["code"].as_str().unwrap_or_default();
    let message = error["message"].as_str().unwrap_or("no message");
    let kind = match code {
        "batch_expired" => FailureKind::BatchExpired,
        "batch_cancelled" => FailureKind::BatchCancelled,
        _ if state == BatchState::Cancelled && status.is_none() => FailureKind::BatchCancelled,
        _ => FailureKind::BatchFailed,
    };
    let status = status.map_or_else(String::new, |s| format!("HTTP {s}: "));
    let code = if code.is_empty() {
        String::new()
    } else {
        format!("{code}: ")
    };
    BatchEntry::Failed(kind, format!("{status}{code}{message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_are_matched_by_custom_id_and_bad_lines_counted() {
        let text = concat!(
            r#"{"id":"r2","custom_id":"b","response":{"status_code":200,"body":{"choices":[]}},"error":null}"#,
            "\nnot json\n",
            r#"{"id":"r1","custom_id":"a","response":null,"error":{"code":"batch_expired","message":"late"}}"#,
            "\n",
            r#"{"id":"r3","response":null}"#,
            "\n",
            r#"{"id":"r4","custom_id":"c","response":{"status_code":400,"body":{"error":{"message":"bad"}}},"error":null}"#,
            "\n",
            r#"{"id":"r5","custom_id":"d","response":null,"error":{"message":"gone"}}"#,
        );
        let mut results = BatchResults::default();
        read_lines(text.as_bytes(), &mut results, |l| {
            entry(l, BatchState::Cancelled)
        });
        assert_eq!(results.unreadable, 2);
        assert!(matches!(results.entries["b"], BatchEntry::Body(_)));
        let failed = |id: &str| match &results.entries[id] {
            BatchEntry::Failed(kind, message) => (*kind, message.clone()),
            BatchEntry::Body(_) => panic!("{id} is no failure"),
        };
        assert_eq!(
            failed("a"),
            (FailureKind::BatchExpired, "batch_expired: late".into())
        );
        assert_eq!(
            failed("c"),
            (FailureKind::BatchFailed, "HTTP 400: bad".into())
        );
        assert_eq!(failed("d"), (FailureKind::BatchCancelled, "gone".into()));
    }

    #[test]
    fn states_read_as_the_provider_names_them_and_say_their_counts() {
        let status: BatchStatus = serde_json::from_value(json!({
            "id": "batch_1", "object": "batch", "status": "in_progress",
            "request_counts": {"total": 8, "completed": 3, "failed": 1}
        }))
        .unwrap();
        assert_eq!(status.describe(), "in_progress 3/8 done, 1 failed");
        assert!(!status.status.ended());
        for (name, ended) in [
            ("completed", true),
            ("expired", true),
            ("finalizing", false),
        ] {
            let s: BatchState = serde_json::from_value(json!(name)).unwrap();
            assert_eq!((s.name(), s.ended()), (name, ended));
        }
    }
}
