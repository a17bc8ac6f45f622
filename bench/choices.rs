//! `loglikelihood` scoring against the text path: `harness run` of the
//! docs' planet questions, 2,000 instances, against zero-latency loopback
//! servers: one answering chat requests (the same questions asked with
//! `method = "generate"`, one text request each), one answering legacy
//! completions with an echoed prompt (`method = "loglikelihood"`, one
//! request per choice, four choices). Prints requests per second of each and
//! their ratio: scoring must not cost more per choice than one text request.
//! Run with `cargo bench --bench choices` (or `bench/choices.sh`).

#[path = "zero_server.rs"]
#[allow(dead_code, reason = "the t06 workspace is the other benches'")]
mod zero_server;

use std::path::Path;

const INSTANCES: u32 = 2_000;
const CHOICES: u32 = 4;

/// An echo answer whose tokens start every two characters up to 400: it
/// covers any of the bench's prompts, so every continuation has tokens.
fn echo_reply() -> &'static str {
    let n = 200;
    let tokens: Vec<String> = (0..n).map(|_| "\"ab\"".to_owned()).collect();
    let offsets: Vec<String> = (0..n).map(|i| (2 * i).to_string()).collect();
    let lps: Vec<String> = (0..n)
        .map(|i| if i == 0 { "null".into() } else { "-1.0".into() })
        .collect();
    let tops: Vec<String> = (0..n)
        .map(|i| {
            if i == 0 {
                "null".into()
            } else {
                "{\"ab\":-1.0}".into()
            }
        })
        .collect();
    let body = format!(
        "{{\"id\":\"c\",\"object\":\"text_completion\",\"model\":\"bench\",\"choices\":[{{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\",\"logprobs\":{{\"tokens\":[{}],\"text_offset\":[{}],\"token_logprobs\":[{}],\"top_logprobs\":[{}]}}}}],\"usage\":{{\"prompt_tokens\":20,\"completion_tokens\":1,\"total_tokens\":21}}}}",
        tokens.join(","),
        offsets.join(","),
        lps.join(","),
        tops.join(",")
    );
    Box::leak(body.into_boxed_str())
}

/// The docs' log-likelihood example as `id`, with `method` and `runs`.
fn spec(root: &Path, id: &str, method: &str) -> String {
    let text = std::fs::read_to_string(root.join("docs/examples/specs/choices_loglikelihood.toml"))
        .unwrap();
    let text = text
        .replace("id = \"choices_loglikelihood\"", &format!("id = \"{id}\""))
        .replace("runs = 4", &format!("runs = {INSTANCES}"))
        .replace(
            "method = \"loglikelihood\"",
            &format!("method = \"{method}\""),
        );
    // `generate` reads no delimiter.
    if method == "generate" {
        text.lines()
            .filter(|l| !l.starts_with("delimiter"))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        text
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("specs")).unwrap();
    std::fs::write(dir.join("specs/text.toml"), spec(root, "text", "generate")).unwrap();
    std::fs::write(
        dir.join("specs/scored.toml"),
        spec(root, "scored", "loglikelihood"),
    )
    .unwrap();
    let chat = zero_server::serve();
    let echo = zero_server::serve_with(echo_reply());
    let model = |name: &str, port: u16| {
        format!(
            "[models.{name}]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nconcurrency = 64\n"
        )
    };
    std::fs::write(
        dir.join("harness.toml"),
        model("chat", chat) + &model("echo", echo),
    )
    .unwrap();
    let args = |spec: &'static str, m: &'static str| {
        [
            "run",
            spec,
            "-m",
            m,
            "--no-cache",
            "--no-progress",
            "--allow-errors",
        ]
    };
    // Alternate, twice each: the better of two is each path's number.
    let (mut text, mut scored) = (0.0f64, 0.0f64);
    for _ in 0..2 {
        let wall = zero_server::timed(dir, &args("specs/text.toml", "chat"));
        text = text.max(f64::from(INSTANCES) / wall);
        let wall = zero_server::timed(dir, &args("specs/scored.toml", "echo"));
        scored = scored.max(f64::from(INSTANCES * CHOICES) / wall);
    }
    println!(
        "choices: text {text:.0} requests/s, loglikelihood {scored:.0} requests/s ({CHOICES} per instance): ratio {:.2} per choice",
        scored / text
    );
}
