//! The hostile-code suite: every snippet in `tests/fixtures/hostile/` tries
//! to break out of the sandbox. Each must be contained, and the harness
//! (this process) must keep running and keep sandboxing afterwards.
//!
//! The suite runs in a process of its own, started with a fake API key in
//! its environment (the key must never reach a program). Sandboxed programs
//! of other tests and other harnesses may run beside it: a surviving process
//! counts against this suite when it descends from this process, or from
//! nobody.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{Limits, Outcome, Program, Sandbox, Termination};

use crate::common::alone::{in_own_process, test_name};
use crate::common::python_suite;

const FAKE_KEY: &str = "sk-fake-hostile-suite-0123456789";

/// What a snippet's `# expect:` line asks for.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Exits normally after printing at least one CONTAINED line.
    Contained,
    /// Killed by the wall-clock or CPU limit.
    Killed,
    /// Killed for too much output.
    OutputLimit,
    /// Dies by a signal of its own.
    KilledBySignal,
}

struct World {
    project: PathBuf,
    canary_dir: tempfile::TempDir,
    listener: TcpListener,
    /// A pathname Unix socket in the canary directory, as a host service's.
    unix: UnixListener,
    /// An abstract Unix socket of the host's network namespace.
    abstract_unix: UnixListener,
    /// Whether cgroups bound each run's process tree here.
    tree_limits: bool,
}

impl World {
    fn canary(&self) -> PathBuf {
        self.canary_dir.path().join("canary.txt")
    }

    fn unix_path(&self) -> PathBuf {
        self.canary_dir.path().join("host.sock")
    }

    fn abstract_name() -> String {
        format!("harness-hostile-{}", std::process::id())
    }

    /// Any connection that reached a listener of the host's.
    fn connections(&self) -> Vec<&'static str> {
        let mut reached = Vec::new();
        if self.listener.accept().is_ok() {
            reached.push("connected to the loopback listener");
        }
        if self.unix.accept().is_ok() {
            reached.push("connected to the host's Unix socket");
        }
        if self.abstract_unix.accept().is_ok() {
            reached.push("connected to the host's abstract Unix socket");
        }
        reached
    }

    fn substitute(&self, text: &str, run: usize) -> String {
        text.replace("{project_dir}", &self.project.display().to_string())
            .replace(
                "{canary_dir}",
                &self.canary_dir.path().display().to_string(),
            )
            .replace("{canary}", &self.canary().display().to_string())
            .replace(
                "{listener_port}",
                &self.listener.local_addr().unwrap().port().to_string(),
            )
            .replace("{harness_pid}", &std::process::id().to_string())
            .replace("{unix_socket}", &self.unix_path().display().to_string())
            .replace("{abstract_socket}", &World::abstract_name())
            .replace(
                "{tree_limits}",
                if self.tree_limits { "True" } else { "False" },
            )
            .replace("{run}", &run.to_string())
    }
}

fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(3),
        cpu: Duration::from_secs(3),
        memory_bytes: 256 << 20,
        processes: 32,
        output_bytes: 256 << 10,
        disk_bytes: 16 << 20,
        ..Limits::default()
    }
}

fn python_program(source: String) -> Program {
    let python = harness::python_interpreter().expect("a python3 the sandbox can run");
    Program {
        argv: python.argv("main.py"),
        files: vec![("main.py".into(), source.into_bytes())],
        read_paths: python.read_paths.clone(),
        limits: limits(),
        ..Program::default()
    }
}

fn expectation(source: &str) -> Expect {
    let line = source.lines().next().unwrap_or_default();
    match line.strip_prefix("# expect: ").map(str::trim) {
        Some("contained") => Expect::Contained,
        Some("killed") => Expect::Killed,
        Some("output_limit") => Expect::OutputLimit,
        Some("killed_by_signal") => Expect::KilledBySignal,
        other => panic!("snippet needs a `# expect:` first line, found {other:?}"),
    }
}

