//! `harness new ID`: a commented starter spec that `harness check` accepts at
//! once, with its golden instances written beside it.

use crate::output::outln;
use std::path::Path;

use super::exit::{Exit, fail};
use crate::check::{CheckOptions, check_file};
use crate::golden::GoldenMode;
use crate::spec::valid_id;

/// The starter spec; `@ID@` stands for the id.
const STARTER: &str = include_str!("starter.toml");

/// Runs `harness new`.
pub(super) fn run(id: &str, dir: &Path, golden: &Path) -> Exit {
    if !valid_id(id) {
        return fail(format!(
            "`{id}` cannot be a spec id: use ASCII letters, digits, `_` and `-` (it names files)"
        ));
    }
    let file = dir.join(format!("{id}.toml"));
    if file.exists() {
        return fail(format!("{} exists; pick another id", file.display()));
    }
    let mut text = STARTER.replace("@ID@", id);
    if !dir.join("../schemas/spec.schema.json").exists() {
        // The editor hint only helps where the schema is where the hint says.
        text = text.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n";
    }
    if let Err(e) = crate::files::write_atomic(&file, text.as_bytes()) {
        return fail(format!("{}: {e}", file.display()));
    }
    let mode = GoldenMode {
        bless: true,
        write_pending: false,
    };
    let options = CheckOptions::alone(golden, mode);
    let check = check_file(&file, &options);
    if let Some(e) = check.errors.first() {
        return fail(format!("the starter spec does not check: {e}"));
    }
    outln!(
        "wrote {} ({} instances, {} examples hold) and its golden instances under {}",
        file.display(),
        check.instances,
        check.examples,
        golden.display()
    );
    outln!("next: edit it, then `harness check {}`", file.display());
    Exit::Success
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_files_safely() {
        assert!(valid_id("t07_my-spec"));
        assert!(!valid_id(""));
        assert!(!valid_id("../x"));
        assert!(!valid_id("a b"));
    }
}
