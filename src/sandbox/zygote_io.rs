//! How the harness talks to its zygotes (`zygote.rs`): the plan in a memory
//! file, and messages with descriptors over `SOCK_SEQPACKET` sockets.

use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::child::ChildPlan;

/// The plan in a memory file: an 8-byte length, a JSON header, then blobs
/// (files, seccomp programs). Descriptors the child needs are appended to
/// `fds` and named in the header by their index there (the memory file
/// itself goes in at index 1). The network namespace is not among them:
/// the zygote joined it when it started, and its clones inherit it.
pub(super) fn plan_file(
    plan: &ChildPlan,
    (cgroups, stdio): (&[OwnedFd], [RawFd; 3]),
    (env, script): (&[(String, String)], &str),
    fds: &mut Vec<RawFd>,
) -> std::io::Result<std::fs::File> {
    // Index 1 is the plan file, inserted by the caller.
    let push = |fd: RawFd, fds: &mut Vec<RawFd>| {
        fds.push(fd);
        fds.len()
    };
    let stdio: Vec<usize> = stdio.iter().map(|&fd| push(fd, fds)).collect();
    let cgroup_indices: Vec<usize> = cgroups.iter().map(|fd| push(fd.as_raw_fd(), fds)).collect();
    let landlock = plan.landlock.map(|fd| push(fd, fds));
    let channel: Vec<usize> = plan.channel.iter().map(|&fd| push(fd, fds)).collect();
    let mut blobs: Vec<&[u8]> = Vec::new();
    let mut files = Vec::new();
    for (path, contents) in &plan.files {
        files.push((path.to_string_lossy().into_owned(), blobs.len()));
        blobs.push(contents);
    }
    let filters: Vec<Vec<u8>> = plan.seccomp.iter().map(bpf_bytes).collect();
    let mut seccomp = Vec::new();
    for filter in &filters {
        seccomp.push(blobs.len());
        blobs.push(filter);
    }
    let header = serde_json::json!({
        "cgroups": cgroup_indices,
        "landlock": landlock,
        "channel": channel,
        "stdio": stdio,
        "ids": plan.ids,
        "uid_map": String::from_utf8_lossy(&plan.uid_map),
        "gid_map": String::from_utf8_lossy(&plan.gid_map),
        "workdir": plan.workdir.to_string_lossy(),
        "tmpfs_options": plan.tmpfs_options.to_string_lossy(),
        "files": files,
        "late_rules": plan.late_rules.iter()
            .map(|(p, a)| (p.to_string_lossy().into_owned(), a)).collect::<Vec<_>>(),
        "seccomp": seccomp,
        "rlimits": plan.rlimits.iter()
            .map(|(r, l)| (*r, l.rlim_cur, l.rlim_max)).collect::<Vec<_>>(),
        "sys_landlock_add_rule": libc::SYS_landlock_add_rule,
        "sys_landlock_restrict_self": libc::SYS_landlock_restrict_self,
        "sys_seccomp": libc::SYS_seccomp,
        "env": env,
        "channel_env": super::CHANNEL_ENV,
        "script": script,
        "blobs": blobs.iter().map(|b| b.len()).collect::<Vec<_>>(),
    });
    let header = serde_json::to_vec(&header)?;
    let mut file = super::memory_file(&[])?;
    file.write_all(&(header.len() as u64).to_le_bytes())?;
    file.write_all(&header)?;
    for blob in blobs {
        file.write_all(blob)?;
    }
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file)
}

/// A seccomp program as the kernel reads it: `struct sock_filter`s, native order.
fn bpf_bytes(program: &seccompiler::BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

/// A connected pair of close-on-exec `SOCK_SEQPACKET` sockets.
pub(super) fn seqpacket() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two descriptors we then own.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends `data` with `fds` attached (`SCM_RIGHTS`).
pub(super) fn send_fds(socket: &OwnedFd, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let payload = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; the fields set below point into live locals.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: the control buffer holds one header of `payload` bytes, as
    // CMSG_SPACE said; the copy stays within it.
    let rc = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as usize;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// One message from `socket`; empty at end of file. With a limit, an error
/// when nothing comes in time. A descriptor sent with it is closed.
pub(super) fn receive(socket: &OwnedFd, limit: Option<Duration>) -> std::io::Result<Vec<u8>> {
    receive_fd(socket, limit).map(|(message, _)| message)
}

/// One message from `socket` and the first descriptor sent with it, if any
/// (others are closed); empty at end of file. With a limit, an error when
/// nothing comes in time.
pub(super) fn receive_fd(
    socket: &OwnedFd,
    limit: Option<Duration>,
) -> std::io::Result<(Vec<u8>, Option<OwnedFd>)> {
    if let Some(limit) = limit {
        let mut poll = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack.
        let rc = unsafe { libc::poll(&mut poll, 1, limit.as_millis() as libc::c_int) };
        if rc == 0 {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
    }
    let mut buffer = vec![0u8; 4096];
    // Room for a few descriptors: more than one is never sent, but a
    // truncated control message would leak the ones cut off.
    const MAX_FDS: usize = 4;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) };
    let mut control = vec![0u64; (space as usize).div_ceil(8)];
    loop {
        let mut iov = libc::iovec {
            iov_base: buffer.as_mut_ptr().cast(),
            iov_len: buffer.len(),
        };
        // SAFETY: msghdr is plain data; the fields set below point into live locals.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as usize;
        // SAFETY: reads into the buffer and control space we own, of their lengths.
        let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            buffer.truncate(n as usize);
            return Ok((buffer, received_fds(&msg).into_iter().next()));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The descriptors a received message carries, each now ours.
fn received_fds(msg: &libc::msghdr) -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    // SAFETY: `msg` was filled by recvmsg; the CMSG macros walk its control
    // buffer within `msg_controllen`, and each SCM_RIGHTS payload holds
    // whole descriptors the kernel installed for this process.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let header = libc::CMSG_LEN(0) as usize;
                let count = ((*cmsg).cmsg_len as usize - header) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    fds
}