/// Problems with one outcome, empty when it is as expected.
fn judge(expect: &Expect, outcome: &Outcome, limits: &Limits) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let mut problems: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("ESCAPED"))
        .map(str::to_owned)
        .collect();
    // The deadline holds, except that a program still computing short of its
    // CPU budget may run on (up to four times the deadline) to end at its CPU
    // limit on a loaded machine. The stretch stops once the whole tree has
    // used the budget: a tree of many processes (a fork bomb), each under its
    // own limit, must not compute far past it.
    let slack = Duration::from_secs(2);
    if outcome.usage.wall > limits.wall * 4 + slack {
        problems.push(format!("took {:?}, past the deadline", outcome.usage.wall));
    }
    // The budget, the tick count's lag (1 s), one stretch step on every core.
    let most_cpu = limits.cpu + Duration::from_secs(1) + Duration::from_millis(500) * cores();
    if outcome.usage.wall > limits.wall + slack && outcome.usage.tree_cpu > most_cpu {
        problems.push(format!(
            "took {:?} and {:?} of CPU: its deadline moved past its CPU budget ({})",
            outcome.usage.wall,
            outcome.usage.tree_cpu,
            outcome.describe(limits)
        ));
    }
    let ok = match expect {
        Expect::Contained => outcome.success() && stdout.contains("CONTAINED"),
        Expect::Killed => outcome.killed.timed_out || outcome.cpu_exhausted(limits),
        Expect::OutputLimit => {
            outcome.killed.output_limited && outcome.stdout.len() <= limits.output_bytes
        }
        Expect::KilledBySignal => outcome.termination == Termination::Signaled(libc::SIGSEGV),
    };
    if !ok {
        problems.push(format!(
            "expected {expect:?}, got {} (timed out: {}, stderr: {})",
            outcome.describe(limits),
            outcome.killed.timed_out,
            String::from_utf8_lossy(&outcome.stderr)
                .chars()
                .take(400)
                .collect::<String>()
        ));
    }
    problems
}

/// How a run ended, with its wall-clock and whole-tree CPU time.
fn account(outcome: &Outcome, limits: &Limits) -> String {
    let (wall, cpu) = (outcome.usage.wall, outcome.usage.tree_cpu);
    format!("{} (wall {wall:?}, cpu {cpu:?})", outcome.describe(limits))
}

/// The cores this machine gives the tests.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// A process's real uid and parent pid, from `/proc/PID/status`.
fn uid_and_parent(pid: u32) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u32> {
        let line = text.lines().find_map(|l| l.strip_prefix(name))?;
        line.split_whitespace().next()?.parse().ok()
    };
    Some((field("Uid:")?, field("PPid:")?))
}

/// Whether a process of `uids` is this harness's: its nearest ancestor
/// outside those uids is this process (every run is its child) or init (an
/// orphan). Another harness whose slot of uids is the same as ours (they
/// are shared out by pid) has its runs descend from itself instead.
fn started_here(pid: u32, uids: &std::ops::Range<u32>) -> bool {
    let mut at = pid;
    // A sandbox run is three processes deep; the bound only stops a cycle.
    for _ in 0..64 {
        match uid_and_parent(at) {
            Some((uid, parent)) if uids.contains(&uid) => at = parent,
            Some(_) => return at == std::process::id() || at <= 1,
            // Gone while we looked: its runs are judged on the next look.
            None => return true,
        }
    }
    true
}

/// This harness's processes of its sandbox uids still alive (root only:
/// other users keep their uid).
fn leftover_processes() -> Vec<String> {
    let ours = harness::own_uids();
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Some((uid, _)) = uid_and_parent(pid) else {
            continue;
        };
        if ours.contains(&uid) && started_here(pid, &ours) {
            left.push(format!("{pid} (uid {uid})"));
        }
    }
    left
}

