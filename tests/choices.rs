//! Multiple choice and log-probabilities over the wires, against the
//! in-process fake speaking each wire's documented shape: OpenAI chat
//! `logprobs.content`, Ollama's top-level `logprobs`, and the legacy
//! completions `echo` answer that vLLM and llama-cpp-python return; and the
//! refusals by name of a server that returns none (llama-server's
//! completions list generated tokens only).

use serde_json::{Value, json};

use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{harness, root};

/// The two-instance first-token spec of the docs, and a model on `base`.
pub(crate) fn workspace(spec: &str, provider: &str, base: &str) -> Workspace {
    let ws = Workspace::new();
    let text = std::fs::read_to_string(root().join("docs/examples/specs").join(spec)).unwrap();
    ws.write(&format!("specs/{spec}"), &text);
    // One request at a time: a refusal stops the run before a second is sent.
    let model = model_toml(
        "fake",
        provider,
        "fake-model",
        base,
        "timeout_secs = 5\nconcurrency = 1",
    );
    ws.write("harness.toml", &model);
    ws
}

/// `harness run specs/SPEC -m fake --runs N EXTRA...`, which must exit
/// `code` and print each of `wanted`: its output.
fn run_model(
    ws: &Workspace,
    spec: &str,
    (runs, extra): (&str, &[&str]),
    code: i32,
    wanted: &[&str],
) -> String {
    let spec = format!("specs/{spec}");
    let mut args = vec![spec.as_str(), "-m", "fake", "--runs", runs];
    args.extend(extra);
    ws.run_expect(&args, code, wanted)
}

