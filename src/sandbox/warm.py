"""A warm interpreter: imports a program's modules once, then forks a fresh,
confined child per run (see `zygote.rs` and docs/sandbox.md, "Warm starts").

Started by the harness like any program: a fresh exec with an empty
environment, so its memory never holds a secret. It reads nothing of any run:
each request is one byte and a bundle of descriptors it does not look into.
It forks, the child reads its own plan, and the parent only reaps and reports.

argv: warm.py <module directory> <main module>. Descriptor 3 is the control
socket to the harness (SOCK_SEQPACKET).

The child repeats child.rs's `enter()`, step for step, in the same order:
cgroups, network namespace, uid, the other namespaces, a fork into the new
PID namespace, mounts, no-new-privs, Landlock, seccomp, rlimits, a last fork
under an init. Only then does the run's main module see any of the run.
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
    control.send(b"R%d" % os.getpid())
    runs = {}
    while True:
        ready, _, _ = select.select([control, *runs], [], [])
        for pidfd in [r for r in ready if r is not control]:
            pid, channel = runs.pop(pidfd)
            report_exit(pid, channel)
            os.close(pidfd)
        if control not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 1, MAX_FDS)
        except OSError:
            return
        if not message:
            return
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            # Nothing of another run may stay reachable: its report channel
            # would let this one forge that run's exit status.
            others = [control] + [channel for _, channel in runs.values() if channel]
            if message == b"s":
                # Returns when the harness lets the seat's zygote go.
                return seated(module, fds, others, list(runs), zygote)
            # Returns only after the run's main did, confined; the interpreter
            # then ends as a fresh one would (atexit, flushing, exit status).
            child(module, fds, others, list(runs), in_seat)
            return
        if message == b"s":
            for fd in fds:
                os.close(fd)
            runs[os.pidfd_open(pid)] = (pid, None)
            continue
        channel = socket.socket(fileno=fds[0])
        for fd in fds[1:]:
            os.close(fd)
        runs[os.pidfd_open(pid)] = (pid, channel)


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


def report_exit(pid, channel):
    _, status, usage = os.wait4(pid, 0)
    if channel is None:
        return
    line = "X%d %d %d %d" % (status, round(usage.ru_utime * 1e6), round(usage.ru_stime * 1e6), usage.ru_maxrss)
    try:
        channel.send(line.encode())
    except OSError:
        pass
    channel.close()


libc = ctypes.CDLL(None, use_errno=True)
# Explicit types: a variadic call would pass Python ints as 32-bit values,
# leaving the upper halves of 64-bit arguments undefined.
_long, _ulong, _ptr, _str = ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_char_p
for _name, _args in {
    "syscall": [_long, _long, _long, _long, _long],
    "prctl": [ctypes.c_int, _ulong, _ulong, _ulong, _ulong],
    "mount": [_str, _str, _str, _ulong, _ptr],
    "setns": [ctypes.c_int, ctypes.c_int],
    "unshare": [ctypes.c_int],
    "sethostname": [_str, ctypes.c_size_t],
    "setgroups": [ctypes.c_size_t, _ptr],
    "setuid": [ctypes.c_uint],
    "setgid": [ctypes.c_uint],
    "setrlimit": [ctypes.c_int, _ptr],
}.items():
    getattr(libc, _name).argtypes = _args
libc.syscall.restype = _long


def address(buffer):
    return ctypes.cast(buffer, ctypes.c_void_p).value


class Failed(Exception):
    pass


def check(step, rc):
    if rc < 0:
        raise Failed("%s: %s" % (step, os.strerror(ctypes.get_errno())))
    return rc


def child(module, fds, sockets, pidfds, in_seat):
    """The run's first process: confine, fork into the PID namespace, run."""
    try:
        for other in sockets:
            other.close()
        for other in pidfds:
            os.close(other)
        channel = socket.socket(fileno=fds[0])
        # First on the run's socket, before "G" or "E" (which only the child
        # sends) and "X" (which the zygote sends once the child is gone).
        channel.send(b"P%d" % os.getpid())
    except BaseException:
        os._exit(125)
    try:
        plan, blobs = read_plan(fds)
        if in_seat:
            # The seat's memory limit is the run's alone: when the tree runs
            # out, the kernel must kill the run's processes before the zygote
            # it shares the cgroup with (raising a score needs no privilege;
            # a program that lowers it again risks only its own run).
            write_file("/proc/self/oom_score_adj", b"1000")
        enter(plan, blobs, fds, channel)
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


def enter(plan, blobs, fds, channel):
    for index in plan["cgroups"]:
        if os.write(fds[index], b"0") != 1:
            raise Failed("join the run's cgroup")
    namespaces = plan["namespaces"]
    if plan["netns"] is not None:
        check("setns(network namespace)", libc.setns(fds[plan["netns"]], plan["clone_newnet"]))
    else:
        namespaces |= plan["clone_newnet"]
    if plan["ids"] is not None:
        uid, gid = plan["ids"]
        check("setgroups", libc.setgroups(0, None))
        check("setgid", libc.setgid(gid))
        check("setuid", libc.setuid(uid))
    check("prctl(PR_SET_DUMPABLE)", libc.prctl(4, 1, 0, 0, 0))
    check("unshare(user, mount, net, ipc, uts, pid namespaces)", libc.unshare(namespaces))
    write_file("/proc/self/setgroups", b"deny")
    write_file("/proc/self/uid_map", plan["uid_map"].encode())
    write_file("/proc/self/gid_map", plan["gid_map"].encode())
    starting(plan["zygote"])
    page = mmap.mmap(-1, 8)
    pid = os.fork()
    if pid > 0:
        mirror_exit(pid, page)
    starting(None)
    mount_workdir(plan, blobs)
    restrict(plan, blobs, fds)
    pid = os.fork()
    if pid > 0:
        init(pid, page)
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


def default_signals():
    for sig in range(1, signal.NSIG):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def init(program, page):
    """The namespace's init: reap everything until the program exits."""
    default_signals()
    os.closerange(0, 1 << 20)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(125)
        except InterruptedError:
            continue
        if pid == program:
            page[0:8] = struct.pack("ii", 1, status)
            os._exit(0)


def mirror_exit(pid, page):
    """The first process: wait for the namespace's init and exit as the program did."""
    default_signals()
    os.closerange(0, 1 << 20)
    _, status = os.waitpid(pid, 0)
    done, program = struct.unpack("ii", page[0:8])
    if done == 1:
        status = program
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status))


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
    serve(load(sys.argv[1], sys.argv[2]))
