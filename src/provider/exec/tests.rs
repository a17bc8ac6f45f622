use std::time::{Duration, Instant};

use serde_json::json;

use super::child::{STDERR_TAIL, environment, run, stderr_tail};
use super::*;
use crate::provider::OutputKind;

fn options(command: &[&str]) -> ExecOptions {
    ExecOptions {
        command: command.iter().map(|s| s.to_string()).collect(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        env_set: BTreeMap::new(),
    }
}

fn vars() -> Map<String, Value> {
    json!({"image": "a b.png", "lang": "ru", "model": "shadowed"})
        .as_object()
        .unwrap()
        .clone()
}

#[test]
fn arguments_render_from_the_instance_and_the_builtins() {
    let o = options(&[
        "ocr",
        "{{ spec_dir }}/{{ image }}",
        "{% if lang == 'ru' %}rus{% else %}eng{% endif %}",
        "{{ model }}",
        "{{ images | length }}",
    ]);
    o.check().unwrap();
    let vars = vars();
    let context = ExecContext {
        model: "tess",
        vars: &vars,
        spec_dir: Some(Path::new("/p/specs")),
        messages: &[],
    };
    let call = o.call(&context).unwrap();
    // One argument stays one argument, spaces and all; `model` is the builtin.
    assert_eq!(call.argv, ["ocr", "/p/specs/a b.png", "rus", "tess", "0"]);
    assert_eq!(call.vars, vars);
    // An unknown name is told by name; an index past a list's end by position.
    let missing = options(&["ocr", "{{ range(2) | join }}{{ nope }}"]).call(&context);
    assert_eq!(
        missing.unwrap_err(),
        CommandError::UnknownVariable {
            index: 1,
            name: "nope".into()
        }
    );
    let past = options(&["ocr", "{{ images[0] }}"])
        .call(&context)
        .unwrap_err();
    assert!(
        past.to_string()
            .starts_with("`command[1]`, line 1 column 4"),
        "{past}"
    );
    assert_eq!(
        options(&["{{ '' }}"]).call(&context).unwrap_err(),
        CommandError::NoProgram
    );
    assert_eq!(options(&[]).check().unwrap_err(), CommandError::Empty);
}

#[test]
fn images_are_absolute_files_and_keys_name_them_by_digest() {
    let o = options(&[
        "ocr",
        "{{ images[0] }}",
        "{{ spec_dir }}/../data/{{ image }}",
    ]);
    let vars = vars();
    let mut message: Message =
        serde_json::from_value(json!({"role": "user", "content": "read it"})).unwrap();
    message.images.push(crate::media::ImageRef {
        path: "data/a.png".into(),
        file: "/home/u/repo/data/a.png".into(),
        mime: "image/png".into(),
        sha256: "ab12".into(),
        size: 7,
    });
    let context = ExecContext {
        model: "tess",
        vars: &vars,
        spec_dir: Some(Path::new("/home/u/repo/specs")),
        messages: std::slice::from_ref(&message),
    };
    let call = o.call(&context).unwrap();
    assert_eq!(
        call.argv,
        [
            "ocr",
            "/home/u/repo/data/a.png",
            "/home/u/repo/specs/../data/a b.png"
        ]
    );
    // Another checkout renders other paths but keys the same call.
    assert_eq!(
        call.portable().argv,
        ["ocr", "<image ab12>", "<spec_dir>/../data/a b.png"]
    );
    assert!(call.portable().local.is_empty());
}

#[test]
fn stdin_holds_the_request_and_the_instance() {
    let request: ChatRequest = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": "read it"}],
        "temperature": 0.0, "max_tokens": 64, "seed": 7,
        "format": {"type": "text"}
    }))
    .unwrap();
    let call = ExecCall {
        argv: vec!["ocr".into()],
        vars: vars(),
        local: Vec::new(),
    };
    let body: Value = serde_json::from_slice(&stdin_json("tess", &request, &call)).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "tess",
            "messages": [{"role": "user", "content": "read it"}],
            "temperature": 0.0, "max_tokens": 64, "seed": 7,
            "format": {"type": "text"},
            "vars": vars(), "argv": ["ocr"]
        })
    );
    assert_eq!(request.format, OutputKind::Text);
}

