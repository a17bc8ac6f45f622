//! The committed golden transcripts, re-asked live against the shared
//! llama-servers.

use std::fs;

use super::{Live, assert_all_cached, both_models, copy_dir, journal, live, mcp_spec};
use crate::common::{golden_lines, harness, root, run};

/// The committed golden transcripts, re-asked live: a seventh of every shipped
/// spec with both models (`--shard 6/7`, the plan's own balanced slice: each
/// spec's instances spread over the shards, so every rule and wire form is
/// asked; of specs that declare `[golden] instances`, their subset), at
/// temperature 0 where the spec says so, one request at a time per server and
/// no prompt cache, as they were recorded. Any drift fails with the diff. A
/// seventh proves the point (the transcripts are what the server answers)
/// at a seventh of the cost of all (a third took 650-740 s, the longest
/// phase of the test command); every transcript is replayed whole by
/// `main_job` and `shards`. Which spec falls in which shard depends on the
/// specs copied: 6/7 is the seventh that asks each of them, and the test
/// checks it still does. The same run again then answers everything from
/// the response cache.
#[test]
fn a_seventh_of_every_golden_transcript_reproduces_live_and_reruns_from_cache() {
    let Some(Live { dir, _servers, .. }) = live(true) else {
        return;
    };
    copy_dir(&root().join("golden"), &dir.path().join("golden"));
    // The agent spec's episodes have a test of their own (tests/e2e_tools.rs).
    let agent = format!("specs/{}.toml", crate::e2e_tools::AGENT);
    fs::remove_file(dir.path().join(agent)).unwrap();
    fs::remove_file(dir.path().join(mcp_spec::MCP_SPEC)).unwrap();
    // So have the conversations (tests/agent_user.rs, tests/tau2_retail.rs):
    // their turns are the slowest requests of all.
    fs::remove_file(dir.path().join(crate::agent_user::DIALOGUE)).unwrap();
    fs::remove_file(dir.path().join(crate::tau2_retail::SPEC)).unwrap();
    let args = both_models(
        "specs",
        &["--golden-subset", "--shard", "6/7", "--format", "junit"],
    );
    let started = std::time::Instant::now();
    let (code, out) = run(harness(dir.path()).args(&args));
    eprintln!(
        "live golden check: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, 0, "{out}");
    let records = journal(dir.path());
    // A shard leaves the golden comparison to the merge: compare here.
    golden_lines::assert_as_golden(&records, &root().join("golden"), "live answers");
    assert!(records.len() >= 60, "a seventh of every spec: {out}");
    // Every spec copied is asked: the slice holds some of each.
    let asked: std::collections::BTreeSet<&str> =
        records.iter().filter_map(|r| r["spec"].as_str()).collect();
    for entry in fs::read_dir(dir.path().join("specs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let id = path.file_stem().and_then(|s| s.to_str()).unwrap();
            assert!(asked.contains(id), "{id}: not asked by the slice");
        }
    }
    for r in &records {
        assert!(r["error"].is_null(), "request failed: {r}");
        assert!(r["response"].is_string(), "{r}");
        assert!(r["tokens_out"].as_u64().unwrap() > 0, "usage missing: {r}");
        // t05 and its judged variant ask the same prompts: the second asks none.
        assert!(
            r["attempts"].as_u64().unwrap() >= 1 || r["cached"] == true,
            "{r}"
        );
    }
    assert!(
        fs::read_dir(dir.path().join("results/reports"))
            .unwrap()
            .count()
            >= 2,
        "{out}"
    );

    // The same plan again: every answer from the cache, zero HTTP requests.
    let (code, out) = run(harness(dir.path()).args(&args));
    assert_eq!(code, 0, "{out}");
    assert_all_cached(dir.path(), records.len(), &out);
}
