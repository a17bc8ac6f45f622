//! The Landlock ruleset: which files a sandboxed program may touch.
//!
//! System directories are readable and executable, the working directory is
//! fully writable, a few device files are usable, and everything else (the
//! harness's files, results, home directories, other sandboxes) is denied.
//! TCP bind/connect and signals or abstract sockets leaving the sandbox are
//! denied too, on kernels whose Landlock knows them.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::SandboxError;

/// The newest ABI whose rights we ask for; older kernels enforce what they know.
const TARGET_ABI: ABI = ABI::V6;

/// Directories a program may read and execute from.
pub(super) const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt",
];

/// Device files a program may read and write.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// The Landlock ABI version this kernel supports (0 when it has none).
pub(super) fn kernel_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented way to query the ABI: no ruleset, size 0, version flag.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    version.max(0)
}

/// A ruleset allowing reads of `SYSTEM_DIRS` and `extra_read`.
///
/// The working directory's rule is added by the child: a rule names an
/// inode, and the tmpfs mounted there after the fork is a new one.
pub(super) fn ruleset(extra_read: &[PathBuf]) -> Result<OwnedFd, SandboxError> {
    let err = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let read = AccessFs::from_read(TARGET_ABI);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(err)?
        .handle_access(AccessNet::from_all(TARGET_ABI))
        .map_err(err)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(SYSTEM_DIRS, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(extra_read, read))
        .map_err(err)?
        .add_rules(path_beneath_rules(DEVICES, device))
        .map_err(err)?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Unsupported("this kernel does not enforce Landlock".into()))
}

/// Access rights as kernel bits: everything this kernel knows, or reading only.
pub(super) fn access_bits(write: bool) -> u64 {
    let abi = match kernel_abi() {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => TARGET_ABI,
    };
    let abi = abi.min(TARGET_ABI);
    if write {
        AccessFs::from_all(abi).bits()
    } else {
        AccessFs::from_read(abi).bits()
    }
}