#[test]
fn stdout_is_text_or_an_envelope_with_usage() {
    let cases: [(&str, &str, Option<u64>, Option<u64>); 5] = [
        ("plain answer\n\x0c", "plain answer", None, None),
        (
            r#"{"text": "hi", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}"#,
            "hi",
            Some(3),
            Some(2),
        ),
        (r#"{"text": "hi"}"#, "hi", None, None),
        // A JSON answer without a string `text` is the answer itself.
        (r#"{"answer": 4}"#, r#"{"answer": 4}"#, None, None),
        (r#"{"text": 4}"#, r#"{"text": 4}"#, None, None),
    ];
    for (stdout, text, tokens_in, tokens_out) in cases {
        let c = parse_stdout(stdout.as_bytes()).unwrap();
        assert_eq!(
            (c.text.as_str(), c.usage.tokens_in, c.usage.tokens_out),
            (text, tokens_in, tokens_out),
            "{stdout}"
        );
    }
    let bad = parse_stdout(br#"{"text": "x", "usage": {"prompt_tokens": -1}}"#).unwrap_err();
    assert!(matches!(bad, ProviderError::Malformed(_)), "{bad}");
}

#[test]
fn the_environment_holds_path_and_what_is_named() {
    let mut o = options(&["x"]);
    o.env = vec!["LANG".into(), "UNSET".into()];
    o.env_set.insert("LANG".into(), "C.UTF-8".into());
    o.env_set.insert("MODE".into(), "fast".into());
    let env = environment(&o, |name| match name {
        "PATH" => Some("/bin".into()),
        "LANG" => Some("ru_RU.UTF-8".into()),
        "OPENAI_API_KEY" => Some("sk-secret".into()),
        _ => None,
    });
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        pairs,
        [("LANG", "C.UTF-8"), ("MODE", "fast"), ("PATH", "/bin")]
    );
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

#[tokio::test]
async fn a_program_answers_fails_or_is_killed_with_what_it_forked() {
    let o = options(&[]);
    let echo = run(&sh("cat; echo"), &o, b"{\"x\": 1}", Duration::from_secs(10)).await;
    assert_eq!(echo.unwrap(), b"{\"x\": 1}\n");

    let hostile = sh("printf 'bad \\033[31mred\\033[0m\\nline two' >&2; exit 3");
    let e = run(&hostile, &o, b"", Duration::from_secs(10))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ProviderError::Program(_)), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(
        text.contains("bad \\u001B[31mred\\u001B[0m\\nline two"),
        "{text}"
    );
    assert!(!text.contains('\x1b') && !text.contains('\n'), "{text}");

    let missing = run(
        &["no-such-program-x".into()],
        &o,
        b"",
        Duration::from_secs(5),
    )
    .await;
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .contains("cannot start `no-such-program-x`")
    );

    // The grandchild holds stdout open and would outlive a kill of the child alone.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = sh(&format!(
        "sleep 30 & echo $! > {}; wait",
        pid_file.display()
    ));
    let started = Instant::now();
    let e = run(&script, &o, b"", Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(e, ProviderError::Timeout(_)), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_gone(&pid_file);

    // A call dropped mid-way (a run interrupted) takes the group along too.
    std::fs::remove_file(&pid_file).unwrap();
    let call = run(&script, &o, b"", Duration::from_secs(60));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    assert_gone(&pid_file);
}

/// The process whose pid is in `pid_file` has been killed.
fn assert_gone(pid_file: &Path) {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true);
    assert!(!alive || zombie, "the grandchild {pid} survived");
}

#[test]
fn stderr_keeps_its_tail() {
    let long = "x".repeat(STDERR_TAIL) + "end";
    let tail = stderr_tail(&long.as_bytes()[long.len() - STDERR_TAIL..]);
    assert!(tail.starts_with('…') && tail.ends_with("end"), "{tail}");
    assert_eq!(stderr_tail(b"  \n"), "(empty)");
}

#[test]
fn stdout_tool_calls_become_the_completions_calls() {
    let stdout = r#"{"text": "", "tool_calls": [
        {"name": "math.factorial", "arguments": {"number": 5}},
        {"id": "c2", "name": "f", "arguments": "{\"a\": 1.0}"},
        {"name": "g", "arguments": "{bad"},
        {"name": "h"}]}"#;
    let c = parse_stdout(stdout.as_bytes()).unwrap();
    let calls: Vec<(&str, &str, String, bool)> = c
        .tool_calls
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.name.as_str(),
                t.arguments.to_string(),
                t.invalid.is_some(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("", "math.factorial", r#"{"number":5}"#.to_owned(), false),
            ("c2", "f", r#"{"a":1.0}"#.to_owned(), false),
            ("", "g", r#""{bad""#.to_owned(), true),
            ("", "h", "{}".to_owned(), false),
        ]
    );
    // Calls alone, without text, are an answer too.
    let c = parse_stdout(br#"{"tool_calls": [{"name": "f", "arguments": {}}]}"#).unwrap();
    assert_eq!((c.text.as_str(), c.tool_calls.len()), ("", 1));
    for bad in [
        r#"{"text": "", "tool_calls": {"name": "f"}}"#,
        r#"{"text": "", "tool_calls": [{"arguments": {}}]}"#,
        r#"{"text": "", "tool_calls": [{"name": "f", "arguments": 5}]}"#,
    ] {
        let e = parse_stdout(bad.as_bytes()).unwrap_err();
        assert!(matches!(e, ProviderError::Malformed(_)), "{bad}: {e}");
    }
}
