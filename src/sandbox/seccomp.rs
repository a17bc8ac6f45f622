//! The seccomp filters: a deny-list of system calls that tests never need
//! and that widen the kernel surface a hostile program can reach.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// Denied outright with `EPERM`.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_personality,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_vhangup,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_fanotify_init,
    libc::SYS_lookup_dcookie,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
];

/// `clone` flags that would create namespaces.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    0x80, // CLONE_NEWTIME
];

/// `fchmodat2`, not yet named by every libc.
const SYS_FCHMODAT2: i64 = 452;

/// The filters to install, in order.
pub(super) fn filters() -> Result<Vec<BpfProgram>, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))?;
    let mut deny: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    deny.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .iter()
            .map(|&flag| rule(0, flag))
            .collect::<Result<_, _>>()?,
    );
    // Set-user-ID and set-group-ID bits: the mode is argument 1 of
    // chmod/fchmod and argument 2 of fchmodat/fchmodat2.
    let setid = [libc::S_ISUID as u64, libc::S_ISGID as u64];
    for (nr, arg) in [
        (libc::SYS_chmod, 1),
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (SYS_FCHMODAT2, 2),
    ] {
        deny.insert(
            nr,
            setid
                .iter()
                .map(|&bit| rule(arg, bit))
                .collect::<Result<_, _>>()?,
        );
    }
    let eperm = compile(deny, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    // clone3 passes its flags in memory a filter cannot read: say it does not
    // exist, and the C library falls back to clone, whose flags are checked.
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    let enosys = compile(clone3, SeccompAction::Errno(libc::ENOSYS as u32), arch)?;
    Ok(vec![eperm, enosys])
}

fn rule(arg: u8, bit: u64) -> Result<SeccompRule, SandboxError> {
    let condition = SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(bit),
        bit,
    )
    .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))?;
    SeccompRule::new(vec![condition]).map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
    arch: TargetArch,
) -> Result<BpfProgram, SandboxError> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
        .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp: {e}")))
}
