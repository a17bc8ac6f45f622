"""A warm interpreter: imports a program's modules once, then clones a fresh,
confined child per run (see `zygote.rs` and docs/sandbox.md, "Warm starts").

Started by the harness like any program: a fresh exec with an empty
environment, so its memory never holds a secret. As root it is started in
the sandbox's shared empty network namespace with no supplementary groups.
It reads nothing of any run but the run's uid and gid: each request is that
line and a bundle of descriptors it does not look into. It clones, the child
reads its own plan, and the parent only reaps and reports.

argv: warm.py <module directory> <main module> <clone flags> <clone's
system call number>. Descriptor 3 is the control socket to the harness
(SOCK_SEQPACKET).

Per run, the zygote takes the run's uid and gid as its effective ids (root
stays its saved id) and clones the child straight into new user, mount, PID,
IPC and UTS namespaces (a network namespace too where none is shared), then
takes root back. The child is the new PID namespace's init, PID 1. It then
does what child.rs's `enter()` does after its `unshare`, in the same order:
the uid and gid maps (dropping the saved root), mounts, no-new-privs,
Landlock, seccomp, rlimits, and a fork of the program as PID 2, which it
reaps. Only then does the run's main module see any of the run. A shared
page the program cannot reach carries the program's wait status from the
init to the zygote, which reports it. A run asked for with `m` has no
init: its child, once confined, runs the main itself as PID 1, and the
zygote reports the child's own status (for the harness's checker, which
starts no process and sends itself no signal).
"""

import atexit
import ctypes
import json
import mmap
import os
import select
import signal
import socket
import struct
import sys

CONTROL = 3
MAX_FDS = 64


def load(directory, main):
    """Imports the run's modules without starting them (`__name__` is not `__main__`)."""
    sys.path.insert(0, directory)
    module = __import__(main)
    sys.path.remove(directory)
    return module


def serve(module, control_fd=CONTROL, in_seat=False):
    control = socket.socket(fileno=control_fd)
    parent = os.getppid()
    # Lets each run's init see that the zygote is still there once its own
    # parent-death signal is set (its parent lies outside its PID namespace).
    me = os.pidfd_open(os.getpid())
    control.send(b"R%d" % os.getpid())
    runs = {}
    while True:
        ready, _, _ = select.select([control, *runs], [], [])
        for pidfd in [r for r in ready if r is not control]:
            pid, channel, page = runs.pop(pidfd)
            report_exit(pid, channel, page)
            os.close(pidfd)
        if control not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, MAX_FDS)
        except OSError:
            return
        if not message:
            return
        # Nothing of another run may stay reachable in a child: its report
        # channel would let this one forge that run's exit status.
        others = [control] + [channel for _, channel, _ in runs.values() if channel]
        if message == b"s":
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                # Returns when the harness lets the seat's zygote go.
                return seated(module, fds, others, [*runs, me], zygote)
            for fd in fds:
                os.close(fd)
            runs[os.pidfd_open(pid)] = (pid, None, None)
            continue
        run = start(message, fds, parent)
        if run is None:
            continue
        pid, channel, page, pidfd = run
        if pid == 0:
            # Returns only after the run's main did, confined; the interpreter
            # then ends as a fresh one would (atexit, flushing, exit status).
            child(module, fds, (others, [*runs], me), page, in_seat)
            return
        runs[pidfd] = (pid, channel, page)


def seated(module, fds, sockets, pidfds, zygote):
    """A zygote inside a seat's cgroups (fds: its control socket, then the
    seat's cgroup.procs files): it moves in once, so that its runs start
    inside instead of each waiting for the kernel to move them."""
    try:
        for other in sockets:
            other.close()
        for other in pidfds:
            os.close(other)
        starting(zygote)
        for fd in fds[1:]:
            if os.write(fd, b"0") != 1:
                os._exit(1)
            os.close(fd)
    except BaseException:
        os._exit(1)
    serve(module, fds[0], in_seat=True)


