//! Dataset loading and prompt rendering at scale: 100,000 RRR rows (the
//! shipped rows cycled, each dialogue made distinct) in four JSONL splits,
//! loaded by `specs/rrr.toml` and rendered to chat messages on one thread.
//!
//! Run with `bench/dataset.sh` (or `cargo bench --bench dataset`);
//! `DATASET_ROWS` changes the row count. Peak RSS is the process's `VmHWM`.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use harness::Spec;
use serde_json::Value;

const SPLITS: [&str; 4] = ["routes_3", "routes_5", "routes_7", "routes_9"];

/// Writes `total` rows spread over the four splits under `dir/datasets/rrr_ru`.
fn write_rows(root: &Path, dir: &Path, total: usize) -> u64 {
    let out_dir = dir.join("datasets/rrr_ru");
    fs::create_dir_all(&out_dir).unwrap();
    let mut bytes = 0;
    for split in SPLITS {
        let text = fs::read_to_string(root.join(format!("datasets/rrr_ru/{split}.jsonl"))).unwrap();
        let source: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let path = out_dir.join(format!("{split}.jsonl"));
        let mut w = BufWriter::new(fs::File::create(&path).unwrap());
        for i in 0..total / SPLITS.len() {
            let mut row = source[i % source.len()].clone();
            let turns = row["messages"].as_array_mut().unwrap();
            let last = turns.last_mut().unwrap();
            let content = format!("{} (#{i})", last["content"].as_str().unwrap());
            last["content"] = Value::String(content);
            serde_json::to_writer(&mut w, &row).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
        bytes += fs::metadata(&path).unwrap().len();
    }
    bytes
}

fn peak_rss_mib() -> f64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let total: usize = std::env::var("DATASET_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    for sub in ["specs", "schemas"] {
        fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    fs::copy(
        root.join("specs/rrr.toml"),
        dir.path().join("specs/rrr.toml"),
    )
    .unwrap();
    fs::copy(
        root.join("schemas/route.schema.json"),
        dir.path().join("schemas/route.schema.json"),
    )
    .unwrap();
    let bytes = write_rows(root, dir.path(), total);
    let rss_before = peak_rss_mib();

    let started = Instant::now();
    let spec = Spec::load(&dir.path().join("specs/rrr.toml")).expect("the spec loads");
    let load = started.elapsed();
    let rows = spec.dataset().expect("a dataset").len();
    let started = Instant::now();
    let mut chars = 0usize;
    for i in 0..rows as u64 {
        let instance = spec.instance(i).expect("instances render");
        chars += instance
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>();
    }
    let render = started.elapsed();
    let total_s = (load + render).as_secs_f64();
    println!(
        "{rows} rows ({:.1} MiB of JSONL): load {:.2} s ({:.0} rows/s), map + render {:.2} s ({:.0} rows/s), total {:.0} rows/s; {:.0} MiB of prompts",
        bytes as f64 / 1048576.0,
        load.as_secs_f64(),
        rows as f64 / load.as_secs_f64(),
        render.as_secs_f64(),
        rows as f64 / render.as_secs_f64(),
        rows as f64 / total_s,
        chars as f64 / 1048576.0,
    );
    println!(
        "peak RSS {:.1} MiB (after writing the files: {rss_before:.1} MiB)",
        peak_rss_mib()
    );
}
