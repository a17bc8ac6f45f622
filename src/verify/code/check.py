"""Runs a solution's tests from outside the solution's process, for harness.

This process holds the tests (tests.json) and the task's own code
(prelude.py: imports, helpers); the program holding the model's code holds
nothing but the solution, and the two share only a pair of pipes. Every
call of one of the program's functions crosses as data: the arguments go
there, the result comes back as built-in values (wire.py) and the test
compares them here, so a test passes only on values the program computed.

A name the tests use resolves as if the tests followed the program in one
module: the test's own definitions and the prelude's first (the task's
code, which the program cannot replace), then the program's top-level
names, read from the program each time (a global a call changed reads
changed), then the built-ins. A function of the program's is a proxy
whose calls cross as data; a standard module it imported is this
process's own import of it; any other value crosses as data, or by
reference (remote.py). The prelude's stubs (functions that compute
nothing, only a docstring, for the answer to complete) are always the
program's. A test's top-level binding of a program's name binds the
program's global, and the lists, dicts, sets and bytearrays both sides
hold are shared (share.py).

Under the guard (HARNESS_GUARD=1) the test's tools stay its own: a
program's function named like a built-in shadows it only in a test that
reads no other name of the program's (names.py), the test's bindings stay
the test's, and nothing is shared.

Reports one line per test on stdout, "<nonce> <json>"; the nonce arrives on
stdin, which only harness writes.
"""
import ast
import builtins
import importlib
import json
import os
import sys

import remote
import share
import wire
from names import HAND, Names, free_names, handing, standard, stubs_of


class ProgramGone(BaseException):
    """The program ended or closed its channel; no test can pass after it."""


class BadAnswer(BaseException):
    """The program answered with something that is not plain data."""


# The kind of an error the program reports by name.
KINDS = {
    "AssertionError": "assertion",
    "MemoryError": "memory",
    "RecursionError": "recursion",
    "SyntaxError": "syntax",
    "IndentationError": "syntax",
    "TabError": "syntax",
    "SystemExit": "exit",
}


def kind_of(error):
    if isinstance(error, AssertionError):
        return "assertion"
    if isinstance(error, MemoryError):
        return "memory"
    if isinstance(error, RecursionError):
        return "recursion"
    if isinstance(error, SyntaxError):
        return "syntax"
    if isinstance(error, SystemExit):
        return "exit"
    if isinstance(error, remote.Unsupported):
        return "unsupported"
    return "exception"


# The console as the checker started, to see a test replace it.
INPUT, PRINT = builtins.input, builtins.print


