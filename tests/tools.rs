//! Tools in a spec: `harness show` renders each instance's tools, the spec's
//! own and a dataset row's, and `show --json` and the golden instances carry
//! them. Malformed tool definitions are in `malformed_specs`' corpus.

use serde_json::Value;

use crate::common::{harness, root, run};

/// `harness show` of a documented example spec's first instance.
fn show(spec: &str, extra: &[&str]) -> String {
    let (code, out) = run(harness(&root())
        .args(["show", spec, "--count", "1"])
        .args(extra));
    assert_eq!(code, 0, "{out}");
    out
}

#[test]
fn show_renders_inline_file_and_dataset_tools() {
    let text = [
        "docs/examples/specs/tools.toml",
        "docs/examples/specs/tools_dataset.toml",
    ]
    .map(|spec| show(spec, &[]))
    .join("\n");
    insta::assert_snapshot!(text);
}

#[test]
fn show_json_keeps_the_definitions_as_written() {
    let out = show("docs/examples/specs/tools_dataset.toml", &["--json"]);
    let instance: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let tools = instance["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "calculate_triangle_area");
    // BFCL's own type names stay for the rules that will read them.
    assert_eq!(tools[0]["parameters"]["type"], "dict");
    let plain = show("docs/examples/specs/arithmetic.toml", &["--json"]);
    assert!(!plain.contains("\"tools\""), "{plain}");
}