def start(message, fds, parent):
    """Clones run `message`'s child (`r`, or `r<uid> <gid>` as root; `m`
    for a main that is its own init): returns (0, channel, page, None) in
    the child, (pid, channel, page, pidfd) in the zygote, or None when no
    child could be made (the harness is told why). The page is None where
    the child is the program itself, which must not hold its own report."""
    channel = socket.socket(fileno=fds[0])
    page = None
    try:
        ids = [int(n) for n in message[1:].split()]
        if message[:1] != b"m":
            page = shared_page()
        pid = clone(ids, parent)
    except (OSError, ValueError, Failed) as error:
        for fd in fds[1:]:
            os.close(fd)
        if page is not None:
            libc.munmap(page, PAGE)
        try:
            channel.send(b"Ezygote: %s" % str(error).encode())
        except OSError:
            pass
        channel.close()
        return None
    if pid == 0:
        return 0, channel, page, None
    if page is not None:
        # Only this run's init may keep the page: no later clone inherits it.
        libc.madvise(page, PAGE, MADV_DONTFORK)
    for fd in fds[1:]:
        os.close(fd)
    # First from the zygote, which alone knows the child's pid outside its
    # namespace; the child's "G" or "E" may come before it, "X" only after.
    # With a pidfd, taken before the zygote can reap the child: the harness
    # then never signals a pid that a later process reuses.
    pidfd = os.pidfd_open(pid)
    try:
        socket.send_fds(channel, [b"P%d" % pid], [pidfd])
    except OSError:
        pass
    return pid, channel, page, pidfd


def clone(ids, parent):
    """clone(2) into the run's namespaces with fork's semantics, bracketed as
    `os.fork()` is. With `ids` the child is created as that uid and gid (the
    user namespace is then theirs, as after child.rs's setuid and unshare)
    while the zygote keeps root as its saved ids and takes it back at once."""
    if ids:
        uid, gid = ids
        os.setresgid(gid, gid, 0)
        try:
            os.setresuid(uid, uid, 0)
        except OSError:
            os.setresgid(0, 0, 0)
            raise
    ctypes.pythonapi.PyOS_BeforeFork()
    # Through a PyDLL, which keeps the GIL across the call, as os.fork does.
    # Unlike glibc's fork(), this leaves the child's cached thread id the
    # zygote's: the init never calls raise() or pthread_kill(), and the
    # program, forked by glibc's fork() through os.fork, gets its own.
    pid = pylibc.syscall(SYS_CLONE, CLONE_FLAGS | signal.SIGCHLD, 0, 0, 0, 0)
    errno = ctypes.get_errno()
    if pid == 0:
        # The init runs none of a program's code and no thread but this one,
        # so it needs none of os.fork's reinitialisation of the interpreter
        # (threads, locks, at-fork callbacks, which the program's own
        # os.fork below does for it): only the import lock released, as in
        # the parent. That spares copying about 80 of the zygote's pages.
        ctypes.pythonapi.PyOS_AfterFork_Parent()
        return 0
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if ids:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        # The id change cleared the zygote's parent-death signal.
        starting(parent)
    if pid < 0:
        raise Failed("clone: %s" % os.strerror(errno))
    return pid


def report_exit(pid, channel, page):
    """Reaps a run's child and reports the program's wait status (which an
    init left in the page; a main that was its own init is the child) with
    the whole tree's usage."""
    _, status, usage = os.wait4(pid, 0)
    if channel is None:
        return
    if page is not None:
        done, program = struct.unpack("ii", ctypes.string_at(page, 8))
        libc.munmap(page, PAGE)
        if done == 1:
            status = program
    line = "X%d %d %d %d" % (status, round(usage.ru_utime * 1e6), round(usage.ru_stime * 1e6), usage.ru_maxrss)
    try:
        channel.send(line.encode())
    except OSError:
        pass
    channel.close()


libc = ctypes.CDLL(None, use_errno=True)
pylibc = ctypes.PyDLL(None, use_errno=True)
# Explicit types: a variadic call would pass Python ints as 32-bit values,
# leaving the upper halves of 64-bit arguments undefined.
_long, _ulong, _ptr, _str, _size = ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
for _lib, _name, _args in [
    (libc, "syscall", [_long, _long, _long, _long, _long]),
    (pylibc, "syscall", [_long, _ulong, _ulong, _ulong, _ulong, _ulong]),
    (libc, "prctl", [ctypes.c_int, _ulong, _ulong, _ulong, _ulong]),
    (libc, "mount", [_str, _str, _str, _ulong, _ptr]),
    (libc, "sethostname", [_str, _size]),
    (libc, "setrlimit", [ctypes.c_int, _ptr]),
    (libc, "mmap", [_ptr, _size, ctypes.c_int, ctypes.c_int, ctypes.c_int, _long]),
    (libc, "munmap", [_ptr, _size]),
    (libc, "madvise", [_ptr, _size, ctypes.c_int]),
]:
    getattr(_lib, _name).argtypes = _args
