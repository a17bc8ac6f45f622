//! Limits cases: io (see `tests/limits.rs`). Response bodies without end on
//! every wire, with a 200 or a 500; every file key of a spec naming a
//! device, a FIFO or a file over its cap; images repointed after they were
//! recorded (in the report, in a later turn, under an `exec` program); and
//! errors that name a file without quoting its bytes. File caps lowered and
//! raised in `harness.toml`'s `[limits]` are in `caps`.

mod caps;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::capped;
use crate::common::fake_server::{FakeCall, FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{harness, root};

/// A spec that asks one question, its answer checked as a number.
const QUESTION: &str = "[prompt]\nuser = \"What is 2 + 2?\"\n\n[[verify]]\nrule = \"numeric\"\nextract = \"last_number\"\nexpected = \"answer\"\n";

/// The instance script of [`QUESTION`].
const GENERATE: &str = "[generate]\nscript = '#{ answer: 4 }'\n";

/// How long any case may take.
const WALL: Duration = Duration::from_secs(30);

#[test]
fn endless_response_bodies_fail_fast_as_response_too_large_and_are_not_retried() {
    // (case, provider, stream, status, max_response_bytes line)
    let cases = [
        (
            "openai 200",
            "openai",
            false,
            200,
            "max_response_bytes = 1048576",
        ),
        (
            "openai 500",
            "openai",
            false,
            500,
            "max_response_bytes = 1048576",
        ),
        ("openai 200, default cap", "openai", false, 200, ""),
        (
            "ollama 200",
            "ollama",
            false,
            200,
            "max_response_bytes = 1048576",
        ),
        (
            "ollama stream",
            "ollama",
            true,
            200,
            "max_response_bytes = 1048576",
        ),
        (
            "ollama 500",
            "ollama",
            false,
            500,
            "max_response_bytes = 1048576",
        ),
    ];
    for (case, provider, stream, status, cap) in cases {
        let fake = FakeServer::start(move |_| Reply::Endless(status));
        let ws = Workspace::new();
        ws.write(
            "specs/q.toml",
            &format!("id = \"q\"\nruns = 1\n{GENERATE}{QUESTION}"),
        );
        let base = match provider {
            "openai" => fake.openai_base(),
            _ => fake.ollama_base(),
        };
        // A long timeout and retries: neither may be what ends the case.
        let settings = format!("timeout_secs = 300\nmax_retries = 4\nstream = {stream}\n{cap}");
        ws.write(
            "harness.toml",
            &model_toml("fake", provider, "fake-model", &base, &settings),
        );
        let done = capped(&mut ws.run_cmd(&["specs/", "-m", "fake"]), WALL);
        done.expect_code(4);
        let journal = ws.last_journal();
        assert_eq!(journal.len(), 1, "{case}: {}", done.out);
        assert_eq!(
            journal[0]["failure"], "response_too_large",
            "{case}: {:#}",
            journal[0]
        );
        assert_eq!(
            fake.count(),
            1,
            "{case}: a body past the cap is not retried"
        );
    }
}

/// The spec that names `path` at `key`, with whatever else that key needs.
fn spec_naming(key: &str, path: &Path) -> String {
    let p = path.display();
    let agent = "[agent]\nmax_turns = 2\nend = { tool = \"submit\" }\n\n[[tools]]\nname = \"submit\"\ndescription = \"Ends the work.\"\nscript = \"#{ ok: true }\"\n";
    match key {
        "rubric_file" => format!(
            "id = \"s\"\n{GENERATE}{QUESTION}\n[[verify]]\nrule = \"judge\"\nrubric_file = \"{p}\"\n"
        ),
        "[dataset] path" => {
            format!("id = \"s\"\n[dataset]\npath = \"{p}\"\nformat = \"jsonl\"\n\n{QUESTION}")
        }
        "tools_file" => format!("id = \"s\"\ntools_file = \"{p}\"\n{GENERATE}{QUESTION}"),
        "script_file" => format!(
            "id = \"s\"\n{GENERATE}{QUESTION}\n{agent}\n[[tools]]\nname = \"look\"\ndescription = \"Looks.\"\nscript_file = \"{p}\"\n"
        ),
        "[generate] file" => format!("id = \"s\"\n[generate]\nfile = \"{p}\"\n\n{QUESTION}"),
        "[request] schema" => format!(
            "id = \"s\"\n{GENERATE}{QUESTION}\n[request]\nresponse_format = \"json_schema\"\nschema = \"{p}\"\n"
        ),
        "images" => format!(
            "id = \"s\"\nruns = 1\n{GENERATE}[prompt]\nuser = \"Read it.\"\nimages = [\"{p}\"]\n\n[[verify]]\nrule = \"contains\"\nvalue = \"x\"\n"
        ),
        other => panic!("no spec for {other}"),
    }
}

/// The cap of the files `key` names, as `src/files/bounded.rs` sets it.
fn cap_of(key: &str) -> u64 {
    match key {
        "[dataset] path" => 1 << 30,
        "tools_file" => 16 << 20,
        "images" => 20 << 20,
        _ => 4 << 20,
    }
}

/// Makes a FIFO at `path`.
fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn every_file_key_refuses_devices_fifos_and_oversized_files_at_check_time() {
    let keys = [
        "rubric_file",
        "[dataset] path",
        "tools_file",
        "script_file",
        "[generate] file",
        "[request] schema",
        "images",
    ];
    for key in keys {
        let ws = Workspace::new();
        fifo(&ws.path().join("fifo"));
        // Sparse: over the cap without a byte on disk.
        let big = ws.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(cap_of(key) + 1)
            .unwrap();
        let device = "it is a character device, not a regular file";
        let targets: [(PathBuf, &str); 4] = [
            ("/dev/zero".into(), device),
            ("/dev/urandom".into(), device),
            (ws.path().join("fifo"), "it is a FIFO, not a regular file"),
            (big.clone(), "over the"),
        ];
        for (target, says) in targets {
            ws.write("specs/s.toml", &spec_naming(key, &target));
            let mut cmd = harness(ws.path());
            cmd.args(["check", "specs/s.toml"]);
            let done = capped(&mut cmd, WALL);
            let case = format!("{key} = {}", target.display());
            assert_eq!(done.code, Some(2), "{case}:\n{}", done.out);
            assert!(
                done.out.contains(says),
                "{case} does not say {says:?}:\n{}",
                done.out
            );
            let name = target.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                done.out.contains(&name),
                "{case} is not named:\n{}",
                done.out
            );
        }
    }
}

