//! llama-cpp-python's OpenAI-compatible server, a second real llama.cpp
//! wire: the same SmolLM2 GGUF served by the PyPI package's own build
//! (`scripts/llama-server.sh start smollm2py`), taking its turn with the
//! rest of `e2e_llama`.

use std::fs;

use super::{LOGLIKELIHOOD, Live, assert_all_cached, copy_dir, journal, live};
use crate::common::{e2e_var, golden_lines, harness, locks, root, run};

/// A shard of t06 against llama-cpp-python's server: every record a real
/// answer with usage and the model the server says answered, and a second run
/// asks nothing.
#[test]
fn llama_cpp_python_answers_a_spec_over_the_openai_wire_and_reruns_from_cache() {
    let args = ["--shard", "0/5"];
    let Some((live, records, out)) = run_on_py("specs/t06_mathematics.toml", &args) else {
        return;
    };
    assert_eq!(records.len(), 2, "{out}");
    for r in &records {
        assert!(r["error"].is_null(), "request failed: {r}");
        assert!(r["attempts"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["tokens_in"].as_u64().unwrap() > 0, "{r}");
        assert!(r["tokens_out"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["served_model"], "smollm2", "{r}");
    }
    let dir = live.dir.path();
    let rerun = [
        "run",
        "specs/t06_mathematics.toml",
        "-m",
        "smollm2py",
        "--shard",
        "0/5",
        "--no-progress",
    ];
    let (_, out) = run(harness(dir).args(rerun));
    assert_all_cached(dir, 2, &out);
}

/// `harness run SPEC -m smollm2py EXTRA... --no-progress` in a live
/// workspace with llama-cpp-python's server added, which must exit 0 or 1:
/// the live state (its lock held), the records and the output; `None` when
/// the live tests skip.
fn run_on_py(spec: &str, extra: &[&str]) -> Option<(Live, Vec<serde_json::Value>, String)> {
    let live = live_with_py()?;
    let mut cmd = harness(live.dir.path());
    cmd.args(["run", spec, "-m", "smollm2py", "--no-progress"])
        .args(extra);
    let (code, out) = run(&mut cmd);
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(live.dir.path());
    Some((live, records, out))
}

/// The live state with llama-cpp-python's server added as `smollm2py`;
/// `None` when the live tests skip.
fn live_with_py() -> Option<Live> {
    let url = e2e_var("HARNESS_LLAMA_PY_URL")?;
    let live = live(false)?;
    add_model(live.dir.path(), &url);
    Some(live)
}

/// Adds `smollm2py`, SmolLM2 on llama-cpp-python's server at `url`, to the
/// workspace's harness.toml.
fn add_model(dir: &std::path::Path, url: &str) {
    let config = dir.join("harness.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[models.smollm2py]\nprovider = \"openai\"\nmodel = \"smollm2\"\n\
         base_url = \"{url}/v1\"\nconcurrency = 1\ntimeout_secs = 300\n\
         options = {{ max_tokens = 48 }}\n"
    ));
    fs::write(&config, text).unwrap();
}

/// One answer of the `loglikelihood` spec's golden subset (`--shard 9/12`,
/// the slice holding instance 117, its shortest: llama-cpp-python sorts the
/// whole vocabulary in Python for every echoed prompt token, and three
/// answers took 229 s in CI), each choice scored from the echoed prompt's
/// log-probabilities, reproduces its committed transcript (every choice's
/// log-likelihood and pick); against llama-server, which echoes none, the
/// same run stops with the named error and no score. The lm-eval parity
/// test below holds five more items to lm-eval's own output.
#[test]
fn loglikelihood_reproduces_live_on_llama_cpp_python_and_llama_server_is_refused() {
    let Some(Live { dir, _servers, .. }) = live_with_py() else {
        return;
    };
    copy_dir(&root().join("golden"), &dir.path().join("golden"));
    fs::copy(root().join(LOGLIKELIHOOD), dir.path().join(LOGLIKELIHOOD)).unwrap();
    let args = [
        "run",
        LOGLIKELIHOOD,
        "-m",
        "smollm2py",
        "--golden-subset",
        "--shard",
        "9/12",
        "--no-progress",
    ];
    let started = std::time::Instant::now();
    let (code, out) = run(harness(dir.path()).args(args));
    eprintln!(
        "live loglikelihood: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert!(code == 0 || code == 1, "{out}");
    assert!(out.contains("acc_norm"), "{out}");
    let records = journal(dir.path());
    assert_eq!(records.len(), 1, "{out}");
    assert_eq!(records[0]["instance"], 117, "{out}");
    golden_lines::assert_as_golden(&records, &root().join("golden"), "live log-likelihoods");
    for r in &records {
        let lls = r["choice"]["loglikelihoods"].as_array().unwrap();
        assert_eq!(
            lls.len(),
            r["vars"]["options"].as_array().unwrap().len(),
            "{r}"
        );
        assert!(lls.iter().all(|ll| ll.as_f64().unwrap() < 0.0), "{r}");
    }

    let args = [
        "run",
        LOGLIKELIHOOD,
        "-m",
        "smollm2",
        "--runs",
        "3",
        "--no-progress",
    ];
    let (code, out) = run(harness(dir.path()).args(args));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("no_prompt_logprobs") && out.contains("llama-server"),
        "{out}"
    );
    assert!(!out.contains("report:"), "no score: {out}");
}

/// The lm-eval parity rig's harness side, live on a few items: the harness
/// scores the first items of `bench/lm_eval_parity/items_digits.jsonl` on
/// this server and `compare.py --subset` holds every log-likelihood (to 1e-6),
/// acc and acc_norm to lm-eval's committed output for those items. The whole
/// 200-item run is committed beside it (docs/choices-parity.md, "In CI").
#[test]
fn loglikelihood_agrees_live_with_lm_evals_committed_output() {
    let Some(url) = e2e_var("HARNESS_LLAMA_PY_URL") else {
        return;
    };
    // The server to itself, as the other live tests have it.
    let _servers = locks::real_llama();
    let rig = root().join("bench/lm_eval_parity");
    let (code, out) = run(std::process::Command::new("python3")
        .arg(rig.join("compare.py"))
        .arg("--self-check"));
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(std::process::Command::new(rig.join("harness.sh"))
        .env("HARNESS_LLAMA_PY_URL", &url)
        .env("HARNESS_BIN", env!("CARGO_BIN_EXE_harness"))
        .env("PARITY_LIMIT", "5"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("parity: 5 items, 20 choices agree"), "{out}");
}

/// `check -m` asks both real servers' tokenizers about `first_token`
/// labels: llama-server's `/tokenize` and llama-cpp-python's
/// `/extras/tokenize` (its BOS cut off). The shipped spec's Latin labels
/// are single tokens of SmolLM2; Cyrillic ones mostly are not.
#[test]
fn check_asks_both_servers_whether_first_token_labels_are_single_tokens() {
    let Some(Live { dir, _servers, .. }) = live_with_py() else {
        return;
    };
    let spec = "specs/ru_choice.toml";
    for model in ["smollm2", "smollm2py"] {
        let args = ["check", "--bless", spec, "-m", model];
        let (code, out) = run(harness(dir.path()).args(args));
        assert_eq!(code, 0, "{out}");
        assert!(!out.contains("warning"), "{out}");
    }
    let text = fs::read_to_string(dir.path().join(spec)).unwrap();
    fs::write(
        dir.path().join(spec),
        text.replace("labels = \"latin\"", "labels = \"cyrillic\""),
    )
    .unwrap();
    let mut views = Vec::new();
    for model in ["smollm2", "smollm2py"] {
        // The examples name Latin labels and fail now; the warning still shows.
        let (code, out) = run(harness(dir.path()).args(["check", spec, "-m", model]));
        assert_eq!(code, 2, "{out}");
        let warning = out
            .lines()
            .find(|l| l.contains("warning:"))
            .unwrap_or_else(|| panic!("no warning: {out}"));
        assert!(
            warning.contains("labels are not one token") && warning.contains("`Б` (`Б` ["),
            "{warning}"
        );
        views.push(warning.split_once(": ").unwrap().1.replace(model, "M"));
    }
    // One vocabulary behind both servers: the same ids.
    assert_eq!(views[0], views[1]);
}

/// `first_token` on llama-cpp-python's chat wire too (llama-server's is the
/// shipped spec's golden run): the first token's alternatives come back in
/// OpenAI's `logprobs.content` shape and every answer is scored from them.
#[test]
fn first_token_reads_llama_cpp_pythons_chat_logprobs() {
    let Some((_live, records, out)) = run_on_py("specs/ru_choice.toml", &["--runs", "3"]) else {
        return;
    };
    assert!(out.contains("ECE"), "{out}");
    assert_eq!(records.len(), 3, "{out}");
    for r in &records {
        assert!(r["error"].is_null(), "{r}");
        let top = &r["logprobs"]["tokens"][0]["top"];
        assert!(top.as_array().is_some_and(|t| t.len() > 1), "{r}");
        let probabilities = r["choice"]["probabilities"].as_array().unwrap();
        assert_eq!(probabilities.len(), 4, "{r}");
    }
}
