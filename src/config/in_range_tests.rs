//! `in_range`: every bounded key of harness.toml, on both sides of its range.

use super::super::Config;

/// A model table with `line` as its last line (line 3), and where the value starts.
fn model(line: &str) -> (String, String) {
    let text = format!("[models.m]\nprovider = \"openai\"\n{line}\n");
    let column = line.find('=').map_or(1, |i| i + 3);
    (text, format!(":3:{column}"))
}

#[test]
fn every_number_of_a_model_is_checked_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    let load = |line: &str| {
        std::fs::write(&path, model(line).0).unwrap();
        Config::load(&path, true)
    };
    // Each key with values on both sides of its range, and bad floats.
    let bad = [
        "concurrency = 0",
        "concurrency = 1025",
        "requests_per_minute = 0",
        "requests_per_minute = 1000001",
        "timeout_secs = 0",
        "timeout_secs = -5",
        "timeout_secs = 1e300",
        "timeout_secs = 86401",
        "timeout_secs = inf",
        "timeout_secs = nan",
        "timeout_secs = -inf",
        "timeout_secs = 1e999",
        "max_retries = 101",
        "max_n = 0",
        "max_n = 129",
        "max_prompts = 0",
        "max_prompts = 65",
        "options = { temperature = -0.5 }",
        "options = { temperature = 2.5 }",
        "options = { top_p = 0 }",
        "options = { top_p = 1.5 }",
        "options = { max_tokens = 0 }",
        "options = { num_ctx = 0 }",
        "options = { extra_body = { x = nan } }",
        "server = { ctx_size = 0 }",
        "server = { threads = 0 }",
        "server = { parallel = 2000 }",
        "server = { gpu_memory_utilization = 0 }",
        "server = { gpu_memory_utilization = 1.5 }",
        "server = { ready_timeout_secs = 0 }",
        "server = { ready_timeout_secs = inf }",
        // Integers past their type are the TOML reader's error, located alike.
        "max_n = 5000000000",
        "concurrency = -1",
        "max_retries = 99999999999999999999",
        "concurrency = \"fast\"",
        "reasoning = { budget_tokens = 0 }",
        "reasoning = { enabled = true }",
        "reasoning = { effort = \"hgih\" }",
    ];
    for line in bad {
        let e = load(line).expect_err(line);
        assert_eq!(e.location.line, 3, "{line}: {e}");
        let value = line
            .rsplit('=')
            .next()
            .unwrap()
            .trim()
            .trim_end_matches(['}', ' ']);
        assert_eq!(
            e.location.column,
            line.rfind(value).unwrap() + 1,
            "{line}: {e}"
        );
    }
    let good = [
        "concurrency = 1024",
        "concurrency = \"auto\"",
        "requests_per_minute = 1",
        "timeout_secs = 0.5",
        "timeout_secs = 86400",
        "max_retries = 0",
        "max_prompts = 64",
        "max_n = 128",
        "options = { temperature = 2, top_p = 1, max_tokens = 1, num_ctx = 1 }",
        "server = { gpu_memory_utilization = 1.0, ready_timeout_secs = 1 }",
    ];
    for line in good {
        if let Err(e) = load(line) {
            panic!("{line}: {e}");
        }
    }
}

#[test]
fn an_auto_ceiling_is_in_range_located_and_only_with_auto() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    let head = "[models.m]\nprovider = \"openai\"\n";
    // (the model's last two lines, the error's location, what it says)
    let bad = [
        (
            "concurrency = \"auto\"\nmax_concurrency = 0",
            ":4:19",
            "from 1 to 1024",
        ),
        (
            "concurrency = \"auto\"\nmax_concurrency = 1025",
            ":4:19",
            "from 1 to 1024",
        ),
        (
            "concurrency = 8\nmax_concurrency = 16",
            ":4:19",
            "ceiling of concurrency = \"auto\"",
        ),
        (
            "max_concurrency = 16\nconcurrency = 1",
            ":3:19",
            "ceiling of concurrency = \"auto\"",
        ),
    ];
    for (lines, at, says) in bad {
        std::fs::write(&path, format!("{head}{lines}\n")).unwrap();
        let e = Config::load(&path, true).expect_err(lines).to_string();
        assert!(e.contains(at) && e.contains(says), "{lines}: {e}");
    }
    // (the model's lines, the ceiling and whether it adapts)
    let good = [
        ("concurrency = \"auto\"\nmax_concurrency = 12", 12, true),
        ("concurrency = \"auto\"", 64, true),
        ("concurrency = 12", 12, false),
        ("", 4, false),
    ];
    for (lines, ceiling, adaptive) in good {
        std::fs::write(&path, format!("{head}{lines}\n")).unwrap();
        let config = Config::load(&path, true).unwrap();
        let m = config.resolve_model("m").unwrap();
        assert_eq!((m.concurrency, m.adaptive), (ceiling, adaptive), "{lines}");
    }
}

