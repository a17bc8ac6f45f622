//! End-to-end runs of the shipped specs against a real llama.cpp server.
//!
//! `scripts/test.sh` builds (or reuses) llama-server, starts SmolLM2-135M and
//! Gemma 3 270M on loopback, two servers of each and two more SmolLM2 for
//! the judge (each pair one pool), and exports their base URLs; these tests
//! then drive the real binary over the real wire. Without the variables (a
//! plain `cargo test` on a laptop) they say so and return; with
//! `HARNESS_E2E=1` set and no server they fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

use crate::common::{copy_dir, e2e_var, golden_lines, harness, locks, report, root, run};

/// A third of every committed golden transcript, re-asked live.
mod golden;
/// llama-cpp-python's server, beside llama-server.
mod llama_cpp_python;
/// The shipped MCP spec against the real MCP servers.
mod mcp_spec;
/// Reasoning from both CI models on managed thinking servers.
mod reasoning;
/// `harness synth` against the real server.
mod synth;

/// The `loglikelihood` spec, whose transcripts come from llama-cpp-python's server.
pub(crate) const LOGLIKELIHOOD: &str = "specs/ru_choice_loglikelihood.toml";

/// A repository-shaped temp directory: the shipped specs and schemas, our
/// datasets linked in at the same relative place (so dataset paths resolve),
/// and the CI models' harness.toml.
pub(crate) struct Workspace {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
}

impl Workspace {
    /// The repository's root.
    pub(crate) fn path(&self) -> &Path {
        &self.repo
    }
}

/// One test's state: its workspace, SmolLM2's base URL, and the servers to
/// itself (llama.cpp batches concurrent requests, which changes greedy
/// outputs, and the golden comparison needs the server alone).
pub(crate) struct Live {
    pub(crate) dir: Workspace,
    smol: String,
    pub(crate) _servers: MutexGuard<'static, ()>,
}

/// The live state for SmolLM2, and Gemma too when `with_gemma`; `None` when the tests skip.
pub(crate) fn live(with_gemma: bool) -> Option<Live> {
    let servers = locks::real_llama();
    let smol = e2e_var("HARNESS_LLAMA_URL")?;
    let smol2 = e2e_var("HARNESS_LLAMA2_URL")?;
    let judge = judges()?;
    let gemma = match with_gemma {
        true => [
            e2e_var("HARNESS_GEMMA_URL")?,
            e2e_var("HARNESS_GEMMA2_URL")?,
        ],
        // Not asked: the discard port, where nothing answers.
        false => ["http://127.0.0.1:9".into(), "http://127.0.0.1:9".into()],
    };
    Some(Live {
        dir: workspace(&[smol.clone(), smol2], &gemma, &judge),
        smol,
        _servers: servers,
    })
}

/// The live state on the servers with long slots (`smollm2long`,
/// `gemma3long`: 8,192 tokens a slot), one of each model, as the τ² retail
/// conversations need and were recorded on; `None` when the tests skip.
pub(crate) fn live_long() -> Option<Live> {
    let servers = locks::real_llama();
    let smol = e2e_var("HARNESS_LLAMA_LONG_URL")?;
    let gemma = e2e_var("HARNESS_GEMMA_LONG_URL")?;
    let judge = judges()?;
    let one = |url: &str| format!("\"{url}/v1\"");
    Some(Live {
        dir: workspace_with(&one(&smol), &one(&gemma), &pool(&judge)),
        smol,
        _servers: servers,
    })
}

/// The judge's two servers; `None` when the tests skip.
fn judges() -> Option<[String; 2]> {
    Some([
        e2e_var("HARNESS_JUDGE_URL")?,
        e2e_var("HARNESS_JUDGE2_URL")?,
    ])
}

/// A pool of two servers as a `base_url` value.
fn pool(urls: &[String; 2]) -> String {
    format!("[\"{}/v1\", \"{}/v1\"]", urls[0], urls[1])
}

