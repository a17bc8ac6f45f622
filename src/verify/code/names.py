"""How a test's names resolve in harness's checker: the built-ins under
the program's top-level names, and the test's bindings handed to the
program; under the guard, the test's tools stay its own (check.py's doc
says the whole order).
"""
import ast
import builtins
import sys
import types

import remote


class Names(dict):
    """The built-ins a test sees, under the program's top-level names (see
    the module's doc)."""

    def __init__(self, program, stubs):
        super().__init__(builtins.__dict__)
        for stub in stubs:
            self.pop(stub, None)
        self.program = program
        self.built_in = frozenset(builtins.__dict__) - set(stubs)
        self.tools = (self.built_in | sys.stdlib_module_names) - set(stubs)
        self.shadowing = frozenset()
        self.kept = set()

    def __getitem__(self, name):
        program = self.program
        if name not in program.names:
            return dict.__getitem__(self, name)
        if name in self.built_in and name not in self.shadowing:
            self.kept.add(name)
            return dict.__getitem__(self, name)
        value = program.resolve(name)
        if name in self.tools and name not in self.shadowing \
                and isinstance(value, (remote.Remote, remote.RemoteClass)):
            # Named like a standard module, with code of the program's: the
            # test's `math.isclose` is math's (one this machine lacks could
            # serve no honest test either).
            try:
                module = program.standard_module(name)
            except Exception:
                return value
            self.kept.add(name)
            return module
        return value

    def keep(self, used):
        """Lets a program's name shadow a tool of the tests' (a built-in, or
        a standard module the test did not import) in a test reading
        `used` only when the test reads no other name of the program's:
        the function under test, `def sum` tested as `assert sum(10, 15) ==
        6`. Every other built-in stays Python's, even one the program
        defines later or a helper of an earlier test reads, and every other
        module-named name is the module unless the program's value is
        data; so a program cannot replace what a test judges it with (`def
        abs`, `math = FakeMath()`). The names the test then reads as
        Python's, not the program's, gather in `kept`."""
        program = self.program
        self.kept = set()
        if not program.guarded:
            # As in one module: every name of the program's is the program's.
            self.shadowing = self.tools
            return
        theirs = {n for n in used & program.names if not standard(program.modules.get(n))}
        shadowing = theirs & self.tools
        self.shadowing = frozenset(shadowing if len(shadowing) == 1 and theirs == shadowing else ())

    def hand_over(self, namespace, own):
        """Hands the test's bindings of names the program also defines to
        the program, whose globals they are in one module (`counter = 10`,
        then `bump()` reads 10): the test then reads them from the program.
        Modules and what the test imported, the names in `own` and values
        that cannot cross stay the test's."""
        program = self.program
        module = namespace.get("__name__")
        for name in [n for n in namespace if n in program.names and n not in own]:
            value = namespace[name]
            if isinstance(value, types.ModuleType) or imported(value, module):
                # `from typing import List` binds what the program's import
                # did: nothing for the program to take.
                own.add(name)
                continue
            try:
                program.op("assign", {"global": name}, (value,), {})
            except TypeError:
                own.add(name)
                continue
            del namespace[name]


def imported(value, module):
    """Whether `value` is a library's class or function, not the test's."""
    if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)) \
            and not hasattr(type(value), "__origin__") and not hasattr(value, "__origin__"):
        return False
    try:
        return getattr(value, "__module__", module) != module
    except Exception:
        return False


HAND = "__harness_hand__"


def handing(tree):
    """`tree` (a test) calling HAND after each statement of its top level
    and of its blocks, and first in each block that binds a name (a loop's,
    a `with`'s, an `except`'s), but not in its functions and classes."""
    def call():
        return ast.Expr(ast.Call(ast.Name(HAND, ast.Load()), [], []))

    def block(body, first=False):
        out = [call()] if first else []
        for statement in body:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds = isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith))
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list) and inner:
                        setattr(statement, field, block(inner, binds and field == "body"))
                for handler in getattr(statement, "handlers", None) or []:
                    handler.body = block(handler.body, True)
                for case in getattr(statement, "cases", None) or []:
                    case.body = block(case.body, True)
            out += [statement, call()]
        return out
    tree.body = block(tree.body)
    return ast.fix_missing_locations(tree)


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


def free_names(source):
    """The names `source` reads without binding them itself."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound
