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

/// Every function list of the vendored BFCL subset (419 definitions in 250
/// rows, in BFCL's own type names) passes the definition checks.
#[test]
fn every_bfcl_function_list_passes_check() {
    let ws = crate::common::workspace::Workspace::new();
    let parts = [
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
    ];
    for part in parts {
        let data = root().join(format!("datasets/bfcl/{part}.jsonl"));
        ws.write(
            &format!("specs/{part}.toml"),
            &format!(
                "tools_var = \"function\"\n\n[dataset]\npath = {:?}\n\n[prompt]\nuser = \"{{{{ id }}}}\"\n\n[[verify]]\nrule = \"contains\"\nvalue = \"x\"\n",
                data.display().to_string()
            ),
        );
    }
    let (code, out) = run(harness(ws.path()).args(["check", "specs", "--bless"]));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("50 instances").count(), parts.len(), "{out}");
}