fn workspace(smol: &[String; 2], gemma: &[String; 2], judge: &[String; 2]) -> Workspace {
    workspace_with(&pool(smol), &pool(gemma), &pool(judge))
}

/// The workspace with each model's `base_url` value.
fn workspace_with(smol: &str, gemma: &str, judge: &str) -> Workspace {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(&root().join("specs"), &repo.join("specs"));
    // The two tiny LLMs read no images: the OCR spec's golden transcripts are
    // Tesseract's, reproduced live by tests/ocr.rs.
    fs::remove_file(repo.join("specs/ocr_lines.toml")).unwrap();
    // Its transcripts are llama-cpp-python's: llama-server echoes no prompt
    // log-probabilities (tests/e2e_llama/llama_cpp_python.rs runs both).
    fs::remove_file(repo.join(LOGLIKELIHOOD)).unwrap();
    copy_dir(&root().join("schemas"), &repo.join("schemas"));
    // harness.toml's [[mcp]] servers start through these wrappers.
    copy_dir(&root().join("scripts/mcp"), &repo.join("scripts/mcp"));
    std::os::unix::fs::symlink(root().join("datasets"), repo.join("datasets")).unwrap();
    // The judged variant of t05 reads t05's generated instances.
    let t05 = "golden/t05_summarization/instances.jsonl";
    fs::create_dir_all(repo.join(t05).parent().unwrap()).unwrap();
    fs::copy(root().join(t05), repo.join(t05)).unwrap();
    let dir = Workspace { _tmp: tmp, repo };
    let template = fs::read_to_string(root().join("tests/fixtures/llama/harness.toml.in")).unwrap();
    // Each model, and the judge, as a pool of two identical servers, one
    // request at a time on each: every answer is still one server's alone,
    // as the transcripts were recorded, and the servers keep both cores busy
    // to the end.
    let config = template
        .replace("\"__SMOL__/v1\"", smol)
        .replace("\"__GEMMA__/v1\"", gemma)
        .replace("\"__JUDGE__/v1\"", judge);
    fs::write(dir.path().join("harness.toml"), config).unwrap();
    dir
}

/// The records of the last run in `dir`.
pub(crate) fn journal(dir: &Path) -> Vec<serde_json::Value> {
    let runs = dir.join("results/runs");
    let mut ids: Vec<_> = fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    ids.sort();
    golden_lines::journal_lines(&ids.last().unwrap().join("journal.jsonl"))
}

/// `harness run TARGET -m MODEL --runs RUNS --no-progress`.
fn run_args<'a>(target: &'a str, model: &'a str, runs: &'a str) -> [&'a str; 7] {
    ["run", target, "-m", model, "--runs", runs, "--no-progress"]
}

/// Runs `harness run TARGET -m MODEL --runs RUNS` again: `expected` records, every one from the cache, zero HTTP requests.
fn rerun_from_cache(dir: &Path, target: &str, model: &str, runs: &str, expected: usize) {
    let (_, out) = run(harness(dir).args(run_args(target, model, runs)));
    assert_all_cached(dir, expected, &out);
}

/// The last run in `dir` wrote `expected` records, every one from the cache,
/// with zero HTTP requests.
pub(crate) fn assert_all_cached(dir: &Path, expected: usize, out: &str) {
    let again = journal(dir);
    assert_eq!(again.len(), expected, "{out}");
    assert!(
        again
            .iter()
            .all(|r| r["cached"] == true && r["attempts"] == 0),
        "{out}"
    );
    assert!(out.contains("0 attempts"), "{out}");
}

