//! `hf://owner/name` datasets: the cache layout, offline mode, and the
//! download path against a loopback server speaking the hub's wire format
//! (the datasets server's `/parquet` listing, then each file's URL).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::parquet_file::{self, ParquetRow};
use crate::common::{harness, run};
use serde_json::json;

const SPEC: &str = "[dataset]\npath = \"hf://owner/quiz\"\nsplit = \"train\"\n[prompt]\nuser = \"{{ q }}\"\n[[verify]]\nrule = \"exact\"\nexpected = \"answer\"\n";

/// Two rows tagged `tag[0]`.
fn rows<'a>(tag: &'a [&'a str; 1]) -> Vec<ParquetRow<'a>> {
    vec![
        ParquetRow {
            q: "Сколько будет 2 + 2?",
            answer: 4,
            topic: "math",
            tags: tag,
        },
        ParquetRow {
            q: "Сколько ног у паука?",
            answer: 8,
            topic: "bio",
            tags: tag,
        },
    ]
}

/// `harness show` in `dir` with the cache at `dir/cache`: (exit code, output).
fn show(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut cmd = harness(dir);
    cmd.args(args)
        .args(["show", "spec.toml", "-n", "10", "--json"])
        .env("HARNESS_CACHE", dir.join("cache"))
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

#[test]
fn offline_reads_hand_placed_parquet_from_the_cache_layout() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.toml"), SPEC).unwrap();
    let split = dir.path().join("cache/datasets/owner/quiz/default/train");
    std::fs::create_dir_all(&split).unwrap();
    parquet_file::write(&split.join("0000.parquet"), &rows(&["a"]));
    parquet_file::write(&split.join("0001.parquet"), &rows(&["b"]));
    let (code, out) = show(dir.path(), &[("HF_HUB_OFFLINE", "1")], &[]);
    assert_eq!(code, 0, "{out}");
    let tags: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["vars"]["tags"][0].to_string()
        })
        .collect();
    assert_eq!(
        tags,
        ["\"a\"", "\"a\"", "\"b\"", "\"b\""],
        "files in name order, rows in file order"
    );
}

#[test]
fn offline_without_a_cached_split_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.toml"), SPEC).unwrap();
    for (env, args) in [
        (vec![("HF_HUB_OFFLINE", "1")], vec![]),
        (vec![], vec!["--offline"]),
    ] {
        let (code, out) = show(dir.path(), &env, &args);
        assert_eq!(code, 2, "{out}");
        assert!(
            out.contains(
                "hf://owner/quiz (config `default`, split `train`) is not in the cache at"
            ) && out.contains("cache/datasets/owner/quiz/default/train")
                && out.contains("spec.toml:2:8"),
            "{out}"
        );
    }
}

/// A loopback server for the listing and the files; records (path, authorization) per request.
struct Hub {
    base: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Hub {
    fn start(files: Vec<(&'static str, Vec<u8>)>, listing_status: u16) -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, url) = (seen.clone(), base.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut auth = String::new();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some(v) = header.to_ascii_lowercase().strip_prefix("authorization: ") {
                        auth = v.trim().to_owned();
                    }
                }
                log.lock().unwrap().push((path.clone(), auth));
                let (status, body) = if path.starts_with("/parquet?") {
                    // Another split in the listing must be ignored.
                    let mut listed: Vec<_> = files
                        .iter()
                        .map(|(name, _)| json!({"dataset": "owner/quiz", "config": "default", "split": "train", "url": format!("{url}/files/{name}"), "filename": name, "size": 1}))
                        .collect();
                    listed.push(json!({"dataset": "owner/quiz", "config": "default", "split": "test", "url": format!("{url}/files/none"), "filename": "x.parquet", "size": 1}));
                    let body = json!({"parquet_files": listed, "pending": [], "failed": [], "partial": false});
                    (listing_status, body.to_string().into_bytes())
                } else {
                    match files
                        .iter()
                        .find(|(name, _)| path == format!("/files/{name}"))
                    {
                        Some((_, bytes)) => (200, bytes.clone()),
                        None => (404, b"not found".to_vec()),
                    }
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
                let _ = stream.flush();
                let _ = reader.read(&mut [0u8; 1]);
            }
        });
        Hub { base, seen }
    }
}

fn parquet_bytes(tag: &'static str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.parquet");
    parquet_file::write(&path, &rows(&[tag]));
    std::fs::read(path).unwrap()
}

#[test]
fn downloads_once_into_the_cache_then_reads_it_offline() {
    let hub = Hub::start(
        vec![
            ("0000.parquet", parquet_bytes("a")),
            ("0001.parquet", parquet_bytes("b")),
        ],
        200,
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.toml"), SPEC).unwrap();
    let env = [
        ("HARNESS_HF_DATASETS_SERVER", hub.base.as_str()),
        ("HF_TOKEN", "hf_test_token"),
    ];
    let (code, out) = show(dir.path(), &env, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().count(), 4, "{out}");
    let seen = hub.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        [
            "/parquet?dataset=owner/quiz&config=default&split=train",
            "/files/0000.parquet",
            "/files/0001.parquet"
        ]
    );
    assert!(
        seen.iter().all(|(_, auth)| auth == "bearer hf_test_token"),
        "{seen:?}"
    );
    let split = dir.path().join("cache/datasets/owner/quiz/default/train");
    let manifest = std::fs::read_to_string(split.join("files.json")).unwrap();
    assert_eq!(manifest, r#"["0000.parquet","0001.parquet"]"#);
    assert!(!split.join("0000.parquet.part").exists());

    // Cached: no request at all, online or offline.
    let (code, again) = show(dir.path(), &env, &[]);
    assert_eq!((code, &again), (0, &out));
    let (code, offline) = show(dir.path(), &[("HF_HUB_OFFLINE", "1")], &[]);
    assert_eq!((code, &offline), (0, &out));
    assert_eq!(hub.seen.lock().unwrap().len(), 3);
}

#[test]
fn a_failing_listing_is_an_error_and_caches_nothing() {
    let hub = Hub::start(vec![], 404);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.toml"), SPEC).unwrap();
    let (code, out) = show(
        dir.path(),
        &[("HARNESS_HF_DATASETS_SERVER", hub.base.as_str())],
        &[],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("listing the Parquet files: HTTP 404"), "{out}");
    assert!(
        !dir.path()
            .join("cache/datasets/owner/quiz/default/train/files.json")
            .exists()
    );
}
