//! A workspace for driving the binary: a temp cwd with `specs/`,
//! `harness.toml`, and the `results/` and `golden/` a run writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fake_server::FakeServer;

/// A temporary working directory for one test.
pub struct Workspace {
    /// Kept alive for the test's duration.
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// An empty workspace with a `specs/` directory.
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("specs")).unwrap();
        Workspace { dir }
    }

    /// A workspace with `specs/<spec>` of the repository and one model,
    /// `fake` (OpenAI wire, id `fake-model`), on `fake`'s endpoint with `settings`.
    pub fn with_fake(spec: &str, fake: &FakeServer, settings: &str) -> Workspace {
        let ws = Workspace::new();
        ws.copy_spec(spec).fake_model(fake, settings);
        ws
    }

    /// Writes `harness.toml` with one model, `fake` (OpenAI wire, id
    /// `fake-model`), on `fake`'s endpoint with `settings`.
    pub fn fake_model(&self, fake: &FakeServer, settings: &str) -> &Self {
        let table = model_toml(
            "fake",
            "openai",
            "fake-model",
            &fake.openai_base(),
            settings,
        );
        self.write("harness.toml", &table)
    }

    /// The workspace root (the harness's cwd).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `specs/<rel>` of the repository to the same place in the workspace.
    pub fn copy_spec(&self, rel: &str) -> &Self {
        let to = self.path().join("specs").join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(super::root().join("specs").join(rel), to).unwrap();
        self
    }

    /// Copies `tests/fixtures/<rel>` into the workspace's `specs/` (flat).
    pub fn copy_fixture(&self, rel: &str) -> &Self {
        let from = super::root().join("tests/fixtures").join(rel);
        let name = from.file_name().unwrap().to_owned();
        std::fs::copy(&from, self.path().join("specs").join(name)).unwrap();
        self
    }

    /// Writes a file relative to the workspace.
    pub fn write(&self, rel: &str, text: &str) -> &Self {
        std::fs::write(self.path().join(rel), text).unwrap();
        self
    }

    /// `harness run ARGS --results results --golden golden --no-progress`.
    pub fn run_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = super::harness(self.path());
        cmd.arg("run").args(args).args([
            "--results",
            "results",
            "--golden",
            "golden",
            "--no-progress",
        ]);
        cmd
    }

    /// Runs `harness run ARGS ...` to completion: (exit code, output).
    pub fn run(&self, args: &[&str]) -> (i32, String) {
        super::run(&mut self.run_cmd(args))
    }

    /// Runs `harness run ARGS ...`, which must exit 0: its output.
    pub fn run_ok(&self, args: &[&str]) -> String {
        let (code, out) = self.run(args);
        assert_eq!(code, 0, "{out}");
        out
    }

    /// Runs `harness run ARGS ...`, which must exit `code` and print each
    /// of `wanted`: its output.
    pub fn run_expect(&self, args: &[&str], code: i32, wanted: &[&str]) -> String {
        super::expect(&mut self.run_cmd(args), code, wanted)
    }

    /// Run directories, oldest first.
    pub fn run_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.path().join("results/runs"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        // Run ids are UTC timestamps (suffixed -2, -3 within a second): name order is age order here.
        dirs.sort();
        dirs
    }

    /// The complete, parseable lines of a run's journal.
    pub fn journal(&self, run_dir: &Path) -> Vec<Value> {
        let text = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap_or_default();
        text.split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The journal of the most recent run.
    pub fn last_journal(&self) -> Vec<Value> {
        let dirs = self.run_dirs();
        self.journal(dirs.last().expect("a run directory exists"))
    }
}

/// A `[models.NAME]` table for harness.toml; `extra` adds raw lines.
pub fn model_toml(name: &str, provider: &str, model: &str, base_url: &str, extra: &str) -> String {
    format!(
        "[models.{name}]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n{extra}\n"
    )
}

/// A workspace with one spec, `specs/<file>`, and the model `fake` on `fake`'s OpenAI API.
pub fn fake_workspace(fake: &FakeServer, file: &str, spec: &str) -> Workspace {
    let ws = Workspace::new();
    ws.write(&format!("specs/{file}"), spec)
        .fake_model(fake, "timeout_secs = 5");
    ws
}

/// Starts `cmd` with piped output, sends it SIGINT (Ctrl-C) once the server has
/// seen `requests` requests, and returns its exit code and output (stderr, then stdout).
pub fn interrupt_after(
    cmd: &mut Command,
    fake: &FakeServer,
    requests: usize,
) -> (Option<i32>, String) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.count() < requests {
        assert!(Instant::now() < deadline, "no requests arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + String::from_utf8_lossy(&output.stdout).as_ref();
    (output.status.code(), text)
}