/// `harness run TARGET -m smollm2 --runs RUNS --no-progress EXTRA...`: the
/// output and the journal, each record checked to be a real answer with usage.
fn run_smollm2(
    dir: &Path,
    target: &str,
    runs: &str,
    extra: &[&str],
) -> (String, Vec<serde_json::Value>) {
    let (code, out) = run(harness(dir)
        .args(run_args(target, "smollm2", runs))
        .args(extra));
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(dir);
    for r in &records {
        assert!(r["error"].is_null(), "request failed: {r}");
        assert!(r["response"].is_string());
        assert!(
            r["tokens_out"].as_u64().unwrap() > 0,
            "usage tokens missing: {r}"
        );
        // A request another spec already made (t05 and its judged variant ask the
        // same prompts) is answered from the cache, with no attempt.
        assert!(
            r["attempts"].as_u64().unwrap() >= 1 || r["cached"] == true,
            "{r}"
        );
    }
    (out, records)
}

/// `harness run TARGET -m smollm2 -m gemma3 --no-progress -v EXTRA...`: the
/// live tests that compare both models with their golden transcripts.
pub(crate) fn both_models<'a>(target: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        target,
        "-m",
        "smollm2",
        "-m",
        "gemma3",
        "--no-progress",
        "-v",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn structured_output_with_a_json_schema_over_the_real_wire() {
    let Some(Live { dir, _servers, .. }) = live(false) else {
        return;
    };
    fs::write(
        dir.path().join("specs/route.schema.json"),
        r#"{"type":"object","properties":{"reasoning":{"type":"string","maxLength":200},"route_id":{"type":"integer"}},"required":["reasoning","route_id"],"additionalProperties":false}"#,
    )
    .unwrap();
    fs::write(
        dir.path().join("specs/route_probe.toml"),
        r#"
runs = 4
[generate]
script = '#{ right: rng.int(1, 3) }'
[prompt]
system = "Выбери маршрут. Ответь JSON: {\"reasoning\": \"...\", \"route_id\": N}."
user = "1 - оплата, 2 - доставка, 3 - возврат. Клиент: где мой заказ? (подсказка: {{ right }})"
[request]
max_tokens = 96
response_format = "json_schema"
schema = "route.schema.json"
[[verify]]
rule = "json_field"
schema = "route.schema.json"
fields = { "/route_id" = "right" }
"#,
    )
    .unwrap();
    let (code, out) = run(harness(dir.path()).args([
        "run",
        "specs/route_probe.toml",
        "-m",
        "smollm2",
        "--no-progress",
    ]));
    assert!(code == 0 || code == 1, "{out}");
    for r in journal(dir.path()) {
        let failure = r["failure"].as_str().unwrap_or("");
        assert!(
            failure != "invalid_json" && failure != "schema_mismatch",
            "the server's constrained output must parse and satisfy the schema: {r}"
        );
    }
}

#[test]
fn rrr_reports_per_split_accuracy_and_the_rrr_csv_from_the_real_server() {
    let Some(Live { dir, _servers, .. }) = live(false) else {
        return;
    };
    // One row per split: instances interleave the splits, so 4 covers all four.
    let (out, records) = run_smollm2(dir.path(), "specs/rrr.toml", "4", &[]);
    assert_eq!(records.len(), 4, "{out}");
    assert!(out.contains(" by split "), "{out}");
    let text = report(&dir.path().join("results"), "rrr_smollm2_", "csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 4, "{text}");
    for (line, split) in lines[1..]
        .iter()
        .zip(["routes_3", "routes_5", "routes_7", "routes_9"])
    {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 12, "{line}");
        assert!(
            cells.iter().all(|c| !c.is_empty()),
            "every column filled: {line}"
        );
        // Size and quantization come from the model id in harness.toml.
        assert_eq!(
            (cells[0], cells[1], cells[2], cells[3]),
            ("smollm2", "smollm2", "135M", "Q4_1"),
            "{line}"
        );
        assert_eq!(
            (cells[4], cells[5], cells[6]),
            ("rrr_ru", split, "1"),
            "{line}"
        );
        assert!(cells[10].parse::<f64>().unwrap() > 0.0, "{line}");
        assert!(cells[11].parse::<f64>().unwrap() > 0.0, "{line}");
    }
}

