//! Tool calls and agent episodes against the real llama-servers that
//! `scripts/test.sh` starts (SmolLM2 and Gemma 3, `--jinja` with the chat
//! templates in `scripts/`). The BFCL specs' golden transcripts are
//! reproduced by the live golden check in `e2e_llama`; the agent spec's
//! episodes are checked here, turn by turn.

use serde_json::Value;

use crate::common::{copy_dir, golden_lines, harness, root, run};
use crate::e2e_llama::{Live, assert_all_cached, both_models, journal, live};

/// The shipped agent spec.
pub(crate) const AGENT: &str = "shop_agent";

/// The agent spec with both real models, an eighth of its episodes
/// (`--shard 0/8`, one of the eight golden ones per model, each of four
/// turns: they prove the wire, the calls and the state; the replayed shipped
/// specs in `main_job` cover all eight): every record holds its whole episode
/// (each model turn with its calls, each tool result, the final state),
/// equal to the committed golden line; the same run again asks nothing.
#[test]
fn agent_episodes_reproduce_live_with_both_models_and_rerun_from_cache() {
    let Some(Live { dir, _servers, .. }) = live(true) else {
        return;
    };
    let golden = dir.path().join("golden").join(AGENT);
    copy_dir(&root().join("golden").join(AGENT), &golden);
    let spec = format!("specs/{AGENT}.toml");
    let args = both_models(&spec, &["--shard", "0/8"]);
    let started = std::time::Instant::now();
    let (code, out) = run(harness(dir.path()).args(&args));
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(code, 0, "{out}");
    let records = journal(dir.path());
    golden_lines::assert_as_golden(&records, &dir.path().join("golden"), "live episodes");
    let mut turns = 0;
    for model in ["smollm2", "gemma3"] {
        let mine: Vec<&Value> = records.iter().filter(|r| r["model"] == model).collect();
        assert!(!mine.is_empty(), "{model}: {out}");
        for r in mine {
            assert!(r["error"].is_null(), "request failed: {r}");
            let steps = r["trajectory"].as_array().expect("a trajectory");
            let asked = steps.iter().filter(|m| m["role"] == "assistant").count();
            assert!(asked >= 1, "{r}");
            assert!(r["attempts"].as_u64().unwrap() >= asked as u64, "{r}");
            assert!(r["state"].is_object(), "the final state: {r}");
            turns += asked;
        }
    }
    eprintln!(
        "agent episodes: {} records, {turns} model turns, {secs:.0} s",
        records.len()
    );
    assert!(
        turns > records.len(),
        "some episode takes more than one turn: {out}"
    );
    let (code, out) = run(harness(dir.path()).args(&args));
    assert_eq!(code, 0, "{out}");
    assert_all_cached(dir.path(), records.len(), &out);
}
