use super::*;

/// The hostile test server, started with `args`.
fn hostile(args: &[&str], call_secs: u64) -> Target {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/hostile.py");
    let mut argv = vec!["python3".to_owned(), script.to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    Target {
        name: "hostile".into(),
        transport: Transport::Stdio {
            argv,
            env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            cwd: std::env::temp_dir(),
        },
        start_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(call_secs),
    }
}

/// Whether `pid` runs: it exists and is not a zombie waiting for a reaper.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        state != Some(Some('Z'))
    })
}

#[tokio::test]
async fn lists_and_calls_tools() {
    let session = Session::start(&hostile(&[], 10)).await.expect("starts");
    let tools = session.tools(Duration::from_secs(10)).await.expect("lists");
    assert!(
        tools
            .iter()
            .any(|t| t.name == "add" && t.input_schema["type"] == "object")
    );
    let args = |v: Value| v.as_object().cloned().unwrap_or_default();
    let added = session
        .call("add", args(serde_json::json!({"a": 2, "b": 3})))
        .await;
    let added = added.expect("answers");
    assert_eq!(added.structured, Some(serde_json::json!({"sum": 5})));
    assert!(!added.is_error);
    let failed = session.call("fail", Map::new()).await.expect("answers");
    assert_eq!(
        (failed.is_error, failed.text),
        (true, vec!["it failed on purpose".to_owned()])
    );
    let unknown = session.call("nope", Map::new()).await.expect("answers");
    assert!(
        unknown.is_error && unknown.text[0].contains("unknown tool"),
        "{unknown:?}"
    );
    let pid = session.pid().expect("a stdio server");
    session.close().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!alive(pid), "the server outlived its session");
}

#[tokio::test]
async fn faults_end_as_named_kinds() {
    // Only the hang waits for its limit; the others get a limit a loaded
    // machine cannot reach, so that they end by their own fault and not by
    // the clock (a 1 s limit let a slow flood end as a timeout in CI).
    let cases = [
        ("crash", 20, FaultKind::Died, "crashing on purpose"),
        ("garbage", 20, FaultKind::Malformed, "not JSON"),
        ("flood", 20, FaultKind::Flood, "MiB"),
        ("hang", 1, FaultKind::Timeout, "within 1 s"),
    ];
    for (tool, limit, kind, says) in cases {
        let session = Session::start(&hostile(&[], limit)).await.expect("starts");
        let began = Instant::now();
        let fault = session.call(tool, Map::new()).await.expect_err(tool);
        assert_eq!(fault.kind, kind, "{tool}: {fault}");
        assert!(fault.message.contains(says), "{tool}: {fault}");
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{tool} took {:?}",
            began.elapsed()
        );
        session.close().await;
    }
}

#[tokio::test]
async fn a_silent_server_fails_to_start_in_time() {
    let mut target = hostile(&["--silent"], 1);
    target.start_timeout = Duration::from_secs(1);
    let fault = Session::start(&target).await.err().expect("no session");
    assert_eq!(fault.kind, FaultKind::Start, "{fault}");
    assert!(fault.message.contains("initialize"), "{fault}");
}

#[tokio::test]
async fn a_missing_program_fails_to_start() {
    let mut target = hostile(&[], 1);
    if let Transport::Stdio { argv, .. } = &mut target.transport {
        argv[0] = "/nonexistent/mcp-server".into();
    }
    let fault = Session::start(&target).await.err().expect("no session");
    assert_eq!(fault.kind, FaultKind::Start, "{fault}");
}

#[tokio::test]
async fn a_grandchild_dies_with_the_session() {
    let session = Session::start(&hostile(&[], 10)).await.expect("starts");
    let reply = session.call("spawn", Map::new()).await.expect("answers");
    let grandchild: u32 = reply.text[0].parse().expect("a pid");
    assert!(alive(grandchild));
    session.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!alive(grandchild), "pid {grandchild} outlived the session");
}

#[test]
fn lines_must_be_json_rpc() {
    let cases: [(&str, bool); 6] = [
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, true),
        (r#"[{"jsonrpc":"2.0","method":"x"}]"#, true),
        ("   ", true),
        ("hello", false),
        (r#"{"id":1}"#, false),
        ("[]", false),
    ];
    for (line, fine) in cases {
        assert_eq!(stdio::check_line(line.as_bytes()).is_ok(), fine, "{line}");
    }
}

#[test]
fn replies_keep_text_structure_and_errors() {
    let result = serde_json::json!({
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x:y", "text": "inside"}},
        ],
        "structuredContent": {"n": 1},
        "isError": true,
    });
    let got = reply(&result);
    assert_eq!(got.text, ["a", "[image image/png]", "inside"]);
    assert_eq!(got.structured, Some(serde_json::json!({"n": 1})));
    assert!(got.is_error);
}
