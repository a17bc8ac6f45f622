//! Managed vLLM, with a stand-in (`tests/fixtures/managed/fake_vllm.py`):
//! vLLM needs a GPU these machines lack, so a small Python server plays
//! `vllm serve` — it prints the argv and environment it got, answers
//! `/metrics`, `/v1/models` and `/v1/chat/completions` in OpenAI's wire
//! format, and can fail at start-up or ignore SIGTERM on request.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::managed::{NoOrphans, alive, started_pids};
use crate::common::workspace::Workspace;
use crate::common::{harness, root, run};

/// The stand-in for `vllm serve`.
fn fake_vllm() -> PathBuf {
    root().join("tests/fixtures/managed/fake_vllm.py")
}

fn setup(server_extra: &str) -> (Workspace, NoOrphans) {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    ws.write("chat.jinja", "{{ messages }}");
    ws.write(
        "harness.toml",
        &format!(
            "[models.tiny]\nprovider = \"vllm\"\nmodel = \"org/tiny-model\"\nconcurrency = 2\n\
             max_retries = 0\n\
             [models.tiny.server]\nbinary = \"{}\"\nctx_size = 2048\n\
             gpu_memory_utilization = 0.5\nchat_template = \"chat.jinja\"\n\
             extra_args = [\"--dtype\", \"float32\"]\nready_timeout_secs = 30\n{server_extra}",
            fake_vllm().display()
        ),
    );
    let guard = NoOrphans(ws.path().join("results"));
    (ws, guard)
}

/// `harness run specs -m tiny --runs RUNS` with one knob of the stand-in set.
fn run_tiny(ws: &Workspace, runs: &str, knob: &str, value: &str) -> (i32, String) {
    run(ws
        .run_cmd(&["specs", "-m", "tiny", "--runs", runs])
        .env(knob, value))
}

fn server_log(ws: &Workspace) -> (String, Vec<i32>) {
    let log = ws.run_dirs().pop().unwrap().join("server.log");
    (std::fs::read_to_string(&log).unwrap(), started_pids(&log))
}

#[test]
fn arguments_readiness_requests_and_a_graceful_stop() {
    let (ws, guard) = setup("");
    let (code, out) = run(ws
        .run_cmd(&["specs", "-m", "tiny", "--runs", "3"])
        .env("OPENAI_API_KEY", "sk-must-not-leak")
        .env("HF_TOKEN", "hf-needed-for-gated-models"));
    assert!(code == 0 || code == 1, "{out}");
    let (log, pids) = server_log(&ws);
    let chat = ws.path().join("chat.jinja");
    let head =
        "fake-vllm argv: [\"serve\", \"org/tiny-model\", \"--host\", \"127.0.0.1\", \"--port\", ";
    assert!(log.contains(head), "{log}");
    let tail = format!(
        "\"--served-model-name\", \"org/tiny-model\", \"--max-num-seqs\", \"2\", \
         \"--max-model-len\", \"2048\", \"--gpu-memory-utilization\", \"0.5\", \
         \"--chat-template\", \"{}\", \"--dtype\", \"float32\"]",
        chat.display()
    );
    assert!(log.contains(&tail), "{log}");
    // No API key reaches the server; the hub token it needs does.
    assert!(
        log.contains("fake-vllm env OPENAI_API_KEY: absent"),
        "{log}"
    );
    assert!(log.contains("fake-vllm env HF_TOKEN: present"), "{log}");
    // Polled while loading (503), then served.
    assert!(log.contains("\"GET /v1/models HTTP/1.1\" 503"), "{log}");
    assert!(log.contains("\"GET /v1/models HTTP/1.1\" 200"), "{log}");
    let records = ws.last_journal();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r["response"], "42", "{r}");
        assert_eq!(r["tokens_in"], 10);
    }
    assert!(log.contains("fake-vllm: SIGTERM, shutting down"), "{log}");
    assert!(log.contains(&format!(
        "[harness] stopped pid {} (exit status: 0)",
        pids[0]
    )));
    assert!(!alive(pids[0]));
    assert!(guard.survivors().is_empty());
}

#[test]
fn a_start_up_failure_quotes_the_servers_own_error() {
    let (ws, guard) = setup("");
    let (code, out) = run_tiny(&ws, "1", "FAKE_VLLM_FAIL", "1");
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("fake_vllm.py for model `tiny` exited during start-up (exit status: 1)"),
        "{out}"
    );
    assert!(
        out.contains("ValueError: fake-vllm cannot load model 'org/tiny-model'"),
        "{out}"
    );
    assert!(ws.last_journal().is_empty());
    assert!(guard.survivors().is_empty());
}

