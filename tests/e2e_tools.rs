//! Tool calls and agent episodes against the real llama-servers that
//! `scripts/test.sh` starts (SmolLM2 and Gemma 3, `--jinja` with the chat
//! templates in `scripts/`). The BFCL specs' golden transcripts are
//! reproduced by the live golden check in `e2e_llama`; the agent spec's
//! episodes are checked here, turn by turn.

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;

use crate::common::{harness, root, run};
use crate::e2e_llama::{Live, assert_all_cached, copy_dir, journal, live};

/// The shipped agent spec.
pub(crate) const AGENT: &str = "shop_agent";

/// A golden transcript's episodes by (instance, sample): trajectory and state.
fn golden_episodes(model: &str) -> BTreeMap<(u64, u64), (Value, Value)> {
    let path = root().join(format!("golden/{AGENT}/{model}.jsonl"));
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| {
            let key = (
                l["instance"].as_u64().unwrap(),
                l["sample"].as_u64().unwrap(),
            );
            (key, (l["trajectory"].clone(), l["state"].clone()))
        })
        .collect()
}

/// The agent spec with both real models: every record holds its whole
/// episode (each model turn with its calls, each tool result, the final
/// state), equal to the committed golden episode; the same run again asks
/// nothing.
#[test]
fn agent_episodes_reproduce_live_with_both_models_and_rerun_from_cache() {
    let Some(Live { dir, _servers, .. }) = live(true) else {
        return;
    };
    let golden = dir.path().join("golden").join(AGENT);
    copy_dir(&root().join("golden").join(AGENT), &golden);
    let spec = format!("specs/{AGENT}.toml");
    let args = [
        "run",
        &spec,
        "-m",
        "smollm2",
        "-m",
        "gemma3",
        "--no-progress",
        "-v",
    ];
    let started = std::time::Instant::now();
    let (code, out) = run(harness(dir.path()).args(args));
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(code, 0, "live episodes differ from the golden ones:\n{out}");
    let records = journal(dir.path());
    let mut turns = 0;
    for model in ["smollm2", "gemma3"] {
        let expected = golden_episodes(model);
        let mine: Vec<&Value> = records.iter().filter(|r| r["model"] == model).collect();
        assert_eq!(mine.len(), expected.len(), "{model}: {out}");
        for r in mine {
            assert!(r["error"].is_null(), "request failed: {r}");
            let steps = r["trajectory"].as_array().expect("a trajectory");
            let asked = steps.iter().filter(|m| m["role"] == "assistant").count();
            assert!(asked >= 1, "{r}");
            assert!(r["attempts"].as_u64().unwrap() >= asked as u64, "{r}");
            assert!(r["state"].is_object(), "the final state: {r}");
            turns += asked;
            let key = (
                r["instance"].as_u64().unwrap(),
                r["sample"].as_u64().unwrap(),
            );
            let (trajectory, state) = &expected[&key];
            assert_eq!(&r["trajectory"], trajectory, "{model} {key:?}: the episode");
            assert_eq!(&r["state"], state, "{model} {key:?}: the final state");
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
    let (code, out) = run(harness(dir.path()).args(args));
    assert_eq!(code, 0, "{out}");
    assert_all_cached(dir.path(), records.len(), &out);
}
