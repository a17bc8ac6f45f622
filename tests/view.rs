//! `harness view` through the real binary: bad input, the token, requests
//! that try to leave the results folder, a live run appearing as its journal
//! grows and showing as interrupted once killed, corrupt journal lines, and
//! the page in headless Chromium (hostile answers stay text, a record's
//! drill-down, two runs compared).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::Workspace;

/// What a hostile model answers: markup that would run if the page parsed it.
const HOSTILE: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"><a href=\"javascript:window.__pwned=3\">click</a>";

/// Six questions, one rule: the answer is 42.
const SPEC: &str = r#"
tags = ["arith"]
runs = 6
[generate]
script = '#{ n: index, want: "42" }'
[prompt]
user = "Question {{ n }}"
[[verify]]
rule = "exact"
expected = "want"
"#;

/// A running `harness view`, stopped (by its PID) when dropped.
struct Viewer {
    child: Child,
    url: String,
}

impl Viewer {
    /// Starts `harness view ARGS` in `ws` and reads the URL it prints.
    fn start(ws: &Workspace, args: &[&str]) -> Viewer {
        let mut child = crate::common::harness(ws.path())
            .arg("view")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        Viewer { child, url }
    }

    /// `host:port` of the server.
    fn authority(&self) -> &str {
        let rest = self.url.trim_start_matches("http://");
        &rest[..rest.find('/').unwrap()]
    }

