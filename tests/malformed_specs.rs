//! The malformed-spec corpus: every file in `tests/fixtures/malformed/*.toml`
//! is a broken spec whose first line says where `harness check` must point and
//! what it must say:
//!
//! ```toml
//! # expect: 12:1 unknown key `tolerence`
//! # expect: 12:1 did you mean `tolerance`?
//! # expect: bad_script.rhai:4:21 Array index 10 out of bounds
//! ```
//!
//! `LINE:COL` is 1-based and in the fixture itself; `FILE:LINE:COL` names a
//! helper file relative to the fixtures directory (a `.rhai` generator, a JSON
//! schema). For each directive the output must contain `<file>:<LINE>:<COL>`
//! (the path as given on the command line) and the text after it. A fixture
//! may carry several directives: the loader reports every problem at once.
//!
//! Every fixture must also make `harness check` exit with code 2, quickly, and
//! without a panic. All fixtures run before the test fails, and the failure
//! lists every broken fixture with the binary's full output.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{harness, root};

/// A fixture that does not finish within this is reported as hanging.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The corpus must not shrink below this.
const MIN_FIXTURES: usize = 30;

fn fixtures_dir() -> PathBuf {
    root().join("tests/fixtures/malformed")
}

/// Every `*.toml` fixture and every fixture directory (specs checked
/// together, whose directives use the `FILE:LINE:COL` form), sorted.
fn fixtures() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") || p.is_dir())
        .collect();
    files.sort();
    files
}

/// A fixture's text: the file (a spec that is not valid UTF-8 too), or a
/// directory's `*.toml` files one after the other.
fn fixture_source(fixture: &Path) -> std::io::Result<String> {
    if !fixture.is_dir() {
        return Ok(String::from_utf8_lossy(&std::fs::read(fixture)?).into_owned());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    let mut text = String::new();
    for file in files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
    {
        text.push_str(&String::from_utf8_lossy(&std::fs::read(file)?));
    }
    Ok(text)
}

/// One `# expect:` directive.
#[derive(Debug)]
struct Expectation {
    /// The file the location is in, spelled as the binary prints it.
    file: PathBuf,
    line: usize,
    column: usize,
    /// Text the output must contain.
    text: String,
}

impl Expectation {
    fn location(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

const DIRECTIVE: &str = "# expect:";

/// The directives of a fixture; the first line must be one.
fn expectations(fixture: &Path, source: &str) -> Result<Vec<Expectation>, String> {
    let mut lines = source.lines().map(|l| l.trim_end_matches('\r'));
    if !lines
        .next()
        .is_some_and(|first| first.starts_with(DIRECTIVE))
    {
        return Err(format!(
            "the first line is not a `{DIRECTIVE} LINE:COL text` directive"
        ));
    }
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let Some(rest) = line.trim_end_matches('\r').strip_prefix(DIRECTIVE) else {
            continue;
        };
        let bad = |why: &str| format!("line {}: {why}: {line:?}", i + 1);
        let (location, text) = rest
            .trim_start()
            .split_once(' ')
            .ok_or_else(|| bad("no text after the location"))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(bad("no text after the location"));
        }
        let mut parts = location.rsplitn(3, ':');
        let column = parts
            .next()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| bad("bad column"))?;
        let line_no = parts
            .next()
            .and_then(|l| l.parse().ok())
            .ok_or_else(|| bad("bad line"))?;
        let file = match parts.next() {
            None => fixture.to_path_buf(),
            Some(rel) => {
                let path = fixtures_dir().join(rel);
                if !path.exists() {
                    return Err(bad(&format!("{} does not exist", path.display())));
                }
                path
            }
        };
        if line_no == 0 || column == 0 {
            return Err(bad("lines and columns are 1-based"));
        }
        found.push(Expectation {
            file,
            line: line_no,
            column,
            text: text.to_owned(),
        });
    }
    Ok(found)
}

/// Runs `harness check <fixture> --golden <tmp>` in a fresh temp dir, with a
/// timeout; returns (exit code, stdout + stderr, elapsed).
fn run_check(fixture: &Path) -> Result<(Option<i32>, String, Duration), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let golden = tmp.path().join("golden");
    let out_path = tmp.path().join("stdout.txt");
    let err_path = tmp.path().join("stderr.txt");
    let stdout = File::create(&out_path).map_err(|e| e.to_string())?;
    let stderr = File::create(&err_path).map_err(|e| e.to_string())?;
    let mut cmd = harness(tmp.path());
    cmd.arg("check")
        .arg(fixture)
        .arg("--golden")
        .arg(&golden)
        .stdout(stdout)
        .stderr(stderr);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run the harness binary: {e}"))?;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break Some(status),
            None if started.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let elapsed = started.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()),
        String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()),
    );
    match status {
        Some(status) => Ok((status.code(), text, elapsed)),
        None => Err(format!(
            "did not finish within {}s (a hang?); output so far:\n{text}",
            TIMEOUT.as_secs()
        )),
    }
}

