//! The seccomp filters: a deny-list of system calls that tests never need
//! and that widen the kernel surface a hostile program can reach, an
//! allow-list of socket families, and no x32 system calls.
//!
//! A deny-list rather than an allow-list: specs bring their own interpreters
//! (`command`), whose system calls we cannot know in advance, and an
//! allow-list that misses one fails a verdict, not a test of ours. What a
//! program can reach is bounded by the namespaces, the uid and Landlock;
//! this filter only narrows the kernel surface.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
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

/// The only families `socket()` may create. Inside the empty network
/// namespace these reach nothing; Unix sockets could reach the host's
/// (`/run/docker.sock`, an ssh-agent, D-Bus, abstract names) and netlink the
/// kernel. `socketpair()` stays allowed: its two ends reach only each other.
const SOCKET_FAMILIES: &[u64] = &[libc::AF_INET as u64, libc::AF_INET6 as u64];

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
    let family = condition(0, SeccompCmpOp::Ne, SOCKET_FAMILIES)?;
    let socket = BTreeMap::from([(libc::SYS_socket, vec![rule_of(family)?])]);
    let no_family = compile(
        socket,
        SeccompAction::Errno(libc::EAFNOSUPPORT as u32),
        arch,
    )?;
    Ok(vec![no_x32(), eperm, enosys, no_family])
}

/// Numbers with the x32 bit set name the same calls through another entry
/// point, which the filters above (keyed on plain numbers) would let pass:
/// answer them `ENOSYS`, as a kernel without x32 does.
fn no_x32() -> BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    if !cfg!(target_arch = "x86_64") {
        return vec![insn(RET, 0, 0, libc::SECCOMP_RET_ALLOW)];
    }
    // The architecture is checked by every other filter; offset 0 is the number.
    vec![
        insn(LD_ABS, 0, 0, 0),
        insn(JGE, 0, 1, X32_SYSCALL_BIT),
        insn(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        insn(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Matches when argument `arg` has `bit` set.
fn rule(arg: u8, bit: u64) -> Result<SeccompRule, SandboxError> {
    rule_of(condition(arg, SeccompCmpOp::MaskedEq(bit), &[bit])?)
}

/// Conditions `arg <op> value`, one per value (a rule needs all of them).
fn condition(
    arg: u8,
    op: SeccompCmpOp,
    values: &[u64],
) -> Result<Vec<SeccompCondition>, SandboxError> {
    values
        .iter()
        .map(|&value| {
            // Families are C ints: compare the low 32 bits only.
            let len = match op {
                SeccompCmpOp::Ne => SeccompCmpArgLen::Dword,
                _ => SeccompCmpArgLen::Qword,
            };
            SeccompCondition::new(arg, len, op.clone(), value)
                .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))
        })
        .collect()
}

fn rule_of(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))
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
