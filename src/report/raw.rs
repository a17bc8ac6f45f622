//! `results/raw/<model>_<stamp>.json`: one JSON array per model with the
//! fields of the original raw format (`test_id`, `prompt`, `llm_response`,
//! `is_correct`, ...), extended with the fields a later analysis needs.
//!
//! `prompt` is the rendered conversation as text: each message as
//! `<role>: <content>`, messages separated by a blank line, so a one-message
//! prompt reads `user: <text>`. The structured messages stay in the journal.
//! With tools, `llm_response` is every step as text (`→ name(args)` per
//! call, `← name: content` per result, then the final answer), never an empty
//! string, and `trajectory` and `state` keep the steps and the tools' final
//! state as the journal has them.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::calls::{answer_text, message_text, role_name};
use crate::metrics::{expected_output, test_id};
use crate::prompt::Message;
use crate::run::record::{Cost, Record};
use crate::verify::FailureKind;

/// One element of the raw array; field order is the key order.
#[derive(Serialize)]
struct RawResult<'a> {
    test_id: String,
    model_name: &'a str,
    prompt: String,
    llm_response: Option<String>,
    expected_output: Value,
    is_correct: bool,
    execution_time_ms: u64,
    spec: &'a str,
    instance: u64,
    sample: u32,
    extracted_answer: Option<&'a str>,
    score: f64,
    detail: &'a str,
    failure: Option<FailureKind>,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
    attempts: u32,
    error: Option<&'a str>,
    cached: bool,
    /// Present only for a model with a price, like the judge's.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<&'a Cost>,
    #[serde(skip_serializing_if = "Option::is_none")]
    judge_cost: Option<&'a Cost>,
    /// With tools: each assistant turn with its calls and each tool result.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    trajectory: &'a [Message],
    /// With `[agent]`: the tools' state when the episode ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a Value>,
}

/// The prompt as text: `role: content` per message, separated by blank lines.
pub(crate) fn prompt_text(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| format!("{}: {}", role_name(m.role), message_text(m)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Streams a JSON array element by element, so no file-sized string is built.
pub(crate) struct RawWriter<W: Write> {
    out: W,
    count: u64,
}

impl<W: Write> RawWriter<W> {
    /// Starts an array on `out`.
    pub(super) fn new(out: W) -> RawWriter<W> {
        RawWriter { out, count: 0 }
    }

    /// Appends `r`, shown under the model name `model`.
    pub(super) fn write(&mut self, model: &str, r: &Record) -> io::Result<()> {
        let item = RawResult {
            test_id: test_id(r),
            model_name: model,
            prompt: prompt_text(&r.messages),
            llm_response: answer_text(r.scored.response.as_deref(), &r.scored.trajectory),
            expected_output: expected_output(r),
            is_correct: r.scored.passed,
            execution_time_ms: r.latency_ms,
            spec: &r.spec,
            instance: r.instance,
            sample: r.sample,
            extracted_answer: r.scored.answer.as_deref(),
            score: r.scored.score,
            detail: &r.scored.detail,
            failure: r.failure,
            tokens_in: r.scored.tokens_in,
            tokens_out: r.scored.tokens_out,
            attempts: r.attempts,
            error: r.scored.error.as_deref(),
            cached: r.cached,
            cost: r.cost.as_ref(),
            judge_cost: r.judge_cost.as_ref(),
            trajectory: &r.scored.trajectory,
            state: r.scored.state.as_ref(),
        };
        let json = serde_json::to_string_pretty(&item).map_err(io::Error::other)?;
        // Strings are escaped, so every newline is between tokens and indenting is safe.
        let sep = if self.count == 0 { "[\n  " } else { ",\n  " };
        write!(self.out, "{sep}{}", json.replace('\n', "\n  "))?;
        self.count += 1;
        Ok(())
    }

    /// Closes the array and returns the writer.
    pub(super) fn finish(mut self) -> io::Result<W> {
        self.out
            .write_all(if self.count == 0 { b"[]\n" } else { b"\n]\n" })?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::{error, record};

    #[test]
    fn arrays_stream_and_parse() {
        let empty = RawWriter::new(Vec::new()).finish().unwrap();
        assert_eq!(String::from_utf8(empty).unwrap(), "[]\n");
        let mut w = RawWriter::new(Vec::new());
        let mut r = record("m", "s", 1);
        r.scored.response = Some("line 1\nline \"2\"".into());
        w.write("run/m", &r).unwrap();
        w.write(
            "run/m",
            &error(record("m", "s", 2), FailureKind::Timeout, "slow"),
        )
        .unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v[0]["llm_response"], "line 1\nline \"2\"");
        assert_eq!(v[0]["prompt"], "user: question 1");
        assert_eq!(v[0]["model_name"], "run/m");
        assert_eq!(v[1]["llm_response"], Value::Null);
        assert_eq!(v[1]["error"], "slow");
        assert!(
            text.starts_with("[\n  {\n    \"test_id\": \"s/1\""),
            "{text}"
        );
        assert!(v[0].get("trajectory").is_none(), "{text}");
    }

    #[test]
    fn a_tool_answer_shows_its_steps() {
        let mut r = record("m", "shop", 3);
        r.scored.response = Some("6! = 720".into());
        r.scored.trajectory = super::super::calls::tests::episode();
        r.scored.state = Some(serde_json::json!({"orders": [{"status": "cancelled"}]}));
        let mut w = RawWriter::new(Vec::new());
        w.write("m", &r).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let steps = answer_text(r.scored.response.as_deref(), &r.scored.trajectory);
        assert_eq!(v[0]["llm_response"].as_str(), steps.as_deref());
        assert!(steps.unwrap().starts_with("→ math.factorial(number=6)\n"));
        assert_eq!(v[0]["trajectory"].as_array().map(Vec::len), Some(5));
        assert_eq!(
            v[0]["trajectory"][0]["tool_calls"][0]["name"],
            "math.factorial"
        );
        assert_eq!(v[0]["state"]["orders"][0]["status"], "cancelled");
    }
}