/// OpenAI's chat answer whose first token is `first`, with these alternatives.
pub(crate) fn chat_with_logprobs(first: &str, top: &[(&str, f64)]) -> Value {
    let top: Vec<Value> = top
        .iter()
        .map(|(t, lp)| json!({"token": t, "logprob": lp, "bytes": t.as_bytes()}))
        .collect();
    let lp = top
        .iter()
        .find(|t| t["token"] == first)
        .map_or(-9.0, |t| t["logprob"].as_f64().unwrap());
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "length",
            "message": {"role": "assistant", "content": first},
            "logprobs": {"content": [{"token": first, "logprob": lp, "bytes": first.as_bytes(), "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 17, "completion_tokens": 1, "total_tokens": 18}
    })
}

#[test]
fn first_token_reads_the_labels_among_the_alternatives_and_replays_them() {
    // Instance 0's answer is B (Mercury), instance 1's A (Jupiter).
    let fake = FakeServer::start(|r: &Request| {
        let first_planet = r.prompt.contains("closest");
        let top = [(" B", -0.4), ("A", -1.6), ("The", -2.0), ("C", -3.5)];
        let top2 = [("B", -0.3), ("A", -1.5), ("D", -4.0)];
        Reply::Raw(if first_planet {
            chat_with_logprobs(" B", &top)
        } else {
            chat_with_logprobs("B", &top2)
        })
    });
    let ws = workspace("choices_first_token.toml", "openai", &fake.openai_base());
    let out = run_model(
        &ws,
        "choices_first_token.toml",
        ("2", &["--bless"]),
        0,
        &["multiple choice", "ECE"],
    );
    let body = &fake.requests()[0].body;
    assert_eq!(
        (body["logprobs"].clone(), body["top_logprobs"].clone()),
        (json!(true), json!(20)),
        "{body}"
    );
    assert_eq!(body["max_tokens"], 4, "{body}");
    let records = ws.last_journal();
    let by_instance = |i: u64| records.iter().find(|r| r["instance"] == i).unwrap();
    let first = &by_instance(0)["choice"];
    assert_eq!(first["picked"], 1, "{first}");
    assert_eq!(
        first["probabilities"][3],
        Value::Null,
        "D is not listed: {first}"
    );
    assert_eq!(by_instance(0)["passed"], true);
    let second = &by_instance(1)["choice"];
    assert_eq!(
        (second["picked"].clone(), second["correct"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(by_instance(1)["passed"], false);
    assert!(
        by_instance(0)["logprobs"]["tokens"][0]["top"]
            .as_array()
            .unwrap()
            .len()
            == 4
    );
    assert!(out.contains("missing labels"), "{out}");
    // The golden transcripts replay the probabilities without a server.
    drop(fake);
    ws.run_ok(&["specs/choices_first_token.toml", "--runs", "2"]);
    let replayed = ws.last_journal();
    assert_eq!(replayed.len(), records.len());
    // Journal lines come in the order answers end: pair them by instance.
    for b in &replayed {
        let a = by_instance(b["instance"].as_u64().unwrap());
        assert_eq!(a["choice"], b["choice"], "{b}");
        assert_eq!(a["logprobs"], b["logprobs"], "{b}");
    }
}

#[test]
fn ollama_returns_its_top_level_logprobs() {
    let fake = FakeServer::start(|_| {
        Reply::Raw(json!({
            "model": "fake-model", "created_at": "2026-11-27T00:00:00Z",
            "message": {"role": "assistant", "content": "B"}, "done": true, "done_reason": "length",
            "prompt_eval_count": 17, "eval_count": 1,
            "logprobs": [{"token": "B", "logprob": -0.2, "bytes": [66],
                "top_logprobs": [{"token": "B", "logprob": -0.2, "bytes": [66]}, {"token": "A", "logprob": -1.9, "bytes": [65]}]}]
        }))
    });
    let ws = workspace("choices_first_token.toml", "ollama", &fake.ollama_base());
    run_model(
        &ws,
        "choices_first_token.toml",
        ("1", &["--no-cache"]),
        0,
        &[],
    );
    let body = &fake.requests()[0].body;
    assert_eq!(
        (body["logprobs"].clone(), body["top_logprobs"].clone()),
        (json!(true), json!(20)),
        "{body}"
    );
    let r = &ws.last_journal()[0];
    assert_eq!(r["choice"]["picked"], 1, "{r}");
    assert_eq!(r["passed"], true, "{r}");
}

/// A legacy completions `echo` answer (vLLM's and llama-cpp-python's shape):
/// the prompt split at spaces, each word's log-probability minus its length
/// in characters over 4, then one generated token at the prompt's end.
fn echo_answer(prompt: &str) -> Value {
    let (mut tokens, mut offsets, mut lps, mut tops) = (vec![], vec![], vec![], vec![]);
    let mut at = 0;
    for (i, word) in prompt.split_inclusive(' ').enumerate() {
        let lp = -(word.chars().count() as f64) / 4.0;
        tokens.push(json!(word));
        offsets.push(json!(at));
        lps.push(if i == 0 { Value::Null } else { json!(lp) });
        tops.push(if i == 0 {
            Value::Null
        } else {
            json!({word: lp})
        });
        at += word.chars().count();
    }
    tokens.push(json!("."));
    offsets.push(json!(at));
    lps.push(json!(-0.5));
    tops.push(json!({".": -0.5}));
    json!({"id": "cmpl-1", "object": "text_completion", "model": "fake-model",
        "choices": [{"index": 0, "text": format!("{prompt}."), "finish_reason": "length",
            "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": lps, "top_logprobs": tops}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
}

#[test]
fn loglikelihood_scores_each_choice_from_the_echoed_prompt() {
    let fake = FakeServer::start(|r: &Request| {
        Reply::Raw(echo_answer(r.body["prompt"].as_str().unwrap_or_default()))
    });
    let ws = workspace("choices_loglikelihood.toml", "openai", &fake.openai_base());
    let out = run_model(
        &ws,
        "choices_loglikelihood.toml",
        ("1", &[]),
        0,
        &["acc_norm"],
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "one request per choice");
    // Longest first, ties in order, as lm-eval orders its requests.
    for (r, choice) in requests.iter().zip(["Mercury", "Venus", "Earth", "Mars"]) {
        assert_eq!(r.path, "/v1/completions");
        let b = &r.body;
        assert_eq!(
            b["prompt"],
            format!("Question: Which planet is closest to the Sun?\nAnswer: {choice}"),
            "{b}"
        );
        assert_eq!(
            (
                b["echo"].clone(),
                b["logprobs"].clone(),
                b["max_tokens"].clone()
            ),
            (json!(true), json!(1), json!(1))
        );
    }
    let r = &ws.last_journal()[0];
    // Each choice is one word here: its log-probability is minus its length over 4.
    let lls: Vec<f64> = r["choice"]["loglikelihoods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(lls, vec![-1.25, -1.75, -1.0, -1.25], "{r}");
    // acc picks Mars (shortest); acc_norm per character ties at -0.25, the first wins.
    assert_eq!(
        (
            r["choice"]["picked"].clone(),
            r["choice"]["picked_norm"].clone()
        ),
        (json!(2), json!(0))
    );
    assert_eq!(r["passed"], false);
    assert_eq!(r["logprobs"]["continuations"].as_array().unwrap().len(), 4);
    assert!(out.contains("0.000 [0.000,"), "{out}");
}

/// A completions answer to a list of prompts: one echo choice per prompt,
/// listed last first (the index, not the order, says which prompt it answers).
fn echo_answers(prompts: &[Value]) -> Value {
    let choices: Vec<Value> = (prompts.iter().enumerate().rev())
        .map(|(i, p)| {
            let mut choice = echo_answer(p.as_str().unwrap())["choices"][0].clone();
            choice["index"] = json!(i);
            choice
        })
        .collect();
    json!({"id": "cmpl-2", "object": "text_completion", "model": "fake-model", "choices": choices,
        "usage": {"prompt_tokens": 27, "completion_tokens": prompts.len()}})
}

#[test]
fn loglikelihood_sends_up_to_max_prompts_continuations_per_request() {
    let fake = FakeServer::start(|r: &Request| match &r.body["prompt"] {
        Value::Array(prompts) => Reply::Raw(echo_answers(prompts)),
        one => Reply::Raw(echo_answer(one.as_str().unwrap_or_default())),
    });
    let ws = workspace("choices_loglikelihood.toml", "openai", &fake.openai_base());
    let extra = "timeout_secs = 5\nconcurrency = 1\nmax_prompts = 3";
    let base = fake.openai_base();
    ws.write(
        "harness.toml",
        &model_toml("fake", "openai", "fake-model", &base, extra),
    );
    run_model(
        &ws,
        "choices_loglikelihood.toml",
        ("1", &[]),
        0,
        &["acc_norm"],
    );
    // Four choices, longest first: three in a list, then the shortest alone
    // as a string; each answer read back to its choice.
    let prompts: Vec<Value> = fake
        .requests()
        .iter()
        .map(|r| r.body["prompt"].clone())
        .collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert_eq!(prompts[0].as_array().map(Vec::len), Some(3), "{prompts:?}");
    assert!(
        prompts[0][0].as_str().unwrap().ends_with("Mercury"),
        "{prompts:?}"
    );
    assert!(
        prompts[1].as_str().unwrap().ends_with("Mars"),
        "{prompts:?}"
    );
    let r = &ws.last_journal()[0];
    assert_eq!(
        r["choice"]["loglikelihoods"],
        json!([-1.25, -1.75, -1.0, -1.25]),
        "{r}"
    );
    assert_eq!(r["tokens_in"], json!(36), "{r}");
}

#[test]
fn servers_without_prompt_or_any_logprobs_are_refused_by_name() {
    // llama-server's completions: the generated token's log-probabilities alone.
    let generated_only = FakeServer::start(|_| {
        Reply::Raw(
            json!({"choices": [{"index": 0, "text": " 5", "finish_reason": "length",
            "logprobs": {"content": [{"id": 20, "token": " 5", "bytes": [32, 53], "logprob": -1.2, "top_logprobs": []}]}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1}}),
        )
    });
    let ws = workspace(
        "choices_loglikelihood.toml",
        "openai",
        &generated_only.openai_base(),
    );
    let out = run_model(
        &ws,
        "choices_loglikelihood.toml",
        ("4", &[]),
        2,
        &["no_prompt_logprobs", "llama-server"],
    );
    assert!(!out.contains("report:"), "no score is reported: {out}");
    assert_eq!(
        generated_only.count(),
        1,
        "the run stops at the first answer"
    );

    // A chat server that ignores `logprobs`.
    let plain = FakeServer::healthy();
    let ws = workspace("choices_first_token.toml", "openai", &plain.openai_base());
    run_model(
        &ws,
        "choices_first_token.toml",
        ("4", &[]),
        2,
        &["no_logprobs"],
    );
    assert_eq!(plain.count(), 1, "the run stops at the first answer");

    // Anthropic's API has none: refused before any request.
    let never = FakeServer::healthy();
    let ws = workspace(
        "choices_first_token.toml",
        "anthropic",
        &never.openai_base(),
    );
    let out = ws
        .run_cmd(&[
            "specs/choices_first_token.toml",
            "-m",
            "fake",
            "--runs",
            "1",
        ])
        .env("ANTHROPIC_API_KEY", "test-key")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("no_logprobs") && text.contains("Anthropic"),
        "{text}"
    );
    assert_eq!(never.count(), 0);
}

/// A byte-level tokenizer's view, as llama-server's `/tokenize` (`content`)
/// or llama-cpp-python's `/extras/tokenize` (`input`, after its BOS 1) give
/// it: a Latin letter is one token, bare or after a space; a Cyrillic
/// letter is two byte tokens.
fn tokenize(text: &str, bos: bool) -> Reply {
    let mut ids: Vec<u64> = if bos { vec![1] } else { Vec::new() };
    for c in text.chars() {
        match c {
            ' ' => ids.push(220),
            c if c.is_ascii() => {
                // " A" merges into one token, as byte-level BPE merges it.
                if ids.last() == Some(&220) {
                    ids.pop();
                    ids.push(1000 + c as u64);
                } else {
                    ids.push(c as u64);
                }
            }
            c => ids.extend(c.to_string().bytes().map(u64::from)),
        }
    }
    Reply::Raw(json!({"tokens": ids}))
}

#[test]
fn check_warns_of_first_token_labels_the_models_tokenizer_splits() {
    for extras in [false, true] {
        let fake = FakeServer::start(move |r: &Request| match (r.path.as_str(), extras) {
            ("/tokenize", false) => tokenize(r.body["content"].as_str().unwrap(), false),
            ("/extras/tokenize", true) => tokenize(r.body["input"].as_str().unwrap(), true),
            _ => Reply::Status(404, None),
        });
        let ws = workspace("choices_first_token.toml", "openai", &fake.openai_base());
        let spec = "specs/choices_first_token.toml";
        let out = check(&ws, &[spec, "-m", "fake"], &["2/2 examples"]);
        assert!(!out.contains("warning"), "{out}");
        // Without -m no server is asked.
        let before = fake.requests().len();
        check(&ws, &[spec], &["2/2 examples"]);
        assert_eq!(fake.requests().len(), before);

        let text = std::fs::read_to_string(ws.path().join(spec)).unwrap();
        ws.write(
            spec,
            &text.replace(
                "labels = \"latin\"",
                "labels = [\"A\", \"B\", \"C\", \"Д\"]",
            ),
        );
        let out = check(
            &ws,
            &[spec, "-m", "fake"],
            &[
                "warning: model `fake`: label is not one token, so first_token never sees it: `Д` (`Д` [208, 148], ` Д` [220, 208, 148])",
                "choices_first_token.toml:30:",
            ],
        );
        assert!(!out.contains("[1, 208"), "the BOS is cut: {out}");
    }
    // A server with no tokenizer: the labels are not checked, and it says so.
    let fake = FakeServer::start(|_: &Request| Reply::Status(404, None));
    let ws = workspace("choices_first_token.toml", "openai", &fake.openai_base());
    check(
        &ws,
        &["specs/choices_first_token.toml", "-m", "fake"],
        &["labels not checked: no tokenizer endpoint answered (HTTP 404 at"],
    );
}

/// `harness check --bless ARGS...` in `ws`, which must pass and print each of `wanted`.
fn check(ws: &Workspace, args: &[&str], wanted: &[&str]) -> String {
    let mut cmd = harness(ws.path());
    crate::common::expect(cmd.args(["check", "--bless"]).args(args), 0, wanted)
}

/// The lm-eval parity rig's committed outputs agree: lm-eval's and the
/// harness's full runs over the same 200 items on llama-cpp-python's server,
/// every log-likelihood to 1e-6 and acc and acc_norm identical
/// (docs/choices-parity.md); and the check can fail.
#[test]
fn the_committed_lm_eval_parity_outputs_agree() {
    let rig = root().join("bench/lm_eval_parity");
    let compare = |args: &[&str]| {
        let mut cmd = std::process::Command::new("python3");
        crate::common::run(cmd.arg(rig.join("compare.py")).args(args).current_dir(&rig))
    };
    let (code, out) = compare(&["lm_eval_output.jsonl", "harness_output.jsonl"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("parity: 200 items, 800 choices agree within 1e-06"),
        "{out}"
    );
    let (code, out) = compare(&["--self-check"]);
    assert_eq!(code, 0, "{out}");
}
