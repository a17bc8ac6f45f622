//! Limits cases: io, file caps (see `tests/limits.rs`). A file over the cap
//! `harness.toml`'s `[limits]` sets for its kind is refused with a located
//! exit 2 naming the key that raises it, in `check` and in `run`, from the
//! default config file or `--config`; raised, the same file is read.

use std::time::Duration;

use crate::common::harness;
use crate::common::workspace::Workspace;
use crate::limits::capped;

/// How long any case may take.
const WALL: Duration = Duration::from_secs(30);

/// A dataset spec over `file` (relative to `specs/`), its instances checked
/// as numbers.
fn dataset_spec(file: &str) -> String {
    format!(
        "id = \"d\"\nruns = 3\n[dataset]\npath = \"{file}\"\nformat = \"jsonl\"\n\n[prompt]\nuser = \"{{{{ q }}}}\"\n\n[[verify]]\nrule = \"numeric\"\nextract = \"last_number\"\nexpected = \"a\"\n"
    )
}

/// A dataset, the config file, its `dataset_bytes`, the command, its exit,
/// and where the error is.
type CapCase<'a> = (&'a str, &'a str, u64, &'a [&'a str], i32, &'a str);

#[test]
fn a_file_over_a_lowered_cap_names_the_key_that_raises_it_and_passes_once_raised() {
    let ws = Workspace::new();
    let rows: String = (0..100)
        .map(|i| format!("{{\"q\": \"What is {i} + 1?\", \"a\": {}}}\n", i + 1))
        .collect();
    assert!(rows.len() > 3000, "over the lowered cap: {}", rows.len());
    ws.write("specs/rows.jsonl", &rows);
    // Packed under the lowered cap, unpacked over it: the unpacked rows count.
    let mut packed = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut packed, rows.as_bytes()).unwrap();
    let packed = packed.finish().unwrap();
    assert!(
        packed.len() < 2048,
        "under the lowered cap: {}",
        packed.len()
    );
    std::fs::write(ws.path().join("specs/rows.jsonl.gz"), packed).unwrap();
    let check: &[&str] = &["check", "specs/d.toml", "--bless"];
    let other: &[&str] = &["check", "specs/d.toml", "--bless", "--config", "caps.toml"];
    let dry_run: &[&str] = &[
        "run",
        "specs/d.toml",
        "-m",
        "openai:m@http://127.0.0.1:9/v1",
        "--dry-run",
    ];
    // The error is at the key that names the file, or in a gzip's content.
    let key = "specs/d.toml:4:8";
    let unpacked = "specs/rows.jsonl.gz:1:1";
    let cases: [CapCase; 8] = [
        ("rows.jsonl", "harness.toml", 2048, check, 2, key),
        ("rows.jsonl", "harness.toml", 8192, check, 0, ""),
        ("rows.jsonl", "caps.toml", 2048, other, 2, key),
        ("rows.jsonl", "caps.toml", 8192, other, 0, ""),
        ("rows.jsonl", "harness.toml", 2048, dry_run, 2, key),
        ("rows.jsonl", "harness.toml", 8192, dry_run, 0, ""),
        ("rows.jsonl.gz", "harness.toml", 2048, check, 2, unpacked),
        ("rows.jsonl.gz", "harness.toml", 8192, check, 0, ""),
    ];
    for (data, config, cap, args, code, at) in cases {
        ws.write("specs/d.toml", &dataset_spec(data));
        for file in ["harness.toml", "caps.toml"] {
            let _ = std::fs::remove_file(ws.path().join(file));
        }
        ws.write(config, &format!("[limits]\ndataset_bytes = {cap}\n"));
        let mut cmd = harness(ws.path());
        cmd.args(args);
        let case = format!("{data} under {config}'s {cap}, {}", args[0]);
        let done = capped(&mut cmd, WALL);
        assert_eq!(done.code, Some(code), "{case}:\n{}", done.out);
        if code == 2 {
            for says in [
                at,
                "over the 2 KiB limit for datasets",
                "raise it with `dataset_bytes` in the `[limits]` table",
            ] {
                assert!(
                    done.out.contains(says),
                    "{case}: no {says:?}:\n{}",
                    done.out
                );
            }
        }
    }
}