class Program:
    """The other end of the channel: the program holding the solution."""

    def __init__(self, channel):
        read_fd, write_fd = (int(fd) for fd in channel.split(","))
        self.answers = wire.Lines(read_fd)
        self.out = os.fdopen(write_fd, "wb")
        self.gone = False
        self.violation = None
        self.functions, self.modules, self.names = set(), {}, set()
        self.remotes, self.mirrors, self.imported = {}, {}, {}
        self.callbacks, self.stdout, self.stdin = [], sys.stdout, sys.stdin
        # Guarded tests keep their objects: nothing is linked (share.py).
        self.guarded = os.environ.pop("HARNESS_GUARD", "") == "1"
        self.links = share.Links("t")
        # Whether the program links objects and takes assignments (serve.py
        # does; a custom runner need not).
        self.shares = False

    def receive(self):
        if self.gone:
            raise ProgramGone()
        try:
            message = self.answers.next()
        except wire.WireError as error:
            self.violation = str(error)
            raise BadAnswer(str(error)) from None
        except OSError:
            message = None
        if message is None:
            self.gone = True
            raise ProgramGone()
        if type(message) is dict and "callback" in message:
            return message
        if type(message) is dict and len(message) > 1:
            self.learn(message.pop("names", None))
            printed = message.pop("printed", None)
            # What the program printed reaches a test that captures output.
            if type(printed) is str and sys.stdout is not self.stdout:
                sys.stdout.write(printed)
        if type(message) is not dict or not (len(message) == 1 or answer_keys(message)):
            self.violation = "not a message: %s" % json.dumps(message)[:80]
            raise BadAnswer(self.violation)
        return message

    def learn(self, names):
        """The program's top-level names, as it last told them; whatever it
        claims beyond names is ignored."""
        if names is None:
            return
        if type(names) is not dict:
            return
        functions, modules, every = names.get("functions"), names.get("modules"), names.get("names")
        self.functions = {f for f in functions if type(f) is str} if type(functions) is list else set()
        self.modules = {k: v for k, v in modules.items() if type(v) is str} \
            if type(modules) is dict else {}
        self.names = {n for n in every if type(n) is str} if type(every) is list else set()
        self.names |= self.functions | set(self.modules)
        # Dunder names are the checker's own (and never a program's global).
        self.names = {n for n in self.names if not n.startswith("__")}

    def encode(self, value):
        def reference(value):
            if isinstance(value, remote.Remote):
                return object.__getattribute__(value, "_remote_on")
            if isinstance(value, remote.RemoteClass):
                return value._remote_class_ref
            if isinstance(value, type) and "_remote_id" in value.__dict__:
                return {"id": value._remote_id}
            if getattr(builtins, getattr(value, "__name__", ""), None) is value:
                # The program's own built-in, as in one process (`key=len`,
                # `g.throw(ValueError)`), without a round trip per call.
                return {"builtin": value.__name__}
            if callable(value):
                self.callbacks.append(value)
                return {"callback": len(self.callbacks) - 1}
            return None
        return wire.encode(value, reference)

    def decode(self, value):
        return wire.decode(value, self.stand_in)

    def stand_in(self, about):
        """The checker's stand-in for an object of the program's."""
        n = about.get("id")
        if type(n) is not int:
            raise wire.WireError("a malformed object")
        if about.get("exception"):
            return remote.mirror(about, self.stand_in, self.mirrors)
        if n in self.remotes:
            return self.remotes[n]
        if about.get("class"):
            bases = [self.stand_in(b) for b in about.get("bases") or [] if type(b) is dict]
            self.remotes[n] = remote.class_of(self, about, bases)
            return self.remotes[n]
        kind = self.stand_in(about["of"]) if type(about.get("of")) is dict else None
        if not isinstance(kind, remote.RemoteClass):
            kind = remote.Remote
        value = self.remotes[n] = kind.__new__(kind)
        remote.Remote.__init__(value, self, {"id": n}, about)
        return value

    def resolve(self, name):
        """The program's top-level `name`, as a test reads it now."""
        module = self.modules.get(name)
        if module is not None and standard(module):
            return self.standard_module(module)
        if name in self.functions:
            key = ("global", name)
            if key not in self.remotes:
                self.remotes[key] = remote.Remote(self, {"global": name}, {"type": name})
            return self.remotes[key]
        return self.op("get", {"global": name}, (), {})

    def standard_module(self, name):
        """This process's own import of the standard module `name`."""
        if name not in self.imported:
            self.imported[name] = importlib.import_module(name)
        return self.imported[name]

    def call(self, name, args, kwargs):
        return self.request({"call": name}, name, args, kwargs)

    def op(self, op, on, args, kwargs):
        return self.request({"op": op, "on": on}, op, args, kwargs)

    def request(self, request, what, args, kwargs):
        if self.gone:
            raise ProgramGone()
        try:
            if not self.shares:
                request["args"] = [self.encode(a) for a in args]
                request["kwargs"] = [[k, self.encode(v)] for k, v in kwargs.items()]
            else:
                self.sharing(request, args, kwargs)
        except wire.WireError as error:
            raise TypeError("an argument of %s cannot cross to the program: %s" % (what, error)) from None
        patched = self.patched()
        if patched:
            request["patched"] = patched
        self.send(request)
        answer = self.receive()
        while "callback" in answer:
            self.send(self.called_back(answer))
            answer = self.receive()
        if "value" in answer:
            try:
                self.shared(answer)
                value = self.decode(answer["value"])
                if value is None and "changed" in answer:
                    share.changed_in_place(answer["changed"], list(args), kwargs, self.decode)
                return self.linked(answer, value)
            except wire.WireError as error:
                self.violation = str(error)
                raise BadAnswer(str(error)) from None
        if "raised" in answer:
            try:
                self.shared(answer)
                error = remote.remote_error(answer["raised"], self)
            except wire.WireError as malformed:
                self.violation = str(malformed)
                raise BadAnswer(str(malformed)) from None
            raise error
        self.violation = "not an answer: %s" % json.dumps(answer)[:80]
        raise BadAnswer(self.violation)

    def sharing(self, request, args, kwargs):
        """The request's arguments, with the test's changes to the objects
        both sides hold (share.py): a linked argument crosses as its link,
        a list, dict, set or bytearray one is linked."""
        links = self.links
        request["share"] = True
        # Changed first: a test may change a list and let go of it at once
        # (`get().append(2)`).
        sync = links.changes(self.encode)
        if sync:
            request["sync"] = sync
        drop = links.lonely()
        if drop:
            request["drop"] = drop
        linking = []

        def one(key, value):
            n = links.of(value)
            if n is not None:
                return {"object": {"link": n}}
            encoded = self.encode(value)
            if isinstance(value, share.MUTABLE):
                linking.append([key, links.new(value, encoded)])
            return encoded
        request["args"] = [one(i, a) for i, a in enumerate(args)]
        request["kwargs"] = [[k, one(k, v)] for k, v in kwargs.items()]
        if linking:
            request["link"] = linking

    def shared(self, answer):
        """Takes the program's changes to linked objects, and its dropped links."""
        if not self.shares:
            return
        synced, dropped = answer.get("synced", []), answer.get("dropped", [])
        if type(synced) is not list or type(dropped) is not list:
            raise wire.WireError("a malformed change")
        for entry in synced:
            if type(entry) is not list or len(entry) != 2:
                raise wire.WireError("a malformed change")
            try:
                self.links.agree(entry[0], self.decode(entry[1]), entry[1])
            except TypeError as error:
                raise wire.WireError(str(error)) from None
        for n in dropped:
            self.links.unlink(n)

    def linked(self, answer, value):
        """The test's own object for a value the program holds linked, the
        same each time (`get() is get()`); a new one is linked."""
        n = answer.get("linked")
        if not self.shares or n is None:
            return value
        if type(n) is not str:
            raise wire.WireError("a malformed link")
        if n in self.links:
            held = self.links.get(n)
            try:
                share.assign(held, value)
            except TypeError as error:
                raise wire.WireError(str(error)) from None
            return held
        if n not in answer.get("dropped", []) and isinstance(value, share.MUTABLE):
            self.links.link(n, value, answer["value"])
        return value

    def patched(self):
        """The test's stand-ins for the program's console, when it set any:
        a replaced `input` or `sys.stdin` (the program's `input()` then
        reads the test's), a replaced `print`."""
        patched = {}
        if builtins.input is not INPUT or sys.stdin is not self.stdin:
            self.callbacks.append(lambda *prompt: builtins.input(*prompt))
            patched["input"] = {"object": {"callback": len(self.callbacks) - 1}}
        if builtins.print is not PRINT:
            self.callbacks.append(builtins.print)
            patched["print"] = {"object": {"callback": len(self.callbacks) - 1}}
        return patched

    def send(self, message):
        try:
            self.out.write(wire.dumps(message))
            self.out.flush()
        except OSError:
            self.gone = True
            raise ProgramGone() from None

    def called_back(self, message):
        """Runs a callable of the test's the program called, for its answer."""
        n = message.get("callback")
        if type(n) is not int or not 0 <= n < len(self.callbacks):
            raise BadAnswer("no such callback")
        try:
            args = [self.decode(a) for a in message.get("args", [])]
            kwargs = {k: self.decode(v) for k, v in message.get("kwargs", [])}
        except (wire.WireError, TypeError, ValueError) as error:
            raise BadAnswer("a malformed callback: %s" % error) from None
        try:
            return {"value": self.encode(self.callbacks[n](*args, **kwargs))}
        except Exception as error:
            return {"raised": {"type": type(error).__name__, "message": wire.text_of(error)}}
        except BaseException:
            self.send({"raised": {"type": "RuntimeError", "message": "the test stopped"}})
            raise


