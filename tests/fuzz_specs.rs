//! A seeded mutation fuzzer over the spec loader, `harness check` and the
//! rules: every shipped and documented spec is mutated (lines dropped,
//! doubled, swapped or cut; values replaced by edge cases of every type;
//! bytes flipped) and each mutant is loaded, checked, and its rules run on
//! odd answers. No mutant may panic. Bounded in count and time so it runs in
//! CI; `HARNESS_FUZZ_MUTANTS` and `HARNESS_FUZZ_SECS` widen it locally,
//! `HARNESS_FUZZ_SEED` picks another sequence. A panicking mutant is saved
//! under the target directory for reproduction.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::GoldenMode;
use harness::Spec;
use harness::{CheckOptions, check_file};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Defaults: enough to find the panics this fuzzer was built for, quickly.
const MUTANTS: usize = 1500;
const SECS: u64 = 60;

/// Values a mutation puts in place of another: every TOML type, empties,
/// extremes, wrong shapes.
const VALUES: &[&str] = &[
    "\"\"",
    "\" \"",
    "[]",
    "[[]]",
    "[\"\"]",
    "{}",
    "0",
    "-1",
    "1",
    "3",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-0.0",
    "nan",
    "inf",
    "true",
    "\"answer\"",
    "\"x.y.0\"",
    "[1, \"a\", {}]",
    "{ a = [] }",
    "{ answer = [] }",
    "{ answer = \"\" }",
    "{ answer = {} }",
    "'''\nloop {}\n'''",
    "'''\n#{ }\n'''",
    "\"{{ undefined }}\"",
    "\"(\"",
    "\"\\u0000\"",
];

/// Answers every mutant's rules are run on.
const ANSWERS: &[&str] = &[
    "",
    " ",
    "42",
    "-0.0e-0",
    "{}",
    "{\"a\": [1, {\"b\": null}]}",
    "```\n```",
    "<think>",
    "Париж, Токио и ещё 3,5 млн",
    "\u{0}\u{feff}",
];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn corpus() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["specs", "docs/examples/specs", "tests/fixtures/malformed"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for file in files {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            out.push((file, text));
        }
    }
    out
}

fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

/// One to three random edits of `text`.
fn mutate(rng: &mut ChaCha8Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for _ in 0..=(rng.next_u32() % 3) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let n = lines.len() as u64;
        let i = (rng.next_u64() % n) as usize;
        match rng.next_u32() % 7 {
            0 => {
                lines.remove(i);
            }
            1 => {
                let line = lines[i].clone();
                lines.insert(i, line);
            }
            2 => {
                let j = (rng.next_u64() % n) as usize;
                lines.swap(i, j);
            }
            3 | 4 => {
                // Replace a value: everything after the first `=` of a `key = value` line.
                if let Some(at) = lines[i].find('=') {
                    let key = lines[i][..at].to_owned();
                    lines[i] = format!("{key}= {}", pick(rng, VALUES));
                }
            }
            5 => {
                let cut = (rng.next_u64() % (lines[i].len() as u64 + 1)) as usize;
                let mut cut = cut;
                while !lines[i].is_char_boundary(cut) {
                    cut -= 1;
                }
                lines[i].truncate(cut);
            }
            _ => {
                let chars: Vec<char> = lines[i].chars().collect();
                if !chars.is_empty() {
                    let c = (rng.next_u64() % chars.len() as u64) as usize;
                    let noise = [
                        '"', '\'', '[', ']', '{', '}', '=', '\\', '#', '\n', 'я', '0',
                    ];
                    let mut chars = chars;
                    chars[c] = *pick(rng, &noise);
                    lines[i] = chars.into_iter().collect();
                }
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Loads, checks and verifies one mutant; a panic escapes to the caller.
fn exercise(file: &Path, golden: &Path) {
    let mode = GoldenMode {
        bless: false,
        write_pending: false,
    };
    let options = CheckOptions::alone(golden, mode);
    let report = check_file(file, &options);
    if !report.errors.is_empty() {
        return;
    }
    let Ok(spec) = Spec::load(file) else { return };
    if spec.rules.needs_sandbox() || spec.rules.needs_judge() {
        return;
    }
    let vars = spec.vars(0).unwrap_or_default();
    for answer in ANSWERS {
        let _ = spec.verify(answer, &vars);
    }
    let _ = spec.preflight();
}

#[test]
fn no_mutant_of_any_spec_makes_the_harness_panic() {
    let seed = env_number("HARNESS_FUZZ_SEED", 19);
    let max = env_number("HARNESS_FUZZ_MUTANTS", MUTANTS as u64) as usize;
    let budget = Duration::from_secs(env_number("HARNESS_FUZZ_SECS", SECS));
    let corpus = corpus();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    // Mutants sit where the originals did, relative to the schemas folder and
    // the like, through a copy of each source directory's helper files.
    let work = tmp.path().join("a/b");
    std::fs::create_dir_all(&work).unwrap();
    let golden = tmp.path().join("golden");
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let (mut count, mut panics) = (0usize, Vec::new());
    while count < max && started.elapsed() < budget {
        let (origin, text) = pick(&mut rng, &corpus);
        let mutant = mutate(&mut rng, text);
        let file = work.join(format!("m{count}.toml"));
        std::fs::write(&file, &mutant).unwrap();
        if catch_unwind(AssertUnwindSafe(|| exercise(&file, &golden))).is_err() {
            let saved =
                Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz_panic_{count}.toml"));
            std::fs::write(&saved, &mutant).unwrap();
            panics.push(format!(
                "{} (mutant of {})",
                saved.display(),
                origin.display()
            ));
        }
        let _ = std::fs::remove_file(&file);
        count += 1;
    }
    std::panic::set_hook(quiet);
    eprintln!(
        "fuzz: {count} mutants of {} specs in {:.1}s (seed {seed}), {} panics",
        corpus.len(),
        started.elapsed().as_secs_f64(),
        panics.len()
    );
    assert!(count >= 200, "only {count} mutants ran within {budget:?}");
    assert!(
        panics.is_empty(),
        "mutants that panicked (rerun one with `harness check FILE`):\n{}",
        panics.join("\n")
    );
}
