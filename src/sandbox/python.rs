//! The Python runtime: finding a real interpreter once, and how to run a
//! script with it in the sandbox.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::SandboxError;
use super::fs_policy::SYSTEM_DIRS;

/// A Python interpreter sandboxed programs can execute.
#[derive(Debug, Clone)]
pub struct Interpreter {
    /// The interpreter binary, symlinks resolved.
    pub path: PathBuf,
    /// Its installation prefix, when outside the system directories the sandbox reads.
    pub read_paths: Vec<PathBuf>,
}

impl Interpreter {
    /// The command running `script`, a file of the working directory.
    ///
    /// Not `-I`: it would also ignore `PYTHONHASHSEED`, and the environment
    /// is ours already (empty but for a few variables), so `-s` (no user
    /// site) and `-B` (no bytecode files) give the same isolation with
    /// deterministic hashing.
    pub fn argv(&self, script: &str) -> Vec<String> {
        vec![
            self.path.to_string_lossy().into_owned(),
            "-s".into(),
            "-B".into(),
            script.into(),
        ]
    }

    /// The command running the harness's own `script`, which imports only the
    /// standard library: also `-S` (no `site`), a third of Python's start-up,
    /// paid once per checked answer.
    pub fn own_argv(&self, script: &str) -> Vec<String> {
        let mut argv = self.argv(script);
        argv.insert(1, "-S".into());
        argv
    }
}

/// Environment variables the Python runtime sets in the sandbox.
pub(crate) const ENV: &[(&str, &str)] = &[
    ("PYTHONHASHSEED", "0"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONUTF8", "1"),
];

/// The interpreter: `$HARNESS_PYTHON`, else the system `python3`, else the
/// first `python3` on PATH, with version-manager shims (pyenv) resolved.
pub fn interpreter() -> Result<&'static Interpreter, SandboxError> {
    static FOUND: OnceLock<Result<Interpreter, SandboxError>> = OnceLock::new();
    FOUND.get_or_init(find).as_ref().map_err(Clone::clone)
}

fn find() -> Result<Interpreter, SandboxError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("HARNESS_PYTHON") {
        candidates.push(p.into());
    } else {
        candidates.push("/usr/bin/python3".into());
        candidates.push("/usr/local/bin/python3".into());
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path).map(|d| d.join("python3")));
        }
    }
    let mut rejected = Vec::new();
    for candidate in candidates {
        let Some(real) = resolve(&candidate) else {
            continue;
        };
        // Only a root harness hands the run to another uid that needs access.
        // SAFETY: geteuid cannot fail.
        let as_root = unsafe { libc::geteuid() } == 0;
        match if as_root { reachable(&real) } else { Ok(()) } {
            Ok(()) => {
                let prefix = real.parent().and_then(Path::parent).map(Path::to_path_buf);
                let read_paths = prefix
                    .filter(|p| !SYSTEM_DIRS.iter().any(|d| p.starts_with(d)))
                    .into_iter()
                    .collect();
                return Ok(Interpreter {
                    path: real,
                    read_paths,
                });
            }
            Err(why) => rejected.push(format!("{} ({why})", real.display())),
        }
    }
    Err(if rejected.is_empty() {
        SandboxError::NoInterpreter
    } else {
        SandboxError::NoUsableInterpreter(rejected.join(", "))
    })
}

/// The real interpreter behind `candidate`: symlinks followed, and a script
/// (a version-manager shim, ~80 ms a start) asked for `sys.executable` once.
fn resolve(candidate: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(candidate).ok()?;
    let head = std::fs::read(&real).ok().map(|b| b.starts_with(b"#!"))?;
    if !head {
        return Some(real);
    }
    // Trusted code, the user's own interpreter: it locates itself.
    let output = std::process::Command::new(&real)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(output.stdout).ok()?;
    std::fs::canonicalize(path.trim()).ok()
}

/// Why an unprivileged uid cannot execute an interpreter.
#[derive(Debug, thiserror::Error)]
enum Unreachable {
    /// The file or a directory above it could not be examined.
    #[error("{0}")]
    Stat(#[from] std::io::Error),
    /// The file lacks the others' read and execute bits.
    #[error("not readable and executable by other users")]
    NotShared,
    /// A directory above the file is not searchable by others.
    #[error("{} is private to its owner", .0.display())]
    PrivateDir(PathBuf),
}

/// Whether an unprivileged uid can execute `path` (every directory above it searchable).
fn reachable(path: &Path) -> Result<(), Unreachable> {
    let meta = std::fs::metadata(path)?;
    if meta.permissions().mode() & 0o005 != 0o005 {
        return Err(Unreachable::NotShared);
    }
    for dir in path.ancestors().skip(1) {
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o001 == 0 {
            return Err(Unreachable::PrivateDir(dir.to_path_buf()));
        }
    }
    Ok(())
}
