//! The shipped specs: they check clean against the committed golden files,
//! agree with the committed JSON Schema, and render as the snapshots show.

use crate::common::{harness, root, run};

/// `harness check` starts the MCP spec's servers (harness.toml's wrappers
/// run what `scripts/mcp-servers.sh` installed): with them installed every
/// spec is checked; without them (a plain `cargo test`, never under
/// `HARNESS_E2E`) every spec but that one.
#[test]
fn shipped_specs_check_clean() {
    let mut check = harness(&root());
    check.arg("check").env("CI", "true");
    let servers = std::process::Command::new(root().join("scripts/mcp-servers.sh"))
        .arg("paths")
        .output()
        .unwrap();
    if servers.status.success() {
        let text = String::from_utf8(servers.stdout).unwrap();
        check.arg("specs");
        check.envs(text.lines().filter_map(|l| l.split_once('=')));
    } else {
        assert!(
            std::env::var_os("HARNESS_E2E").is_none(),
            "scripts/mcp-servers.sh ensure has not run"
        );
        eprintln!("specs/mcp_memory.toml not checked: its MCP servers are not installed");
        let mut specs: Vec<_> = std::fs::read_dir(root().join("specs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .filter(|p| !p.ends_with("mcp_memory.toml"))
            .collect();
        specs.sort();
        check.args(specs);
    }
    let (code, out) = run(&mut check);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 failed"), "{out}");
}

#[test]
fn committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(root().join("schemas/spec.schema.json")).unwrap();
    assert_eq!(
        committed,
        harness::spec_schema_text(),
        "schemas/spec.schema.json is stale: run `harness schema > schemas/spec.schema.json`"
    );
    let (code, printed) = run(harness(&root()).arg("schema"));
    assert_eq!(code, 0);
    assert_eq!(printed, committed);
}

#[test]
fn every_shipped_spec_validates_against_the_schema() {
    let schema = harness::spec_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("specs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let value: serde_json::Value = toml::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} specs found");
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    let validator = jsonschema::validator_for(&harness::spec_schema()).unwrap();
    let bad: serde_json::Value = toml::from_str("tittle = 1\n[prompt]\nuser = 'x'").unwrap();
    assert!(!validator.is_valid(&bad));
    let bad: serde_json::Value =
        toml::from_str("[prompt]\nuser = 'x'\n[[verify]]\nrule = 'exact'\ntolerence = 1").unwrap();
    assert!(!validator.is_valid(&bad));
}

#[test]
fn show_renders_instances_readably() {
    let (code, out) = run(harness(&root()).args(["show", "specs/t06_mathematics.toml", "-n", "2"]));
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn show_json_matches_the_golden_instances() {
    let (code, out) =
        run(harness(&root()).args(["show", "specs/t06_mathematics.toml", "-n", "10", "--json"]));
    assert_eq!(code, 0, "{out}");
    let golden =
        std::fs::read_to_string(root().join("golden/t06_mathematics/instances.jsonl")).unwrap();
    assert_eq!(out, golden);
}

#[test]
fn instances_do_not_depend_on_how_many_are_asked_for() {
    let (_, three) =
        run(harness(&root()).args(["show", "specs/t06_mathematics.toml", "-n", "3", "--json"]));
    let (_, one) = run(harness(&root()).args([
        "show",
        "specs/t06_mathematics.toml",
        "-n",
        "1",
        "--start",
        "2",
        "--json",
    ]));
    assert_eq!(three.lines().nth(2), one.lines().next());
    let (_, other_seed) = run(harness(&root()).args([
        "show",
        "specs/t06_mathematics.toml",
        "-n",
        "3",
        "--json",
        "--seed",
        "99",
    ]));
    assert_ne!(three, other_seed);
}