#[test]
fn sampled_aime_with_n_4_in_one_request_records_four_samples_and_reruns_from_cache() {
    let Some(Live {
        dir,
        smol,
        _servers,
    }) = live(false)
    else {
        return;
    };
    // Four samples, asked as one request of n = 4 (CI's llama-server has 4 slots).
    let spec = fs::read_to_string(dir.path().join("specs/aime.toml"))
        .unwrap()
        .replace("n = 8\n", "n = 4\n")
        .replace("k = [1, 8]", "k = [1, 4]");
    fs::write(dir.path().join("specs/aime.toml"), spec).unwrap();
    let config = fs::read_to_string(dir.path().join("harness.toml")).unwrap()
        + &*format!(
            "\n[models.smollm2_n4]\nprovider = \"openai\"\nmodel = \"SmolLM2-135M-Instruct.Q4_1\"\n\
             base_url = \"{smol}/v1\"\nconcurrency = 1\nmax_n = 4\ntimeout_secs = 300\n\
             options = {{ max_tokens = 64, extra_body = {{ cache_prompt = false }} }}\n"
        );
    fs::write(dir.path().join("harness.toml"), config).unwrap();
    let args = run_args("specs/aime.toml", "smollm2_n4", "2");
    let (code, out) = run(harness(dir.path()).args(args));
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(dir.path());
    assert_eq!(records.len(), 2 * 4, "{out}");
    let keys: std::collections::BTreeSet<(u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r["instance"].as_u64().unwrap(),
                r["sample"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys.len(), 8, "4 distinct journal lines per problem: {out}");
    for r in &records {
        assert!(r["error"].is_null(), "request failed: {r}");
        // llama-server's usage counts one choice: it is kept as the request's, not split.
        assert_eq!(r["shared"]["choices"], 4, "{r}");
        assert!(r["shared"]["tokens_out"].as_u64().unwrap() > 0, "{r}");
        assert!(r["tokens_out"].is_null(), "{r}");
        assert!(r["tokens_in"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(
        out.contains("8 records written (0 from cache, 2 attempts)"),
        "{out}"
    );
    for instance in 0..2u64 {
        let responses: std::collections::BTreeSet<&str> = records
            .iter()
            .filter(|r| r["instance"] == instance)
            .map(|r| r["response"].as_str().unwrap())
            .collect();
        assert!(
            responses.len() > 1,
            "samples at temperature 0.3 differ: {responses:#?}"
        );
    }
    assert!(out.contains("pass@4"), "{out}");

    rerun_from_cache(dir.path(), "specs/aime.toml", "smollm2_n4", "2", 8);
}

#[test]
fn a_judged_run_with_llama_server_as_the_judge_scores_or_flags_every_answer_and_reruns_from_cache()
{
    let Some(Live { dir, _servers, .. }) = live(false) else {
        return;
    };
    let (out, records) = run_smollm2(dir.path(), "specs/rubric_quality.toml", "2", &[]);
    assert_eq!(records.len(), 2, "{out}");
    for r in &records {
        let judge = &r["rules"][0]["judge"];
        assert_eq!(judge["judge"], "judge", "{r}");
        // The schema is enforced by the server's grammar: every sample is JSON with a
        // rubric level, or the record says why not. Nothing is scored silently.
        match judge["level"].as_f64() {
            Some(level) => {
                assert!((1.0..=5.0).contains(&level), "{r}");
                assert_eq!(r["score"].as_f64().unwrap(), (level - 1.0) / 4.0, "{r}");
                assert!(judge["attempts"].as_u64().unwrap() >= 1, "{r}");
            }
            None => assert_eq!(r["failure"], "judge_error", "{r}"),
        }
    }
    assert!(
        records
            .iter()
            .any(|r| r["rules"][0]["judge"]["level"].is_number()),
        "the real judge never gave a level: {records:#?}"
    );
    // Again: model and judge answers both from the cache.
    let rubric = "specs/rubric_quality.toml";
    rerun_from_cache(dir.path(), rubric, "smollm2", "2", records.len());
}