/// Checks one fixture; returns every problem with it.
fn check_fixture(fixture: &Path) -> Vec<String> {
    let source = match fixture_source(fixture) {
        Ok(s) => s,
        Err(e) => return vec![format!("cannot read the fixture: {e}")],
    };
    let expected = match expectations(fixture, &source) {
        Ok(e) => e,
        Err(e) => return vec![e],
    };
    let (code, output, _elapsed) = match run_check(fixture) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    if code != Some(2) {
        problems.push(format!("exit code {code:?}, expected Some(2)"));
    }
    if output.contains("panicked") {
        problems.push("the binary panicked".to_owned());
    }
    for e in &expected {
        let location = e.location();
        let has_location = output.contains(&location);
        let has_text = output.contains(&e.text);
        match (has_location, has_text) {
            (true, true) => {}
            (false, true) => problems.push(format!(
                "no error at {location} (the text «{}» is printed)",
                e.text
            )),
            (true, false) => problems.push(format!(
                "an error at {location}, but «{}» is not printed",
                e.text
            )),
            (false, false) => {
                problems.push(format!("neither {location} nor «{}» is printed", e.text))
            }
        }
    }
    if !problems.is_empty() {
        let indented: String = output.lines().map(|l| format!("    | {l}\n")).collect();
        problems.push(format!("output:\n{indented}"));
    }
    problems
}

#[test]
fn every_malformed_spec_is_reported_where_it_is_wrong() {
    let files = fixtures();
    assert!(
        !files.is_empty(),
        "no fixtures in {}",
        fixtures_dir().display()
    );
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(PathBuf, Vec<String>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let problems = check_fixture(file);
                    if !problems.is_empty() {
                        failures.lock().unwrap().push((file.clone(), problems));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    if !failures.is_empty() {
        let mut report = format!(
            "{} of {} malformed fixtures failed:\n",
            failures.len(),
            files.len()
        );
        for (file, _) in &failures {
            report.push_str(&format!(
                "  - {}\n",
                file.file_name().unwrap().to_string_lossy()
            ));
        }
        for (file, problems) in &failures {
            report.push_str(&format!("\n== {}\n", file.display()));
            for p in problems {
                report.push_str(&format!("  {p}\n"));
            }
        }
        panic!("{report}");
    }
}

#[test]
fn the_corpus_is_large_and_every_fixture_states_its_expectation() {
    let files = fixtures();
    assert!(
        files.len() >= MIN_FIXTURES,
        "only {} malformed fixtures in {}; keep at least {MIN_FIXTURES}",
        files.len(),
        fixtures_dir().display()
    );
    let mut bad = Vec::new();
    for file in &files {
        let source = fixture_source(file).unwrap();
        match expectations(file, &source) {
            Ok(e) if e.is_empty() => bad.push(format!("{}: no expectations", file.display())),
            Ok(_) => {}
            Err(e) => bad.push(format!("{}: {e}", file.display())),
        }
    }
    assert!(
        bad.is_empty(),
        "fixtures with bad `# expect:` directives:\n{}",
        bad.join("\n")
    );
}

#[test]
fn directives_parse_both_location_forms() {
    let fixture = fixtures_dir().join("x.toml");
    let src = "# expect: 3:7 unknown key `tittle`\r\n# expect: bad_script.rhai:4:21 out of bounds\nid = 1\n";
    let e = expectations(&fixture, src).unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].line, e[0].column, e[0].text.as_str()),
        (3, 7, "unknown key `tittle`")
    );
    assert_eq!(e[0].file, fixture);
    assert_eq!(e[1].file, fixtures_dir().join("bad_script.rhai"));
    assert_eq!(
        (e[1].line, e[1].column, e[1].text.as_str()),
        (4, 21, "out of bounds")
    );
    assert!(expectations(&fixture, "id = 1\n# expect: 1:1 x\n").is_err());
    assert!(expectations(&fixture, "# expect: 0:1 x\n").is_err());
    assert!(expectations(&fixture, "# expect: 1:1\n").is_err());
}