libc.syscall.restype = _long
pylibc.syscall.restype = _long
libc.mmap.restype = _ptr
PAGE, MADV_DONTFORK = 4096, 10
EVERY_SIGNAL = signal.valid_signals()
# Set from argv: the harness knows the namespaces and the architecture.
CLONE_FLAGS, SYS_CLONE = 0, -1


def address(buffer):
    return ctypes.cast(buffer, ctypes.c_void_p).value


class Failed(Exception):
    pass


def check(step, rc):
    if rc < 0:
        raise Failed("%s: %s" % (step, os.strerror(ctypes.get_errno())))
    return rc


def shared_page():
    """A page the zygote and the run's init share, for the program's status."""
    page = libc.mmap(None, PAGE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
    if page is None or page == ctypes.c_void_p(-1).value:
        raise Failed("mmap: %s" % os.strerror(ctypes.get_errno()))
    return page


def child(module, fds, others, page, in_seat):
    """The run's init, PID 1 of its namespace: confine, then fork the program
    and reap, or, without a page, run the main itself."""
    sockets, pidfds, zygote = others
    try:
        for other in sockets:
            other.close()
        for other in pidfds:
            os.close(other)
        channel = socket.socket(fileno=fds[0])
    except BaseException:
        os._exit(125)
    try:
        plan, blobs = read_plan(fds)
        enter(plan, blobs, fds, (zygote, page, in_seat))
    except Failed as failure:
        channel.send(b"E" + str(failure).encode())
        os._exit(125)
    except BaseException as error:
        channel.send(b"E" + ("zygote: %r" % error).encode())
        os._exit(125)
    run(module, plan, fds, channel)


def read_plan(fds):
    with os.fdopen(fds[1], "rb") as f:
        data = f.read()
    size = struct.unpack_from("<Q", data)[0]
    plan = json.loads(data[8:8 + size])
    blobs, at = [], 8 + size
    for length in plan["blobs"]:
        blobs.append(data[at:at + length])
        at += length
    return plan, blobs


def enter(plan, blobs, fds, context):
    zygote, page, in_seat = context
    for index in plan["cgroups"]:
        if os.write(fds[index], b"0") != 1:
            raise Failed("join the run's cgroup")
    # The zygote's id change made the process non-dumpable, which makes its
    # /proc files root-owned; the files below must be writable by the run's uid.
    check("prctl(PR_SET_DUMPABLE)", libc.prctl(4, 1, 0, 0, 0))
    if in_seat:
        # The seat's memory limit is the run's alone: when the tree runs
        # out, the kernel must kill the run's processes before the zygote
        # it shares the cgroup with (raising a score needs no privilege;
        # a program that lowers it again risks only its own run).
        write_file("/proc/self/oom_score_adj", b"1000")
    write_file("/proc/self/setgroups", b"deny")
    write_file("/proc/self/uid_map", plan["uid_map"].encode())
    write_file("/proc/self/gid_map", plan["gid_map"].encode())
    if plan["ids"] is not None:
        # Root, the saved ids the clone kept, is not mapped here: drop it.
        uid, gid = plan["ids"]
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    starting(None)
    # The parent-death signal is set: from now on the zygote's end is ours.
    gone, _, _ = select.select([zygote], [], [], 0)
    if gone:
        os._exit(1)
    os.close(zygote)
    mount_workdir(plan, blobs)
    restrict(plan, blobs, fds)
    if page is None:
        return
    # The program never sees the page, so it cannot write its own report.
    check("madvise(MADV_DONTFORK)", libc.madvise(page, PAGE, MADV_DONTFORK))
    status = (ctypes.c_int * 2).from_address(page)
    pid = os.fork()
    if pid > 0:
        init(pid, status)
    starting(1)


def starting(parent):
    """setup.rs's `start`: the parent-death signal, and the parent still there."""
    check("prctl(PR_SET_PDEATHSIG)", libc.prctl(1, signal.SIGKILL, 0, 0, 0))
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    except OSError as error:
        raise Failed("%s: %s" % (path, error.strerror)) from None
    finally:
        os.close(fd)


MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18


def mount_workdir(plan, blobs):
    check("mount(/, MS_PRIVATE)", libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    check("mount(/proc)", libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None))
    workdir = plan["workdir"].encode()
    options = plan["tmpfs_options"].encode()
    check("mount(tmpfs on the working directory)",
          libc.mount(b"tmpfs", workdir, b"tmpfs", MS_NOSUID | MS_NODEV, options))
    for path, blob in plan["files"]:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(blobs[blob])
        except OSError as error:
            raise Failed("create a program file: %s" % error.strerror) from None
    os.chdir(workdir)
    check("sethostname", libc.sethostname(b"sandbox", 7))


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Rlimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]