#[test]
fn auto_is_for_remote_servers_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    for provider in ["llamacpp", "vllm", "exec"] {
        let text = format!("[models.m]\nprovider = \"{provider}\"\nconcurrency = \"auto\"\n");
        std::fs::write(&path, text).unwrap();
        let e = Config::load(&path, true).expect_err(provider).to_string();
        assert!(
            e.contains(":3:15") && e.contains("needs a number"),
            "{provider}: {e}"
        );
    }
    for provider in ["openai", "ollama"] {
        let text = format!("[models.m]\nprovider = \"{provider}\"\nconcurrency = \"auto\"\n");
        std::fs::write(&path, text).unwrap();
        assert!(Config::load(&path, true).is_ok(), "{provider}");
    }
}

#[test]
fn the_message_names_the_key_the_value_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    for (line, says) in [
        (
            "timeout_secs = -5",
            "timeout_secs = -5 is out of range: timeout_secs takes a number above 0 and at most 86400",
        ),
        ("timeout_secs = inf", "inf is not a finite number"),
        (
            "requests_per_minute = 0",
            "requests_per_minute takes a whole number from 1 to 1000000",
        ),
        ("max_n = 5000000000", "5000000000"),
    ] {
        let (text, at) = model(line);
        std::fs::write(&path, &text).unwrap();
        let e = Config::load(&path, true).unwrap_err().to_string();
        assert!(e.contains(says), "{line}: {e}");
        assert!(e.contains(&at), "{line} at {at}: {e}");
    }
}

#[test]
fn run_numbers_out_of_range_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("[run]\nruns = 0\n", "2:8", "from 1 to 1000000"),
        ("[run]\nruns = 2000000\n", "2:8", "from 1 to 1000000"),
        ("[run]\nmax_cost = -1.0\n", "2:12", "number of 0 or more"),
        ("[run]\nmax_tokens_total = 0\n", "2:20", "of 1 or more"),
    ];
    for (text, at, says) in cases {
        let path = dir.path().join("harness.toml");
        std::fs::write(&path, text).unwrap();
        let err = Config::load(&path, true).unwrap_err().to_string();
        assert!(err.contains(at) && err.contains(says), "{text}: {err}");
    }
    std::fs::write(dir.path().join("harness.toml"), "[run]\nruns = 3\n").unwrap();
    let ok = Config::load(&dir.path().join("harness.toml"), true).unwrap();
    assert_eq!(ok.run.runs, Some(3));
}

#[test]
fn file_caps_are_in_range_and_located_and_reach_the_file_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    // (the [limits] line, its value's column, what the error says)
    let bad = [
        ("dataset_bytes = 0", 17, "dataset_bytes = 0 is out of range"),
        (
            "spec_bytes = 1023",
            14,
            "spec_bytes takes a whole number from 1024 to 1099511627776",
        ),
        (
            "golden_bytes = 1099511627777",
            16,
            "from 1024 to 1099511627776",
        ),
        ("plan_bytes = -1", 14, "u64"),
        ("script_bytes = inf", 16, "inf is not a finite number"),
        ("document_bytes = 1.5e9", 18, "invalid type"),
        ("config_bytes = 4096", 1, "unknown key `config_bytes`"),
    ];
    for (line, column, says) in bad {
        std::fs::write(&path, format!("[run]\nruns = 1\n[limits]\n{line}\n")).unwrap();
        let e = Config::load(&path, true).expect_err(line);
        let at = (e.location.line, e.location.column);
        assert_eq!(at, (4, column), "{line}: {e}");
        assert!(e.to_string().contains(says), "{line}: {e}");
    }
    let text = "[limits]\ndataset_bytes = 4294967296\ntools_file_bytes = 1024\n";
    std::fs::write(&path, text).unwrap();
    let limits = Config::load(&path, true).unwrap().limits.file_limits();
    use crate::files::FileKind;
    assert_eq!(limits.cap(FileKind::Dataset), 4 << 30);
    assert_eq!(limits.cap(FileKind::Tools), 1024);
    assert_eq!(limits.cap(FileKind::Spec), FileKind::Spec.default_limit());
}

#[test]
fn max_response_bytes_reaches_the_model_and_out_of_range_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.toml");
    let model = "[models.m]\nprovider = \"openai\"\n";
    for bad in ["10", "8589934592"] {
        std::fs::write(&path, format!("{model}max_response_bytes = {bad}\n")).unwrap();
        let e = Config::load(&path, true).unwrap_err().to_string();
        assert!(
            e.contains("3:22") && e.contains("max_response_bytes takes"),
            "{e}"
        );
    }
    std::fs::write(&path, format!("{model}max_response_bytes = 2048\n")).unwrap();
    let config = Config::load(&path, true).unwrap();
    assert_eq!(config.resolve_model("m").unwrap().max_response_bytes, 2048);
    let exec = "[models.m]\nprovider = \"exec\"\ncommand = [\"x\"]\nmax_response_bytes = 2048\n";
    std::fs::write(&path, exec).unwrap();
    let config = Config::load(&path, true).unwrap();
    let e = config.resolve_model("m").unwrap_err().to_string();
    assert!(e.contains("its own cap"), "{e}");
    let default = Config::default().resolve_model("openai:x").unwrap();
    assert_eq!(default.max_response_bytes, 64 << 20);
}
