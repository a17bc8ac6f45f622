"""How a test's names resolve in harness's checker: the built-ins under
the program's top-level names, with the guard that keeps a test's tools
its own (check.py's doc says the whole order).
"""
import ast
import builtins
import sys

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
        theirs = {n for n in used & program.names if not standard(program.modules.get(n))}
        shadowing = theirs & self.tools
        self.shadowing = frozenset(shadowing if len(shadowing) == 1 and theirs == shadowing else ())
        self.kept = set()


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