#[test]
fn files_named_on_the_command_line_are_refused_alike() {
    let ws = Workspace::new();
    fifo(&ws.path().join("fifo"));
    ws.write(
        "specs/q.toml",
        &format!("id = \"q\"\nruns = 1\n{GENERATE}{QUESTION}"),
    );
    let model = "openai:m@http://127.0.0.1:9/v1";
    let cases: [(&[&str], &str); 5] = [
        (
            &["check", "/dev/zero"],
            "it is a character device, not a regular file",
        ),
        (&["check", "fifo"], "it is a FIFO, not a regular file"),
        (
            &["run", "--config", "fifo", "specs/"],
            "it is a FIFO, not a regular file",
        ),
        (
            &["run", "--config", "/dev/urandom", "specs/"],
            "it is a character device",
        ),
        (
            &[
                "run",
                "--prices",
                "fifo",
                "specs/",
                "-m",
                model,
                "--dry-run",
            ],
            "it is a FIFO, not a regular file",
        ),
    ];
    for (args, says) in cases {
        let mut cmd = harness(ws.path());
        cmd.args(args);
        capped(&mut cmd, WALL).expect_code(2).expect_output(says);
    }
}

/// Text that must never reach any output: a token file, `/etc/shadow`.
const SECRET: &str = "hf_SECRET7f3a:$6$SECRET-HASH:19000:0:99999:7:::";

#[test]
fn errors_name_a_file_and_what_is_wrong_and_never_quote_its_bytes() {
    let keys = [
        "images",
        "script_file",
        "tools_file",
        "[generate] file",
        "[request] schema",
        "rubric_file",
    ];
    let files = [
        ("secret", format!("{SECRET}\n{SECRET}\n")),
        (
            "secret.json",
            format!("{{\"type\": \"{SECRET}\", \"{SECRET}\": [\"{SECRET}\"]}}"),
        ),
    ];
    for key in keys {
        for (name, content) in &files {
            let ws = Workspace::new();
            let secret = ws.path().join(name);
            std::fs::write(&secret, content).unwrap();
            ws.write("specs/s.toml", &spec_naming(key, &secret));
            let mut cmd = harness(ws.path());
            cmd.args(["check", "specs/s.toml"]);
            let done = capped(&mut cmd, WALL);
            let case = format!("{key} = {name}");
            assert_eq!(done.code, Some(2), "{case}:\n{}", done.out);
            assert!(
                done.out.contains(*name),
                "{case} is not named:\n{}",
                done.out
            );
            let hex: String = SECRET.bytes().take(4).map(|b| format!("{b:02x}")).collect();
            for leak in ["SECRET", hex.as_str()] {
                assert!(
                    !done.out.contains(leak),
                    "{case} quotes the file ({leak}):\n{}",
                    done.out
                );
            }
        }
    }
}

