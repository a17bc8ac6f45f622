//! Taking variables out of this process's environment for good.
//!
//! `unsetenv` only drops a variable from the list that children inherit and
//! `getenv` reads. `/proc/<pid>/environ` shows something else: the block of
//! `NAME=value` strings the process was started with, which stays in memory
//! as it was, readable by every process of the same user and by root. A
//! program the harness starts finds it at `/proc/$PPID/environ`. So a taken
//! variable is also blanked there: its bytes in the block `/proc/self/stat`
//! locates (`env_start` to `env_end`) are overwritten with NULs.
//!
//! [`take`] runs at start, before the process has a second thread; the CLI
//! hands what it returns to the secrets module, which keeps it in memory.
//!
//! A leaf: it imports nothing from the rest of the crate.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// Takes every variable whose name `wanted` accepts out of the environment
/// and blanks it in the original environment block. Returns the taken
/// variables (values not in UTF-8 are taken and dropped: no key is such),
/// and whether the block could be blanked.
pub(crate) fn take(wanted: impl Fn(&str) -> bool) -> (Vec<(String, String)>, std::io::Result<()>) {
    let names: Vec<OsString> = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| wanted(&name.to_string_lossy()))
        .collect();
    let mut taken = Vec::new();
    for name in &names {
        if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok()) {
            taken.push((name.to_string_lossy().into_owned(), value));
        }
        // SAFETY: called at start, while the process has one thread, so no
        // other thread reads or writes the environment meanwhile.
        unsafe { std::env::remove_var(name) };
    }
    let blanked = if names.is_empty() {
        Ok(())
    } else {
        blank(&names)
    };
    (taken, blanked)
}

/// Makes the process non-dumpable: its memory, where the keys now live, and
/// its `/proc` files (`mem`, `environ`) are then root's alone, and it
/// writes no core file. A program runs as another user only in the
/// sandbox, so this guards against other users and ptrace; a program of the
/// same user sees no key in the environment block because [`take`] blanked it.
pub(crate) fn forbid_dumps() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_DUMPABLE changes only a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Overwrites with NULs every `NAME=value` string of the original
/// environment block whose name is one of `names`.
fn blank(names: &[OsString]) -> std::io::Result<()> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let (start, end) = env_block(&stat).ok_or_else(|| {
        std::io::Error::other("/proc/self/stat does not locate the environment block")
    })?;
    let block = start as *mut u8;
    let len = end.saturating_sub(start);
    let mut entry = 0;
    while entry < len {
        // SAFETY: [start, end) is this process's environment block, mapped
        // for its lifetime; only bytes inside it are read.
        let at = |i: usize| unsafe { block.add(i).read_volatile() };
        let mut stop = entry;
        while stop < len && at(stop) != 0 {
            stop += 1;
        }
        let bytes: Vec<u8> = (entry..stop).map(at).collect();
        let name = bytes.split(|&b| b == b'=').next().unwrap_or_default();
        if stop > entry && names.iter().any(|n| n.as_bytes() == name) {
            for i in entry..stop {
                // SAFETY: inside the block, as above. Nothing points at this
                // string any more: `remove_var` dropped it from `environ`.
                unsafe { block.add(i).write_volatile(0) };
            }
        }
        entry = stop + 1;
    }
    Ok(())
}

/// `env_start` and `env_end` (fields 50 and 51) of a `/proc/<pid>/stat`
/// line. Fields are counted after the command name's closing parenthesis,
/// since the name itself may hold spaces and parentheses.
fn env_block(stat: &str) -> Option<(usize, usize)> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts with field 3 (the state).
    let mut fields = rest.split_whitespace().skip(50 - 3);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_block_is_located_past_an_odd_command_name() {
        let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        let stat = format!("42 (a) b (c) {}", fields.join(" "));
        assert_eq!(env_block(&stat), Some((50, 51)));
        assert_eq!(env_block("42 (x) R 1 2"), None);
    }

    #[test]
    fn this_process_has_a_block() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let (start, end) = env_block(&stat).unwrap();
        assert!(end > start);
    }
}