def answer_keys(message):
    """Whether a reply's keys are a value's or an exception's, and their extras."""
    keys = set(message)
    return (keys <= {"value", "changed", "synced", "dropped", "linked"} and "value" in keys) \
        or (keys <= {"raised", "synced", "dropped"} and "raised" in keys)


class Got:
    """For a one-line `assert EXPR == WANT`, what EXPR was: the test is
    compiled with EXPR passed through `record`, so it runs once, as written."""

    NAME = "__harness_got__"

    def __init__(self):
        self.value, self.seen = None, False

    def record(self, value):
        self.value, self.seen = value, True
        return value

    def compile(self, test, name, hand):
        """`test`, compiled to record its EXPR, and to hand its bindings to
        the program (names.handing) when `hand`."""
        self.seen = False
        try:
            tree = ast.parse(test)
        except SyntaxError:
            return compile(test, name, "exec")
        compare = tree.body[0].test if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert) else None
        if isinstance(compare, ast.Compare) and len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            left = compare.left
            compare.left = ast.copy_location(
                ast.Call(ast.copy_location(ast.Name(self.NAME, ast.Load()), left), [left], []), left)
            ast.fix_missing_locations(tree)
        return compile(handing(tree) if hand else tree, name, "exec")

    def text(self):
        try:
            return "got " + repr(self.value)[:200] if self.seen else None
        except BaseException:
            return None