/// The two example PNGs: the one recorded, and another.
fn pngs() -> (Vec<u8>, Vec<u8>) {
    let dir = root().join("docs/examples/datasets/ocr_mini/images");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    (read("en_41.png"), read("ru_19.png"))
}

/// `path` made a FIFO, or a link to `/dev/zero`, in place of the image.
fn repoint(path: &Path, to_fifo: bool) {
    std::fs::remove_file(path).unwrap();
    if to_fifo {
        fifo(path);
    } else {
        std::os::unix::fs::symlink("/dev/zero", path).unwrap();
    }
}

#[test]
fn an_image_repointed_after_the_run_costs_the_report_nothing() {
    for to_fifo in [false, true] {
        let fake = FakeServer::start(|_| Reply::Text("x".into()));
        let ws = Workspace::new();
        std::fs::write(ws.path().join("specs/img.png"), pngs().0).unwrap();
        ws.write("specs/s.toml", &spec_naming("images", Path::new("img.png")));
        let model = model_toml("fake", "openai", "m", &fake.openai_base(), "");
        ws.write("harness.toml", &model);
        capped(&mut ws.run_cmd(&["specs/", "-m", "fake"]), WALL).expect_code(0);
        repoint(&ws.path().join("specs/img.png"), to_fifo);
        let mut cmd = harness(ws.path());
        cmd.args(["report", "--results", "results", "latest"]);
        let done = capped(&mut cmd, WALL);
        done.expect_code(0);
        let page = crate::common::report(&ws.path().join("results"), "", "html");
        assert!(page.contains("changed since the run"), "to_fifo {to_fifo}");
        // A journal that is a FIFO now is refused, not waited on.
        let run = ws.run_dirs().pop().unwrap();
        repoint(&run.join("journal.jsonl"), true);
        let mut cmd = harness(ws.path());
        cmd.args(["report", "--results", "results", "latest"]);
        capped(&mut cmd, WALL).expect_code(2).expect_output("FIFO");
    }
}

#[test]
fn an_image_repointed_between_turns_fails_the_request_as_image_changed() {
    for to_fifo in [false, true] {
        let ws = Workspace::new();
        let image = ws.path().join("specs/img.png");
        std::fs::write(&image, pngs().0).unwrap();
        let spec = spec_naming("images", Path::new("img.png"));
        let tools = "\n[agent]\nmax_turns = 3\nend = { tool = \"submit\" }\n\n[[tools]]\nname = \"look\"\ndescription = \"Looks.\"\nscript = \"#{ ok: true }\"\n\n[[tools]]\nname = \"submit\"\ndescription = \"Ends the work.\"\nscript = \"#{ ok: true }\"\n";
        ws.write("specs/s.toml", &format!("{spec}{tools}"));
        // The first turn calls a tool, and the image is repointed before
        // the second turn sends it again.
        let fake = FakeServer::start(move |r| {
            if r.index == 0 {
                repoint(&image, to_fifo);
            }
            Reply::Calls(String::new(), vec![FakeCall::new("look", "{}")])
        });
        let model = model_toml(
            "fake",
            "openai",
            "m",
            &fake.openai_base(),
            "timeout_secs = 300",
        );
        ws.write("harness.toml", &model);
        let done = capped(&mut ws.run_cmd(&["specs/", "-m", "fake"]), WALL);
        done.expect_code(4);
        let journal = ws.last_journal();
        assert_eq!(journal[0]["failure"], "image_changed", "{:#}", journal[0]);
        assert_eq!(fake.count(), 1, "the changed image is never sent");
    }
}

/// An `exec` program that swaps the user's image for another before it
/// reads the path it was given, and answers with what it read.
const SWAPPER: &str = r#"set -e
echo "$1" >> calls.log
if [ -e swap ]; then cp other.png specs/img.png; fi
cmp -s "$1" first.png && echo first || echo other
"#;

