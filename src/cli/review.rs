//! `harness review`: walk pending `.new` golden files like `cargo insta review`.

use crate::output::{out, outln};
use std::io::BufRead;
use std::path::Path;

use super::exit::{Exit, fail};
use crate::golden::diff::GoldenDiff;
use crate::golden::{golden_for_pending, pending_files};

/// Runs `harness review`.
pub(super) fn run(golden: &Path, color: bool) -> Exit {
    let pending = match pending_files(golden) {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot read {}: {e}", golden.display())),
    };
    if pending.is_empty() {
        outln!("no pending golden changes under {}", golden.display());
        return Exit::Success;
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let (mut accepted, mut rejected, mut skipped) = (0, 0, 0);
    for (i, new_path) in pending.iter().enumerate() {
        let target = golden_for_pending(new_path);
        let new = match crate::files::read_text(new_path, crate::files::FileKind::Golden) {
            Ok(t) => t,
            Err(e) => return fail(format!("cannot read {}: {e}", new_path.display())),
        };
        let old =
            crate::files::read_text(&target, crate::files::FileKind::Golden).unwrap_or_default();
        outln!("[{}/{}] {}", i + 1, pending.len(), target.display());
        out!("{}", GoldenDiff::between(&old, &new, &target).render(color));
        let choice = loop {
            out!("accept (a), reject (r), skip (s)? ");
            crate::output::flush_stdout();
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => break 's',
                Ok(_) => match line.trim() {
                    "a" | "accept" => break 'a',
                    "r" | "reject" => break 'r',
                    "s" | "skip" => break 's',
                    _ => continue,
                },
            }
        };
        let result = match choice {
            'a' => std::fs::rename(new_path, &target).map(|_| accepted += 1),
            'r' => std::fs::remove_file(new_path).map(|_| rejected += 1),
            _ => {
                skipped += 1;
                Ok(())
            }
        };
        if let Err(e) = result {
            return fail(format!("{}: {e}", new_path.display()));
        }
        outln!();
    }
    outln!("{accepted} accepted, {rejected} rejected, {skipped} skipped");
    Exit::differences_if(skipped > 0)
}