def restrict(plan, blobs, fds):
    check("prctl(PR_SET_NO_NEW_PRIVS)", libc.prctl(38, 1, 0, 0, 0))
    if plan["landlock"] is not None:
        ruleset = fds[plan["landlock"]]
        for path, access in plan["late_rules"]:
            dir_fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            rule = ctypes.create_string_buffer(struct.pack("<Qi", access, dir_fd), 12)
            rc = libc.syscall(plan["sys_landlock_add_rule"], ruleset, 1, address(rule), 0)
            os.close(dir_fd)
            check("landlock_add_rule", rc)
        check("landlock_restrict_self", libc.syscall(plan["sys_landlock_restrict_self"], ruleset, 0, 0, 0))
    for blob in plan["seccomp"]:
        program = ctypes.create_string_buffer(blobs[blob], len(blobs[blob]))
        fprog = SockFprog(len(blobs[blob]) // 8, address(program))
        check("seccomp", libc.syscall(plan["sys_seccomp"], 1, 0, ctypes.addressof(fprog), 0))
    for resource, soft, hard in plan["rlimits"]:
        limit = Rlimit(soft, hard)
        check("setrlimit", libc.setrlimit(resource, ctypes.addressof(limit)))


def init(program, status):
    """The namespace's init: reap everything until the program exits, then
    leave its wait status where the zygote reads it. Every signal is blocked,
    as every one the program could send PID 1 is ignored at its default: the
    one call touches far fewer of the pages the init shares with the program
    than resetting each disposition would."""
    signal.pthread_sigmask(signal.SIG_SETMASK, EVERY_SIGNAL)
    os.closerange(0, 1 << 20)
    while True:
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(125)
        if pid == program:
            status[1] = code
            status[0] = 1
            os._exit(0)


def run(module, plan, fds, channel):
    """The program, PID 2: its streams, its channel, its environment, its main."""
    for target, index in enumerate(plan["stdio"]):
        os.dup2(fds[index], target)
    keep = [fds[index] for index in plan["channel"]]
    channel.send(b"G")
    channel.close()
    # Only the streams and the channel stay, as after child.rs's exec.
    low = 3
    for fd in [*sorted(keep), 1 << 20]:
        os.closerange(low, fd)
        low = fd + 1
    for fd in keep:
        os.set_inheritable(fd, True)
    os.environ.clear()
    for name, value in plan["env"]:
        os.environ[name] = value
    if keep:
        os.environ[plan["channel_env"]] = "%d,%d" % tuple(keep)
    # As a fresh interpreter running the script from the working directory would have it.
    sys.argv = [plan["script"]]
    sys.path[0] = plan["workdir"]
    module.__file__ = os.path.join(plan["workdir"], plan["script"])
    sys.modules["__main__"] = module
    os._exit(finish(module.main))


def finish(main):
    """Runs `main` and ends as the interpreter's own exit would (Python's
    `Py_FinalizeEx`): the error or `SystemExit` handled, non-daemon threads
    joined, atexit callbacks run, the streams flushed. But not the teardown
    that follows, which touches every object a fork shares with the zygote,
    so that the kernel copies their pages: 10-15 ms of every run."""
    interrupted = False
    try:
        main()
        code = 0
    except SystemExit as error:
        code = exit_code(error.code)
    except BaseException as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        sys.excepthook(type(error), error, error.__traceback__)
        code = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def exit_code(code):
    """The status `SystemExit(code)` ends the interpreter with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write("%s\n" % (code,))
        sys.stderr.flush()
    except Exception:
        pass
    return 1


if __name__ == "__main__":
    # pidfds, wait4's usage and descriptor passing: without them the harness
    # never hears "R" and runs every program cold.
    if sys.version_info < (3, 9):
        sys.exit(1)
    CLONE_FLAGS, SYS_CLONE = int(sys.argv[3]), int(sys.argv[4])
    serve(load(sys.argv[1], sys.argv[2]))