fn no_leftovers_within(limit: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let left = leftover_processes();
        if left.is_empty() {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(format!("processes outlived their sandbox: {left:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn escape_files(run: usize, project: &Path) -> Vec<PathBuf> {
    [
        format!("/tmp/harness-escape-{run}"),
        format!("/var/tmp/harness-escape-{run}"),
        format!("/dev/shm/harness-escape-{run}"),
        format!("/etc/harness-escape-{run}"),
        format!("/harness-escape-{run}"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .chain([project.join(format!("harness-escape-{run}"))])
    .filter(|p| p.exists())
    .collect()
}

#[test]
fn hostile_snippets_are_contained_and_the_harness_keeps_going() {
    let name = "hostile_snippets_are_contained_and_the_harness_keeps_going";
    if !in_own_process(
        &test_name(module_path!(), name),
        &[("OPENAI_API_KEY", FAKE_KEY)],
    ) {
        return;
    }
    // The harness's environment holds the key, as a user's shell would give it.
    assert_eq!(std::env::var("OPENAI_API_KEY").as_deref(), Ok(FAKE_KEY));
    let sandbox = Sandbox::isolated().unwrap_or_else(|e| panic!("{e}"));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let canary_dir = tempfile::tempdir().unwrap();
    let unix = UnixListener::bind(canary_dir.path().join("host.sock")).unwrap();
    // Reachable by any uid, as a careless host service's socket would be.
    std::fs::set_permissions(
        canary_dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        canary_dir.path().join("host.sock"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let abstract_addr = SocketAddr::from_abstract_name(World::abstract_name()).unwrap();
    let world = World {
        project: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        canary_dir,
        listener: TcpListener::bind("127.0.0.1:0").unwrap(),
        unix,
        abstract_unix: UnixListener::bind_addr(&abstract_addr).unwrap(),
        tree_limits: sandbox.isolation().tree_limits.is_some(),
    };
    world.listener.set_nonblocking(true).unwrap();
    world.unix.set_nonblocking(true).unwrap();
    world.abstract_unix.set_nonblocking(true).unwrap();
    std::fs::write(world.canary(), "canary").unwrap();
    let prelude = std::fs::read_to_string(dir.join("_prelude.py")).unwrap();
    let snippets = python_suite(&dir, 25);

    let mut report = String::new();
    for (run, path) in snippets.iter().enumerate() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(path).unwrap();
        let expect = expectation(&source);
        let program = python_program(world.substitute(&format!("{prelude}\n{source}"), run));
        let mut problems = match sandbox.run(&program) {
            Ok(outcome) => {
                let stdout = String::from_utf8_lossy(&outcome.stdout);
                if std::env::var_os("HOSTILE_VERBOSE").is_some() {
                    eprintln!(
                        "── {name}: {}\n{stdout}",
                        account(&outcome, &program.limits)
                    );
                }
                if stdout.contains(FAKE_KEY) || outcome.stderr.windows(8).any(|w| w == b"sk-fake-")
                {
                    vec!["the fake API key reached the program".to_owned()]
                } else {
                    judge(&expect, &outcome, &program.limits)
                }
            }
            Err(e) => vec![format!("the sandbox failed: {e}")],
        };
        // Containment left no trace: canary intact, no escaped files, no
        // connection reached the listener, no process survived.
        if std::fs::read_to_string(world.canary()).ok().as_deref() != Some("canary") {
            problems.push("the canary file was changed or deleted".into());
            std::fs::write(world.canary(), "canary").unwrap();
        }
        for file in escape_files(run, &world.project) {
            problems.push(format!("wrote {}", file.display()));
            let _ = std::fs::remove_file(file);
        }
        problems.extend(world.connections().into_iter().map(str::to_owned));
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0
            && let Err(e) = no_leftovers_within(Duration::ZERO)
        {
            problems.push(e);
        }
        // And the harness still sandboxes the next program.
        let sanity = python_program("print('still here')".into());
        match sandbox.run(&sanity) {
            Ok(o) if o.success() && o.stdout == b"still here\n" => {}
            other => problems.push(format!("the next run failed: {other:?}")),
        }
        if !problems.is_empty() {
            writeln!(report, "{name}:\n  {}", problems.join("\n  ")).unwrap();
        }
    }
    let scratch = std::env::temp_dir().join("harness-sandbox");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().unwrap().to_string_lossy();
                    name.starts_with(&format!("{}-", std::process::id()))
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "working directories left behind: {left:?}");
    assert!(
        report.is_empty(),
        "hostile snippets not contained:\n{report}"
    );
}

/// RLIMIT_CPU counts whole seconds; a fractional limit is kept by the
/// capture loop's watch, so an endless loop ends near it, not a second on.
#[test]
fn a_fractional_cpu_limit_stops_a_loop_near_it() {
    let sandbox = Sandbox::isolated().unwrap_or_else(|e| panic!("{e}"));
    let mut program = python_program("while True:\n    pass\n".into());
    program.limits.cpu = Duration::from_millis(300);
    program.limits.wall = Duration::from_secs(10);
    let outcome = sandbox.run(&program).unwrap_or_else(|e| panic!("{e}"));
    let limits = &program.limits;
    assert!(
        outcome.cpu_exhausted(limits),
        "{}",
        account(&outcome, limits)
    );
    assert!(!outcome.killed.timed_out, "{}", account(&outcome, limits));
    assert_eq!(outcome.describe(limits), "killed: CPU limit of 0.3 s");
    // A tick or two of the watch past the limit, far from RLIMIT_CPU's 1 s.
    assert!(
        outcome.usage.tree_cpu < Duration::from_millis(600),
        "{}",
        account(&outcome, limits)
    );
}

/// A program that writes more than a pipe holds before it reads its input,
/// then reads only part of it: it ends normally with its output whole. Its
/// input is a file the sandbox wrote before the start. With a pipe, the
/// harness wrote the input before reading any output, and both sides waited
/// on each other with no limit watching yet: the run hung for good.
#[test]
fn a_program_that_writes_before_it_reads_its_large_input_finishes() {
    let sandbox = Sandbox::isolated().unwrap_or_else(|e| panic!("{e}"));
    let source = "import sys\nsys.stdout.write('x' * 100_000)\nsys.stdout.flush()\n\
                  head = sys.stdin.buffer.read(10)\nprint(len(head))\n";
    let mut program = python_program(source.into());
    program.stdin = vec![b'a'; 1 << 20];
    let outcome = sandbox.run(&program).unwrap_or_else(|e| panic!("{e}"));
    let limits = &program.limits;
    assert_eq!(
        outcome.termination,
        Termination::Exited(0),
        "{}",
        account(&outcome, limits)
    );
    assert_eq!(
        outcome.stdout.len(),
        100_000 + 3,
        "{}",
        account(&outcome, limits)
    );
    assert!(outcome.stdout.ends_with(b"10\n"));
}