#[test]
fn a_server_not_ready_in_time_is_stopped_and_reported() {
    let (ws, guard) = setup("");
    let config = std::fs::read_to_string(ws.path().join("harness.toml")).unwrap();
    ws.write(
        "harness.toml",
        &config.replace("ready_timeout_secs = 30", "ready_timeout_secs = 1"),
    );
    let started = Instant::now();
    let (code, out) = run_tiny(&ws, "1", "FAKE_VLLM_DELAY", "60");
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("was not ready after 1 s (ready_timeout_secs)"),
        "{out}"
    );
    assert!(out.contains("fake-vllm: serving org/tiny-model"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let (_, pids) = server_log(&ws);
    assert!(!alive(pids[0]));
    assert!(guard.survivors().is_empty());
}

#[test]
fn a_server_ignoring_sigterm_is_killed_after_the_grace_period() {
    let (ws, guard) = setup("");
    let started = Instant::now();
    let (code, out) = run_tiny(&ws, "1", "FAKE_VLLM_IGNORE_TERM", "1");
    let elapsed = started.elapsed();
    assert!(code == 0 || code == 1, "{out}");
    let (log, pids) = server_log(&ws);
    assert!(log.contains("fake-vllm: ignoring SIGTERM"), "{log}");
    assert!(
        log.contains(&format!("[harness] stopped pid {} (signal: 9", pids[0])),
        "{log}"
    );
    assert!(elapsed >= Duration::from_secs(10), "{elapsed:?}");
    assert!(!alive(pids[0]));
    assert!(guard.survivors().is_empty());
}

#[test]
fn managed_models_run_one_after_another() {
    let (ws, guard) = setup("");
    let config = std::fs::read_to_string(ws.path().join("harness.toml")).unwrap();
    let second = config
        .replace("[models.tiny]", "[models.other]")
        .replace("[models.tiny.server]", "[models.other.server]")
        .replace("org/tiny-model", "org/other-model");
    ws.write("harness.toml", &format!("{config}\n{second}"));
    let (code, out) = run(&mut ws.run_cmd(&["specs", "-m", "tiny", "-m", "other", "--runs", "2"]));
    assert!(code == 0 || code == 1, "{out}");
    let (log, pids) = server_log(&ws);
    assert_eq!(pids.len(), 2, "{log}");
    // The second server starts only after the first has stopped.
    let stopped_first = log
        .find(&format!("[harness] stopped pid {}", pids[0]))
        .unwrap();
    let started_second = log
        .find(&format!("[harness] started pid {}", pids[1]))
        .unwrap();
    assert!(stopped_first < started_second, "{log}");
    assert_eq!(ws.last_journal().len(), 4);
    assert!(guard.survivors().is_empty());
}

#[test]
fn a_managed_judge_serves_the_whole_run_beside_the_model_and_stops_after_it() {
    let (ws, guard) = setup("");
    ws.copy_spec("rubric_quality.toml")
        .copy_spec("rubrics/quality_5.toml");
    let config = std::fs::read_to_string(ws.path().join("harness.toml")).unwrap();
    let judge = format!(
        "[models.judge]\nprovider = \"vllm\"\nmodel = \"org/judge\"\nmax_retries = 0\n\
         [models.judge.server]\nbinary = \"{}\"\nready_timeout_secs = 30\n",
        fake_vllm().display()
    );
    ws.write("harness.toml", &format!("{judge}\n{config}"));
    let (code, out) = run(ws
        .run_cmd(&[
            "specs/rubric_quality.toml",
            "-m",
            "tiny",
            "--judge",
            "judge",
            "--runs",
            "2",
        ])
        .env("FAKE_VLLM_REPLY", r#"{"reasoning": "ok", "level": 4}"#));
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["score"], 0.75, "{r}");
        assert_eq!(r["rules"][0]["judge"]["judge"], "judge", "{r}");
    }
    // Two servers: the judge's first, for the whole run, then the model's; both stopped.
    let (log, pids) = server_log(&ws);
    assert_eq!(pids.len(), 2, "{log}");
    assert!(log.contains("\"serve\", \"org/judge\""), "{log}");
    for pid in &pids {
        assert!(
            log.contains(&format!("[harness] stopped pid {pid}")),
            "{log}"
        );
        assert!(!alive(*pid));
    }
    assert!(guard.survivors().is_empty());
}

#[test]
fn synth_starts_stops_and_logs_a_managed_model() {
    let (ws, guard) = setup("");
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    ws.write(
        "docs/a.txt",
        "Фотосинтез — процесс, в котором растения на свету превращают углекислый газ и воду в глюкозу и кислород.",
    );
    let pairs = r#"[{"question": "Что дает фотосинтез?", "answer": "Глюкозу и кислород."}]"#;
    let (code, out) = run(harness(ws.path())
        .args(["synth", "docs", "--model", "tiny", "--out", "data/qa.jsonl"])
        .env("FAKE_VLLM_REPLY", pairs));
    // The stand-in answers the same to every step, so rating fails; the lifecycle is what counts.
    assert!(code == 0 || code == 1, "{out}");
    let log_path = ws.path().join("data/qa.synth/server.log");
    let log = std::fs::read_to_string(&log_path)
        .unwrap_or_else(|e| panic!("{}: {e}\n{out}", log_path.display()));
    let pids = started_pids(&log_path);
    assert_eq!(pids.len(), 1, "{log}");
    assert!(
        log.contains(&format!("[harness] stopped pid {}", pids[0])),
        "{log}"
    );
    assert!(!alive(pids[0]));
    drop(guard);
}
