//! The shipped MCP spec against the real servers from the package
//! registries (npm's server-memory and server-everything, a server on
//! PyPI's `mcp`), reached through harness.toml's `[[mcp]]` wrappers, with
//! both CI models as the agent, taking its turn on the llama servers.

use super::{Live, assert_all_cached, both_models, copy_dir, journal, live};
use crate::common::{golden_lines, harness, root, run};

/// The spec whose servers harness.toml names.
pub(crate) const MCP_SPEC: &str = "specs/mcp_memory.toml";

/// An episode with each model (`--runs 1`: the first task; `main_job`
/// replays all four), with the servers' real results and their final graph
/// and ledger, equals its golden one; the same run again asks nothing.
#[test]
fn the_mcp_spec_reproduces_live_against_the_real_servers() {
    let Some(Live { dir, _servers, .. }) = live(true) else {
        return;
    };
    assert!(
        std::env::var_os("MCP_MEMORY_BIN").is_some() || std::env::var_os("HARNESS_E2E").is_none(),
        "scripts/test.sh exports the installed servers' paths"
    );
    let id = "mcp_memory";
    copy_dir(
        &root().join("golden").join(id),
        &dir.path().join("golden").join(id),
    );
    let args = both_models(MCP_SPEC, &["--runs", "1"]);
    let (code, out) = run(harness(dir.path()).args(&args));
    // 1: the other task's episodes are "only in golden"; what was asked is
    // compared line by line below.
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(dir.path());
    assert_eq!(records.len(), 2, "{out}");
    assert_ne!(records[0]["model"], records[1]["model"], "{out}");
    golden_lines::assert_as_golden(&records, &dir.path().join("golden"), "live episodes");
    // The servers answered: a real result of each model's first call.
    for r in &records {
        assert!(r["error"].is_null(), "{r}");
        let first = &r["trajectory"][1];
        assert_eq!(first["role"], "tool", "{r}");
        assert!(r["state"]["mcp"].is_object(), "final states read back: {r}");
    }
    let (code, out) = run(harness(dir.path()).args(&args));
    assert!(code == 0 || code == 1, "{out}");
    assert_all_cached(dir.path(), records.len(), &out);
}