#[test]
fn an_exec_program_reads_a_private_copy_and_a_changed_image_is_never_cached() {
    let (first, other) = pngs();
    let ws = Workspace::new();
    for (name, bytes) in [
        ("first.png", &first),
        ("other.png", &other),
        ("specs/img.png", &first),
    ] {
        std::fs::write(ws.path().join(name), bytes).unwrap();
    }
    ws.write("swapper.sh", SWAPPER);
    let spec = format!(
        "id = \"s\"\nruns = 1\n{GENERATE}[prompt]\nuser = \"Read it.\"\nimages = [\"img.png\"]\n\n[[verify]]\nrule = \"exact\"\nvalue = \"first\"\n"
    );
    ws.write("specs/s.toml", &spec);
    ws.write(
        "harness.toml",
        "[models.swap]\nprovider = \"exec\"\ncommand = [\"sh\", \"swapper.sh\", \"{{ images[0] }}\"]\n",
    );
    // The image changes while the program runs: the call fails, nothing is cached.
    ws.write("swap", "");
    let done = capped(&mut ws.run_cmd(&["specs/", "-m", "swap"]), WALL);
    done.expect_code(4);
    assert_eq!(
        ws.last_journal()[0]["failure"],
        "image_changed",
        "{}",
        done.out
    );
    let given = std::fs::read_to_string(ws.path().join("calls.log")).unwrap();
    let original = ws.path().join("specs/img.png");
    assert!(
        !given.contains(original.to_str().unwrap()),
        "the user's file was given: {given}"
    );
    assert!(
        !Path::new(given.trim()).exists(),
        "the copy outlived its call"
    );
    // Back to the recorded image: asked again, and answered from it.
    std::fs::remove_file(ws.path().join("swap")).unwrap();
    std::fs::write(&original, &first).unwrap();
    let done = capped(&mut ws.run_cmd(&["specs/", "-m", "swap"]), WALL);
    done.expect_code(0);
    let journal = ws.last_journal();
    assert_eq!(journal[0]["response"], "first", "{:#}", journal[0]);
    let calls = std::fs::read_to_string(ws.path().join("calls.log")).unwrap();
    assert_eq!(
        calls.lines().count(),
        2,
        "the failed call left no cached answer"
    );
}

/// A hub on loopback whose listing never ends (`endless`), or names one
/// file announced as 2 GiB; it serves until `WALL` has passed.
fn hostile_hub(endless: bool) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = base.clone();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + WALL;
        while std::time::Instant::now() < deadline {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            let mut head = [0u8; 4096];
            let n = stream.read(&mut head).unwrap_or(0);
            let listing = String::from_utf8_lossy(&head[..n]).starts_with("GET /parquet?");
            let _ = match (listing, endless) {
                (true, true) => {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
                    let block = vec![b' '; 64 * 1024];
                    while std::time::Instant::now() < deadline && stream.write_all(&block).is_ok() {}
                    Ok(())
                }
                (true, false) => {
                    let file = format!("{url}/files/a.parquet");
                    let body = format!(
                        r#"{{"parquet_files": [{{"dataset": "owner/quiz", "config": "default", "split": "train", "url": "{file}", "filename": "a.parquet", "size": 1}}]}}"#
                    );
                    let len = body.len();
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                    stream.write_all(format!("{head}{body}").as_bytes())
                }
                (false, _) => stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\nConnection: close\r\n\r\nPAR1",
                ),
            };
        }
    });
    base
}

#[test]
fn hub_downloads_stop_at_their_caps() {
    let spec = format!(
        "id = \"hub\"\n[dataset]\npath = \"hf://owner/quiz\"\nsplit = \"train\"\n\n{QUESTION}"
    );
    let listing = (true, "the Parquet listing is over the 16 MiB limit");
    for (endless, says) in [listing, (false, "a.parquet is over the 1 GiB limit")] {
        let ws = Workspace::new();
        ws.write("specs/hub.toml", &spec);
        let mut cmd = harness(ws.path());
        cmd.args(["check", "specs/hub.toml"])
            .env("HARNESS_CACHE", ws.path().join("cache"))
            .env("HARNESS_HF_DATASETS_SERVER", hostile_hub(endless))
            .env_remove("HF_HUB_OFFLINE")
            .env_remove("HF_TOKEN");
        capped(&mut cmd, WALL).expect_code(2).expect_output(says);
        let split = ws.path().join("cache/datasets/owner/quiz/default/train");
        assert!(!split.join("files.json").exists() && !split.join("a.parquet").exists());
    }
}
