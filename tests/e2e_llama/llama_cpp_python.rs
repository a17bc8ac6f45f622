//! llama-cpp-python's OpenAI-compatible server, a second real llama.cpp
//! wire: the same SmolLM2 GGUF served by the PyPI package's own build
//! (`scripts/llama-server.sh start smollm2py`), taking its turn with the
//! rest of `e2e_llama`.

use std::fs;

use super::{Live, assert_all_cached, journal, live};
use crate::common::{e2e_var, harness, run};

/// A shard of t06 against llama-cpp-python's server: every record a real
/// answer with usage and the model the server says answered, and a second run
/// asks nothing.
#[test]
fn llama_cpp_python_answers_a_spec_over_the_openai_wire_and_reruns_from_cache() {
    let Some(url) = e2e_var("HARNESS_LLAMA_PY_URL") else {
        return;
    };
    let Some(Live { dir, _servers, .. }) = live(false) else {
        return;
    };
    let config = dir.path().join("harness.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[models.smollm2py]\nprovider = \"openai\"\nmodel = \"smollm2\"\n\
         base_url = \"{url}/v1\"\nconcurrency = 1\ntimeout_secs = 300\n\
         options = {{ max_tokens = 48 }}\n"
    ));
    fs::write(&config, text).unwrap();
    let args = [
        "run",
        "specs/t06_mathematics.toml",
        "-m",
        "smollm2py",
        "--shard",
        "0/5",
        "--no-progress",
    ];
    let (code, out) = run(harness(dir.path()).args(args));
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(dir.path());
    assert_eq!(records.len(), 2, "{out}");
    for r in &records {
        assert!(r["error"].is_null(), "request failed: {r}");
        assert!(r["attempts"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["tokens_in"].as_u64().unwrap() > 0, "{r}");
        assert!(r["tokens_out"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["served_model"], "smollm2", "{r}");
    }
    let (_, out) = run(harness(dir.path()).args(args));
    assert_all_cached(dir.path(), 2, &out);
}
