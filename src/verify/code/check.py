"""Runs a solution's tests from outside the solution's process, for harness.

This process holds the tests (tests.json) and the task's own code
(prelude.py: imports, helpers); the program holding the model's code holds
nothing but the solution, and the two share only a pair of pipes. Every
call of one of the program's functions crosses as data: the arguments go
there, the result comes back as built-in values (wire.py) and the test
compares them here, so a test passes only on values the program computed.

A name the tests use resolves as Python would resolve it here first: the
test's own definitions, the prelude's, the built-ins. A name found nowhere
is the program's: a call to its function, or the standard module it
imported. The prelude's stubs (functions that compute nothing, only a
docstring, for the answer to complete) are always the program's.

Reports one line per test on stdout, "<nonce> <json>"; the nonce arrives on
stdin, which only harness writes.
"""
import ast
import builtins
import importlib
import json
import os
import sys

import wire


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
    return "exception"


_remote_classes = {}


def remote_error(raised):
    """The exception a call raised in the program, rebuilt from its name,
    message and args: a subclass of the built-in of that name (so `except
    ValueError` works) whose text is exactly the program's."""
    if type(raised) is not dict:
        raise BadAnswer("a malformed exception")
    name, message = raised.get("type"), raised.get("message", "")
    if type(name) is not str or not name.isidentifier() or type(message) is not str:
        raise BadAnswer("a malformed exception")
    cls = _remote_classes.get(name)
    if cls is None:
        base = getattr(builtins, name, None)
        if not (isinstance(base, type) and issubclass(base, BaseException)):
            base = Exception
        cls = _remote_classes[name] = _named(name, base)
    try:
        error = cls.__new__(cls, message)
    except Exception:
        # A built-in whose constructor wants more than a message.
        cls = _remote_classes[name] = _named(name, Exception)
        error = cls.__new__(cls, message)
    error.args = (message,)
    error.remote_text = message
    try:
        args = wire.decode(raised["args"]) if "args" in raised else None
    except wire.WireError:
        args = None
    if type(args) is tuple:
        error.args = args
    return error


def _remote_text(error):
    return error.__dict__.get("remote_text", "")


def _named(name, base):
    try:
        return type(name, (base,), {"__str__": _remote_text})
    except TypeError:
        return type(name, (Exception,), {"__str__": _remote_text})


class Program:
    """The other end of the channel: the program holding the solution."""

    def __init__(self, channel):
        read_fd, write_fd = (int(fd) for fd in channel.split(","))
        self.answers = wire.Lines(read_fd)
        self.out = os.fdopen(write_fd, "wb")
        self.gone = False
        self.violation = None

    def receive(self):
        if self.gone:
            raise ProgramGone()
        try:
            message = self.answers.next()
        except wire.WireError as error:
            self.violation = str(error)
            raise BadAnswer(str(error))
        except OSError:
            message = None
        if message is None:
            self.gone = True
            raise ProgramGone()
        if type(message) is not dict or len(message) != 1:
            self.violation = "not a message: %s" % json.dumps(message)[:80]
            raise BadAnswer(self.violation)
        return message

    def call(self, name, args, kwargs):
        if self.gone:
            raise ProgramGone()
        try:
            request = {"call": name, "args": [wire.encode(a) for a in args],
                       "kwargs": [[k, wire.encode(v)] for k, v in kwargs.items()]}
        except wire.WireError as error:
            raise TypeError("an argument of %s cannot cross to the program: %s" % (name, error))
        try:
            self.out.write(wire.dumps(request))
            self.out.flush()
        except OSError:
            self.gone = True
            raise ProgramGone()
        answer = self.receive()
        if "value" in answer:
            try:
                return wire.decode(answer["value"])
            except wire.WireError as error:
                self.violation = str(error)
                raise BadAnswer(str(error))
        if "raised" in answer:
            raise remote_error(answer["raised"])
        self.violation = "not an answer: %s" % json.dumps(answer)[:80]
        raise BadAnswer(self.violation)

    def proxy(self, name):
        def call(*args, **kwargs):
            return self.call(name, args, kwargs)
        call.__name__ = call.__qualname__ = name
        return call


class Names(dict):
    """The built-ins, then the program's names (see the module's doc)."""

    def __init__(self, program, ready, stubs):
        super().__init__(builtins.__dict__)
        for stub in stubs:
            self.pop(stub, None)
        self.program = program
        functions, modules = ready.get("functions"), ready.get("modules")
        # Whatever the program claims beyond names is ignored.
        self.functions = {f for f in functions if type(f) is str} if type(functions) is list else set()
        self.modules = {k: v for k, v in modules.items() if type(v) is str} \
            if type(modules) is dict else {}

    def __missing__(self, name):
        if name in self.functions:
            value = self.program.proxy(name)
        elif name in self.modules and standard(self.modules[name]):
            value = importlib.import_module(self.modules[name])
        else:
            raise KeyError(name)
        self[name] = value
        return value


def standard(module):
    return type(module) is str and module.split(".")[0] in sys.stdlib_module_names


def stubs_of(prelude):
    """Top-level functions of the prelude that compute nothing: a docstring,
    `pass`, `...` or imports only."""
    def idle(statement):
        return isinstance(statement, (ast.Pass, ast.Import, ast.ImportFrom)) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
    return [node.name for node in ast.parse(prelude).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and all(idle(s) for s in node.body)]


def got(test, namespace):
    """For a one-line `assert EXPR == WANT`, what EXPR actually is."""
    try:
        tree = ast.parse(test)
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
            return None
        compare = tree.body[0].test
        if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1
                and isinstance(compare.ops[0], ast.Eq)):
            return None
        value = eval(compile(ast.Expression(compare.left), "test", "eval"), namespace)
        return "got " + repr(value)[:200]
    except BaseException:
        return None


def run_tests(tests, namespace, program, report):
    for i, test in enumerate(tests):
        name = "test %d" % (i + 1)
        program.violation = None
        try:
            exec(compile(test, name, "exec"), namespace)
        except BaseException as error:
            if program.gone:
                return report(test=i, status="gone")
            kind = kind_of(error)
            text = wire.describe(error, name, test)
            if kind == "assertion":
                text = got(test, namespace) or text
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
    namespace["__builtins__"] = Names(program, first["ready"], stubs)
    run_tests(tests, namespace, program, report)


main()
