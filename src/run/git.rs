//! The git commit a run's specs were at, when they live in a git checkout,
//! so the viewer's history can say which version of the specs each run
//! measured. Read from `.git` itself (`HEAD`, the branch it names, or
//! `packed-refs`): no child process starts and git need not be installed.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most of one `.git` file read (`packed-refs` of a large repository).
const FILE_MAX: u64 = 64 << 20;

/// The commit checked out in the git repository holding `dir`, if any.
pub(crate) fn head_commit(dir: &Path) -> Option<String> {
    // A file's parent may be empty: the working directory.
    let dir = std::path::absolute(dir)
        .or_else(|_| std::env::current_dir())
        .ok()?;
    let dot_git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let git_dir = git_dir(&dot_git)?;
    // A linked worktree keeps its HEAD and finds the shared refs through `commondir`.
    let common =
        read(&git_dir.join("commondir")).map_or(git_dir.clone(), |c| git_dir.join(c.trim()));
    let head = read(&git_dir.join("HEAD"))?;
    let Some(name) = head.trim().strip_prefix("ref:").map(str::trim) else {
        return object_id(head.trim()); // detached
    };
    if !name.starts_with("refs/") || name.split('/').any(|part| part == "..") {
        return None;
    }
    let loose = [&git_dir, &common]
        .into_iter()
        .find_map(|d| read(&d.join(name)));
    if let Some(id) = loose {
        return object_id(id.trim());
    }
    let packed = read(&common.join("packed-refs"))?;
    packed.lines().find_map(|line| {
        let (id, r) = line.split_once(' ')?;
        (r.trim() == name).then(|| object_id(id)).flatten()
    })
}

/// The repository directory `.git` stands for: itself, or where a
/// worktree's or submodule's `.git` file points (`gitdir: <path>`).
fn git_dir(dot_git: &Path) -> Option<PathBuf> {
    if dot_git.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = read(dot_git)?;
    let path = text.trim().strip_prefix("gitdir:")?.trim();
    Some(dot_git.parent()?.join(path))
}

/// `text` when it is a SHA-1 or SHA-256 object id.
fn object_id(text: &str) -> Option<String> {
    let hex = text.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && matches!(text.len(), 40 | 64)).then(|| text.to_ascii_lowercase())
}

fn read(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(FILE_MAX).read_to_string(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    /// One case: its name, the files (path, text), the folder asked about
    /// and the commit expected.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, Option<&'a str>);

    /// Writes `files` (path, text) under a fresh folder; returns it.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn the_checked_out_commit_is_found_however_git_keeps_it() {
        let wt = "gitdir: ../repo/.git/worktrees/wt\n";
        let packed = format!("# pack-refs\n{B} refs/heads/other\n{A} refs/heads/main\n");
        let cases: [Case; 6] = [
            (
                "a branch",
                vec![
                    ("r/.git/HEAD", "ref: refs/heads/main\n"),
                    ("r/.git/refs/heads/main", A),
                ],
                "r/specs",
                Some(A),
            ),
            (
                "a packed branch",
                vec![
                    ("r/.git/HEAD", "ref: refs/heads/main\n"),
                    ("r/.git/packed-refs", &packed),
                ],
                "r",
                Some(A),
            ),
            ("detached", vec![("r/.git/HEAD", B)], "r/a/b", Some(B)),
            (
                "a linked worktree",
                vec![
                    ("repo/.git/worktrees/wt/HEAD", "ref: refs/heads/feature\n"),
                    ("repo/.git/worktrees/wt/commondir", "../..\n"),
                    ("repo/.git/refs/heads/feature", B),
                    ("wt/.git", wt),
                ],
                "wt",
                Some(B),
            ),
            (
                "a ref that climbs out",
                vec![("r/.git/HEAD", "ref: refs/../../x\n"), ("r/x", A)],
                "r",
                None,
            ),
            (
                "not a checkout",
                vec![("r/specs/q.toml", "")],
                "r/specs",
                None,
            ),
        ];
        for (name, files, dir, want) in cases {
            let root = tree(&files);
            let found = head_commit(&root.path().join(dir));
            // Outside the temporary folder lies this machine's own tree,
            // which may be a checkout: only cases that find one compare.
            if want.is_some() || !root.path().ancestors().any(|a| a.join(".git").exists()) {
                assert_eq!(found.as_deref(), want, "{name}");
            }
        }
    }
}