    /// `METHOD path` over plain HTTP/1.1: the status and the body.
    fn request(&self, method: &str, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(self.authority()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            self.authority()
        )
        .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let status = text[9..12].parse().unwrap();
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    /// The run list once every run holds at least `records` records (the
    /// first read of the folder runs beside the server).
    fn runs_with(&self, runs: usize, records: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let list = self.json("/api/runs");
            let all = list.as_array().unwrap();
            if all.len() == runs && all.iter().all(|r| r["records"].as_u64() >= Some(records)) {
                return list;
            }
            assert!(Instant::now() < deadline, "never indexed: {list}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `GET path` as JSON, which must answer 200.
    fn json(&self, path: &str) -> Value {
        let (status, body) = self.request("GET", path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A workspace with [`SPEC`] and the model `fake`, and `runs` runs of it:
/// the first answers [`HOSTILE`] to odd questions, later ones 42 to all.
fn with_runs(runs: usize) -> (Workspace, FakeServer) {
    let phase = Arc::new(AtomicUsize::new(0));
    let seen = phase.clone();
    let fake = FakeServer::start(move |request| {
        let prompt = request.body.to_string();
        let odd = ["1", "3", "5"]
            .iter()
            .any(|n| prompt.contains(&format!("Question {n}\"")));
        let first = seen.load(Ordering::SeqCst) == 0;
        Reply::Text(if odd && first {
            HOSTILE.into()
        } else {
            "42".into()
        })
    });
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 10")
        .write("specs/q.toml", SPEC);
    for i in 0..runs {
        // The second run must ask again, not answer from the cache.
        let mut args = vec!["specs/q.toml", "-m", "fake", "--allow-errors"];
        if i > 0 {
            args.push("--no-cache");
        }
        let (code, out) = ws.run(&args);
        assert!(code == 0 || code == 1, "{out}");
        phase.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1100)); // run ids are by the second
    }
    (ws, fake)
}

/// A workspace with [`SPEC`], an empty results folder and the model
/// `fake`, which answers 42 after `ms` milliseconds, one request at a time.
fn slow_workspace(ms: u64) -> (Workspace, FakeServer) {
    let fake = FakeServer::start(move |_| Reply::slow(ms, Reply::Text("42".into())));
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 10\nconcurrency = 1")
        .write("specs/q.toml", SPEC);
    std::fs::create_dir(ws.path().join("results")).unwrap();
    (ws, fake)
}

/// `harness view ARGS` in `ws` exits `code` printing each of `wanted`.
fn view_expect(ws: &Workspace, args: &[&str], code: i32, wanted: &[&str]) {
    let mut cmd = crate::common::harness(ws.path());
    cmd.arg("view").args(args);
    crate::common::expect(&mut cmd, code, wanted);
}

#[test]
fn bad_input_exits_2_with_the_reason() {
    let ws = Workspace::new();
    view_expect(&ws, &["nowhere"], 2, &["nowhere: no such results folder"]);
    std::fs::create_dir(ws.path().join("results")).unwrap();
    view_expect(
        &ws,
        &["--host", "0.0.0.0"],
        2,
        &["can be reached from other machines: give --token"],
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    view_expect(&ws, &["--port", &port], 2, &["cannot listen on 127.0.0.1:"]);
}

#[test]
fn a_token_guards_every_request() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path().join("results")).unwrap();
    let viewer = Viewer::start(&ws, &["--host", "0.0.0.0", "--token", "s3cret"]);
    assert!(viewer.url.ends_with("/?token=s3cret"), "{}", viewer.url);
    assert_eq!(viewer.request("GET", "/api/runs").0, 401);
    assert_eq!(viewer.request("GET", "/").0, 401);
    assert_eq!(viewer.request("GET", "/api/runs?token=wrong").0, 401);
    assert_eq!(viewer.request("GET", "/api/runs?token=s3cret").0, 200);
    drop(viewer);
    // Without a value, one is made up: 128 bits, in the URL.
    let viewer = Viewer::start(&ws, &["--token"]);
    let made = viewer.url.rsplit_once("token=").unwrap().1;
    assert_eq!(made.len(), 32, "{}", viewer.url);
    assert_eq!(
        viewer.request("GET", &format!("/api/runs?token={made}")).0,
        200
    );
}

#[test]
fn requests_stay_inside_the_results_folder_and_write_nothing() {
    let (ws, _fake) = with_runs(1);
    let viewer = Viewer::start(&ws, &[]);
    let runs = viewer.runs_with(1, 6);
    let id = runs[0]["id"].as_str().unwrap().to_owned();
    std::fs::write(ws.path().join("secret.txt"), "do not serve").unwrap();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/api/runs/..%2F..%2Fsecret.txt",
        "/api/runs/../../secret.txt/records/0",
        "/api/runs/%2e%2e/records",
        "/api/compare/..%2F..%2F/x",
        "/api/golden/..%2F..%2Fsecret.txt",
        "/api/runs/..%2F..%2Fsecret.txt/records/0/raw",
        "/api/runs/..%2F..%2Fsecret.txt/records/0/golden",
        "/app.js/../../secret.txt",
        "/api/runs/%2Fetc%2Fpasswd",
    ] {
        let (status, body) = viewer.request("GET", path);
        assert!(status == 404 || status == 400, "{path}: {status} {body}");
        assert!(!body.contains("do not serve"), "{path}");
    }
    let journal = ws.run_dirs()[0].join("journal.jsonl");
    let before = std::fs::read(&journal).unwrap();
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        for path in [
            "/api/runs",
            &format!("/api/runs/{id}"),
            &format!("/api/runs/{id}/records/0"),
            &format!("/api/runs/{id}/records/0/raw"),
            &format!("/api/golden/{id}"),
        ] {
            assert_eq!(viewer.request(method, path).0, 405, "{method} {path}");
        }
    }
    assert_eq!(std::fs::read(&journal).unwrap(), before);
    assert_eq!(
        viewer
            .request("GET", &format!("/api/runs/{id}/records/99"))
            .0,
        404
    );
}

#[test]
fn a_live_run_appears_updates_and_shows_interrupted_when_killed() {
    let (ws, _fake) = slow_workspace(400);
    let viewer = Viewer::start(&ws, &[]);
    assert_eq!(viewer.json("/api/runs"), serde_json::json!([]));
    let mut run = crate::common::spawn_quiet(&mut ws.run_cmd(&["specs/q.toml", "-m", "fake"]));
    // Once the journal holds a record, the viewer shows it within a second.
    let deadline = Instant::now() + Duration::from_secs(20);
    let journal = loop {
        let found = ws.run_dirs().first().map(|d| d.join("journal.jsonl"));
        if let Some(j) =
            found.filter(|j| std::fs::read_to_string(j).is_ok_and(|t| t.contains('\n')))
        {
            break j;
        }
        assert!(Instant::now() < deadline, "no record written");
        std::thread::sleep(Duration::from_millis(20));
    };
    let seen = Instant::now();
    let first = loop {
        let runs = viewer.json("/api/runs");
        if runs[0]["records"].as_u64().unwrap_or(0) >= 1 {
            break runs[0].clone();
        }
        assert!(
            seen.elapsed() < Duration::from_secs(1),
            "not shown within 1 s: {runs}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(first["status"], "running", "{first}");
    // It updates as the journal grows.
    let grown = Instant::now() + Duration::from_secs(10);
    while viewer.json("/api/runs")[0]["records"].as_u64().unwrap() < 3 {
        assert!(Instant::now() < grown, "the count never grew");
        std::thread::sleep(Duration::from_millis(50));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let lines = std::fs::read_to_string(&journal).unwrap().lines().count();
    assert!(lines < 6, "killed before the end");
    // Quiet past the live window and without a report: interrupted, with the way on.
    std::thread::sleep(Duration::from_millis(5_600));
    let runs = viewer.json("/api/runs");
    let id = runs[0]["id"].as_str().unwrap();
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");
    assert_eq!(
        runs[0]["resume"],
        serde_json::json!([format!("harness run --resume {id}")])
    );
}

#[test]
fn corrupt_journal_lines_are_unreadable_and_never_fatal() {
    let (ws, _fake) = with_runs(1);
    let journal = ws.run_dirs()[0].join("journal.jsonl");
    let good = std::fs::read_to_string(&journal).unwrap();
    let first = good.lines().next().unwrap();
    let mutations = [
        first[..first.len() / 2].to_owned(),
        first.replace("\"passed\"", "\"passed\":{"),
        "\u{0}\u{1}binary".to_owned(),
        "[]".to_owned(),
        "{\"model\": 5}".to_owned(),
        format!(
            "{{\"model\":\"m\",\"spec\":\"s\",\"instance\":0,\"sample\":0,\"x\":\"{}\"",
            "é".repeat(10_000)
        ),
    ];
    std::fs::write(&journal, format!("{good}{}\n", mutations.join("\n"))).unwrap();
    let viewer = Viewer::start(&ws, &[]);
    let run = &viewer.runs_with(1, 6)[0];
    assert_eq!(run["records"], 6, "{run}");
    assert_eq!(run["unreadable"], mutations.len(), "{run}");
    let id = run["id"].as_str().unwrap();
    let page = viewer.json(&format!("/api/runs/{id}/records?outcome=unreadable"));
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), mutations.len());
    // Each is drawn as its text, with why it is no record.
    for item in items {
        let n = &item["n"];
        let shown = viewer.json(&format!("/api/runs/{id}/records/{n}"));
        assert!(shown["unreadable"].is_string(), "{shown}");
        assert!(shown["text"].is_string(), "{shown}");
    }
    // A torn line at the end waits; the server answers on.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    file.write_all(&first.as_bytes()[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(viewer.json("/api/runs")[0]["unreadable"], mutations.len());
}

#[test]
fn shards_of_one_plan_show_as_one_run_and_a_repeated_shard_starts_another() {
    let (ws, _fake) = slow_workspace(0);
    // The specs live in a git checkout: each plan records its commit.
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(ws.path().join(".git/refs/heads")).unwrap();
    ws.write(".git/HEAD", "ref: refs/heads/main\n")
        .write(".git/refs/heads/main", commit);
    let shard = |i: &str| {
        let (code, out) = ws.run(&["specs/q.toml", "-m", "fake", "--shard", i]);
        assert_eq!(code, 0, "{out}");
        std::thread::sleep(Duration::from_millis(1100)); // run ids are by the second
    };
    shard("0/2");
    shard("1/2");
    let viewer = Viewer::start(&ws, &[]);
    let runs = viewer.runs_with(1, 6);
    let set = &runs[0];
    assert_eq!(set["shard"], "2 of 2 shards", "{set}");
    assert_eq!(set["shards"].as_array().unwrap().len(), 2, "{set}");
    assert_eq!(set["commits"], serde_json::json!([commit]), "{set}");
    let id = set["id"].as_str().unwrap();
    let detail = viewer.json(&format!("/api/runs/{id}"));
    let cells = detail["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{detail}");
    assert_eq!(
        (&cells[0]["records"], &cells[0]["passed"]),
        (&6.into(), &6.into())
    );
    // Its records come from both journals, each read from its own run folder.
    let page = viewer.json(&format!("/api/runs/{id}/records?cell=0&limit=4"));
    let mut items = page["items"].as_array().unwrap().clone();
    let next = page["next"].as_u64().expect("a second page");
    let rest = viewer.json(&format!("/api/runs/{id}/records?cell=0&from={next}"));
    items.extend(rest["items"].as_array().unwrap().iter().cloned());
    let mut instances: Vec<u64> = items
        .iter()
        .map(|i| i["instance"].as_u64().unwrap())
        .collect();
    instances.sort();
    assert_eq!(instances, [0, 1, 2, 3, 4, 5]);
    for item in &items {
        let (run, n) = (item["run"].as_str().unwrap(), &item["n"]);
        let drawn = viewer.json(&format!("/api/runs/{run}/records/{n}"));
        assert_eq!(drawn["row"]["i"], item["instance"], "{drawn}");
    }
    // The same plan sharded again: its first shard starts a second run.
    shard("0/2");
    let runs = viewer.runs_with(2, 3);
    assert_eq!(runs[0]["shard"], "1 of 2 shards", "{runs}");
    assert_eq!(runs[1]["shard"], "2 of 2 shards", "{runs}");
}

#[test]
fn a_run_compares_with_its_golden_transcripts() {
    let (ws, _fake) = with_runs(0);
    // Blessed while odd questions got the hostile answer; asked again, all pass.
    let (code, out) = ws.run(&["specs/q.toml", "-m", "fake", "--bless", "--allow-errors"]);
    assert!(code == 0 || code == 1, "{out}");
    let viewer_later = || Viewer::start(&ws, &[]);
    {
        let viewer = viewer_later();
        let id = viewer.runs_with(1, 6)[0]["id"].as_str().unwrap().to_owned();
        let same = viewer.json(&format!("/api/golden/{id}"));
        assert_eq!(same["flips"], serde_json::json!([]), "{same}");
        assert_eq!(same["cells"][0]["instances"], 6, "{same}");
    }
    std::thread::sleep(Duration::from_millis(1100));
    let fixed = crate::common::fake_server::FakeServer::start(|_| Reply::Text("42".into()));
    ws.fake_model(&fixed, "timeout_secs = 10");
    // Exit 1: the run differs from the golden transcripts, as intended.
    let (code, out) = ws.run(&["specs/q.toml", "-m", "fake", "--no-cache"]);
    assert_eq!(code, 1, "{out}");
    let viewer = viewer_later();
    let newer = viewer.runs_with(2, 6)[0]["id"].as_str().unwrap().to_owned();
    let c = viewer.json(&format!("/api/golden/{newer}"));
    assert_eq!(
        (&c["a"], &c["b"]),
        (&"golden".into(), &newer.as_str().into())
    );
    let cell = &c["cells"][0];
    assert_eq!(
        (&cell["fixed"], &cell["broke"]),
        (&3.into(), &0.into()),
        "{c}"
    );
    let flips = c["flips"].as_array().unwrap();
    assert_eq!(flips.len(), 3, "{c}");
    // Both sides of a flip: the golden answer (hostile, failed) and the new one.
    let golden = &flips[0]["a"]["golden"];
    let (run, n) = (golden["run"].as_str().unwrap(), &golden["n"]);
    let old = viewer.json(&format!("/api/runs/{run}/records/{n}/golden"));
    assert_eq!(old["row"]["ok"], false, "{old}");
    assert!(
        old["row"]["r"].as_str().unwrap().contains("<script>"),
        "{old}"
    );
    let new = viewer.json(&format!("/api/runs/{run}/records/{n}"));
    assert_eq!(new["row"]["ok"], true, "{new}");
    // The record's own drill-down diffs it against the golden answer.
    assert_eq!(new["row"]["g"]["ok"], false, "{new}");
    assert!(new["row"]["g"]["diff"].is_array(), "{new}");
}

#[test]
fn a_records_images_show_as_the_reports_thumbnails() {
    let fake = FakeServer::start(|_| Reply::Text("42".into()));
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 10").write(
        "specs/img.toml",
        "runs = 1\n[generate]\nscript = '#{ want: \"42\" }'\n[prompt]\nuser = \"Read it\"\nimages = [\"line.png\"]\n[[verify]]\nrule = \"exact\"\nexpected = \"want\"\n",
    );
    let png = crate::common::root().join("docs/examples/datasets/ocr_mini/images/en_41.png");
    std::fs::copy(png, ws.path().join("specs/line.png")).unwrap();
    ws.run_ok(&["specs/img.toml", "-m", "fake"]);
    let viewer = Viewer::start(&ws, &[]);
    let id = viewer.runs_with(1, 1)[0]["id"].as_str().unwrap().to_owned();
    let drawn = viewer.json(&format!("/api/runs/{id}/records/0"));
    // [role, text, thumbnails]: the image embedded, named by its path.
    let thumb = &drawn["row"]["p"][0][2][0];
    let url = thumb["u"].as_str().unwrap_or_else(|| panic!("{drawn}"));
    assert!(url.starts_with("data:image/png;base64,"), "{drawn}");
    assert!(
        thumb["t"]
            .as_str()
            .unwrap()
            .starts_with("line.png · image/png"),
        "{drawn}"
    );
}

/// The page in headless Chromium, and the viewer at scale.
mod browser;