def run_tests(tests, namespace, program, report):
    names, got = namespace["__builtins__"], Got()
    names[Got.NAME] = got.record
    # The prelude's names stay the task's; the test's own go to the program.
    own = set(namespace)
    names[HAND] = lambda: names.hand_over(namespace, own)
    for i, test in enumerate(tests):
        name = "test %d" % (i + 1)
        program.violation = None
        names.keep(free_names(test) - set(namespace))
        try:
            if program.shares:
                names.hand_over(namespace, own)
            exec(got.compile(test, name, program.shares), namespace)
        except BaseException as error:
            if program.gone:
                return report(test=i, status="gone")
            kind = kind_of(error)
            text = wire.describe(error, name, test)
            if kind == "assertion":
                text = got.text() or text
            if names.kept:
                text += " (%s: Python's own here, not the program's, as the test also uses " \
                    "the program's other names)" % ", ".join(sorted(names.kept))
            report(test=i, status="fail", kind=kind, error=text[:500])
            continue
        if program.gone:
            return report(test=i, status="gone")
        if program.violation:
            report(test=i, status="fail", kind="exception",
                   error="the program answered with something other than data: "
                   + program.violation[:300])
        else:
            report(test=i, status="pass")


def main():
    nonce = sys.stdin.readline().strip()
    out = sys.stdout

    def report(**fields):
        out.write("\n" + nonce + " " + json.dumps(fields) + "\n")
        out.flush()

    program = Program(os.environ.pop("HARNESS_CHANNEL"))
    with open("tests.json", encoding="utf-8") as f:
        tests = json.load(f)
    namespace = {"__name__": "solution"}
    stubs = []
    if os.path.exists("prelude.py"):
        with open("prelude.py", encoding="utf-8") as f:
            prelude = f.read()
        try:
            stubs = stubs_of(prelude)
            exec(compile(prelude, "prelude.py", "exec"), namespace)
        except BaseException as error:
            return report(test=None, status="error", kind="prelude",
                          error=wire.describe(error, "prelude.py", prelude)[:500])
        for stub in stubs:
            namespace.pop(stub, None)
    try:
        first = program.receive()
    except ProgramGone:
        return report(test=None, status="gone")
    except BadAnswer as error:
        return report(test=None, status="error", kind="exception",
                      error="the program's first message was not data: %s" % error)
    if "failed" in first and type(first["failed"]) is dict:
        failed = first["failed"]
        return report(test=None, status="error", kind=KINDS.get(failed.get("type"), "exception"),
                      error=str(failed.get("error", ""))[:500])
    if type(first.get("ready")) is not dict:
        return report(test=None, status="error", kind="exception",
                      error="the program did not say it was ready")
    program.learn(first["ready"])
    program.shares = first["ready"].get("shares") is True and not program.guarded
    namespace["__builtins__"] = Names(program, stubs)
    run_tests(tests, namespace, program, report)


# Run as a script; a warm interpreter (src/sandbox/warm.py) imports it and calls main itself.
if __name__ == "__main__":
    main()
