"""The checker's stand-ins for the program's objects, for harness.

A value that is not plain data (a `re.Match`, a generator, an instance of
the program's class, the class itself) crosses by reference: the checker
holds a `Remote`, and each thing a test does with it is a request to the
program, answered with data or another reference. What is safe goes
through: truth, `repr`, `str`, `len`, attributes, calls, items, iteration
(`next`, `for`: one item per request, as lazily as in one process;
`list(...)` and the like, which read every item anyway, in one). A
Remote is equal only to itself (the same object of the program's), and
only when its class leaves `==` to `object`: anything the
program's own code would decide with a test's value in hand (`==`, `<`,
`in` through its own `__contains__`, arithmetic, hashing by its own
`__hash__`) raises `Unsupported`, a failure that names the class and that
a test's `except Exception` cannot swallow.

An exception class of the program's crosses as a local class with the
same name and bases (`except InvalidInput:` works), and an exception the
program raises is an instance of it.
"""
import builtins
import sys
import types

import wire

# Attributes of the program's object that are data (`vars(p)` reads `__dict__`).
PLAIN_DUNDERS = ("__dict__", "__name__", "__qualname__")


class Unsupported(BaseException):
    """An operation whose outcome the program's own code would decide."""


def _what(about):
    name = str(about.get("type", "object"))
    article = "an" if name[:1] in "AEIOUaeiou" else "a"
    if about.get("module") == "solution":
        return "%s %s (a class of the program's)" % (article, name)
    return "%s %s" % (article, name)


class Remote:
    """An object of the program's, held by reference."""

    __slots__ = ("_remote_about", "_remote_last", "_remote_on", "_remote_program", "_remote_read")

    def __init__(self, program, on, about):
        object.__setattr__(self, "_remote_program", program)
        object.__setattr__(self, "_remote_on", on)
        object.__setattr__(self, "_remote_about", about)
        # Items read ahead (see __length_hint__), and the iterator last made.
        object.__setattr__(self, "_remote_read", [])
        object.__setattr__(self, "_remote_last", None)

    @property
    def __class__(self):
        # What isinstance() falls back on: `isinstance(g, types.GeneratorType)`,
        # `isinstance(m, re.Match)` hold as in one process.
        return _claimed(self._remote_about) or type(self)

    def _remote_op(self, op, *args, **kwargs):
        return self._remote_program.op(op, self._remote_on, args, kwargs)

    def _remote_typed(self, op, kind, *args):
        value = self._remote_op(op, *args)
        if type(value) is not kind:
            raise TypeError("%s answered %s with a %s" % (_what(self._remote_about), op, type(value).__name__))
        return value

    def _remote_refuse(self, doing, why):
        raise Unsupported("cannot %s %s: %s; compare plain data instead (its fields, "
                          "repr() or list())" % (doing, _what(self._remote_about), why))

    def __call__(self, *args, **kwargs):
        if "global" in self._remote_on:
            return self._remote_program.call(self._remote_on["global"], args, kwargs)
        return self._remote_op("invoke", *args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in PLAIN_DUNDERS:
            raise AttributeError(name)
        return self._remote_op("getattr", name)

    def __setattr__(self, name, value):
        self._remote_op("setattr", name, value)

    def __delattr__(self, name):
        self._remote_op("delattr", name)

    def __getitem__(self, key):
        return self._remote_op("getitem", key)

    def __setitem__(self, key, value):
        self._remote_op("setitem", key, value)

    def __delitem__(self, key):
        self._remote_op("delitem", key)

    def __bool__(self):
        return self._remote_typed("truth", bool)

    def __len__(self):
        return self._remote_typed("len", int)

    def __repr__(self):
        return self._remote_typed("repr", str)

    def __str__(self):
        return self._remote_typed("str", str)

    def __format__(self, spec):
        return self._remote_typed("format", str, spec)

    def __iter__(self):
        iterator = self._remote_op("iter")
        object.__setattr__(self, "_remote_last", iterator)
        return iterator

    def __next__(self):
        read = self._remote_read
        return read.pop() if read else self._remote_op("next")

    def __length_hint__(self):
        """Asked by `list()`, `tuple()`, `sorted()`, `"".join()` right after
        `iter()` and before they read every item, with no test code in
        between: the program reads them all in one request (an error after
        some comes at the next `next`), not one each. `for`, `next()`,
        `sum()` and `islice()` never ask, and stay lazy."""
        iterator = self if self._remote_about.get("iterator") else self._remote_last
        if not isinstance(iterator, Remote) or iterator._remote_read:
            return NotImplemented
        items = iterator._remote_op("drain")
        if type(items) is not list:
            raise TypeError("the program answered drain with a %s" % type(items).__name__)
        iterator._remote_read[:] = reversed(items)
        return len(items)

    def __contains__(self, value):
        if self._remote_about.get("contains"):
            self._remote_refuse("look in", "its class decides `in` with its own __contains__")
        return any(item is value or item == value for item in self)

    def __instancecheck__(self, value):
        return self._remote_typed("isinstance", bool, value)

    def __subclasscheck__(self, value):
        return self._remote_typed("issubclass", bool, value)

    def _remote_identity(self):
        compares = self._remote_about.get("compares")
        if compares:
            self._remote_refuse("compare", "its class decides comparisons with its own %s"
                         % ", ".join(compares))

    def __eq__(self, other):
        self._remote_identity()
        return True if other is self else NotImplemented

    def __ne__(self, other):
        self._remote_identity()
        return False if other is self else NotImplemented

    def __hash__(self):
        self._remote_identity()
        return hash((Remote, repr(self._remote_on)))


# A claimed class may be none of these: the checker's own code tells data
# from references by them.
_PLAIN = (int, float, complex, str, bytes, bytearray, list, tuple, set, frozenset, dict,
          range, type, BaseException)


def _claimed(about):
    """The checker's class of the library type the program names for an
    object (from a module the checker has loaded, or `types` for the
    interpreter's own), if that is a class and not one of plain data's."""
    module, name = about.get("module"), about.get("type")
    if type(module) is not str or type(name) is not str or module == "solution":
        return None
    if module == "builtins":
        found = [t for t in vars(types).values() if isinstance(t, type) and t.__qualname__ == name]
        kind = found[0] if found else None
    else:
        kind = sys.modules.get(module)
        for part in name.split("."):
            kind = getattr(kind, part, None)
    if isinstance(kind, type) and not issubclass(kind, _PLAIN):
        return kind
    return None


def _refused(symbol):
    def refuse(self, *args):
        self._remote_refuse("compute `%s` with" % symbol, "only the program could, with the test's values in hand")
    return refuse


for _name, _symbol in [
        ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("add", "+"), ("sub", "-"),
        ("mul", "*"), ("matmul", "@"), ("truediv", "/"), ("floordiv", "//"), ("mod", "%"),
        ("divmod", "divmod"), ("pow", "**"), ("lshift", "<<"), ("rshift", ">>"), ("and", "&"),
        ("xor", "^"), ("or", "|")]:
    setattr(Remote, "__%s__" % _name, _refused(_symbol))
    if _name not in ("lt", "le", "gt", "ge"):
        setattr(Remote, "__r%s__" % _name, _refused(_symbol))
        setattr(Remote, "__i%s__" % _name, _refused(_symbol))
for _name, _symbol in [("neg", "-"), ("pos", "+"), ("abs", "abs"), ("invert", "~"),
                       ("int", "int"), ("float", "float"), ("complex", "complex"),
                       ("index", "index"), ("round", "round"), ("trunc", "trunc"),
                       ("floor", "floor"), ("ceil", "ceil")]:
    setattr(Remote, "__%s__" % _name, _refused(_symbol))


class RemoteClass(type):
    """The type of the stand-ins for one class of the program's, standing
    for the class itself: `type(s) is Stack`, `isinstance(s, Stack)` and
    `Stack.__name__` hold as in one process; calling it, its attributes,
    its iteration (an Enum's members) are requests to the program."""

    def __call__(cls, *args, **kwargs):
        return cls._remote_class_program.op("invoke", cls._remote_class_ref, args, kwargs)

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__") and name not in PLAIN_DUNDERS:
            raise AttributeError(name)
        return cls._remote_class_program.op("getattr", cls._remote_class_ref, (name,), {})

    def __setattr__(cls, name, value):
        cls._remote_class_program.op("setattr", cls._remote_class_ref, (name, value), {})

    def __getitem__(cls, key):
        return cls._remote_class_program.op("getitem", cls._remote_class_ref, (key,), {})

    def __iter__(cls):
        return cls._remote_class_program.op("iter", cls._remote_class_ref, (), {})

    def __len__(cls):
        count = cls._remote_class_program.op("len", cls._remote_class_ref, (), {})
        if type(count) is not int:
            raise TypeError("the program answered len with a %s" % type(count).__name__)
        return count

    def __contains__(cls, value):
        if cls._remote_class_about.get("contains"):
            raise Unsupported("cannot look in the class %s: its metaclass decides `in` with its "
                              "own __contains__" % cls.__name__)
        return any(item is value or item == value for item in cls)


def class_of(program, about, bases):
    """The stand-in for a class of the program's (`about` describes it),
    on the stand-ins of its bases."""
    name = about.get("class")
    if type(name) is not str or not name.isidentifier():
        raise TypeError("a malformed class")
    bases = tuple(b for b in bases if isinstance(b, RemoteClass)) or (Remote,)
    attributes = {"__slots__": (), "__module__": str(about.get("in", "solution")),
                  "__qualname__": str(about.get("qualname", name))}
    try:
        cls = RemoteClass(name, bases, attributes)
    except TypeError:
        cls = RemoteClass(name, (Remote,), attributes)
    # Not the instances' slot names, which these would hide.
    for key, value in (("_remote_class_program", program), ("_remote_class_ref", {"id": about["id"]}),
                       ("_remote_class_about", about)):
        type.__setattr__(cls, key, value)
    return cls


def _remote_text(error):
    return error.__dict__.get("remote_text", "")


def named(name, bases, attributes=None):
    """A class named `name` on `bases`, printing its remote text; on
    Exception alone when the bases do not go together."""
    attributes = dict(attributes or {}, __str__=_remote_text)
    try:
        return type(name, tuple(bases), attributes)
    except TypeError:
        return type(name, (Exception,), attributes)


def mirror(about, stand_in, cache):
    """The local class standing for an exception class of the program's."""
    n = about.get("id")
    if n in cache:
        return cache[n]
    name = about.get("exception")
    if type(name) is not str or not name.isidentifier():
        raise TypeError("a malformed exception class")
    bases = []
    for base in about.get("bases") or []:
        if type(base) is str:
            base = getattr(builtins, base, None)
        elif type(base) is dict and base.get("exception"):
            base = stand_in(base)
        if isinstance(base, type) and issubclass(base, BaseException) and base not in bases:
            bases.append(base)
    cache[n] = named(name, bases or [Exception], {"_remote_id": n})
    return cache[n]


# The checker's classes for exceptions of built-in names, by name.
_remote_classes = {}

def remote_error(raised, program):
    """The exception a call raised in the program, rebuilt from its name,
    message, args and attributes: the stand-in of its class when that is the
    program's, else a subclass of the built-in of that name (so `except
    ValueError` works) whose text is exactly the program's."""
    if type(raised) is not dict:
        raise wire.WireError("a malformed exception")
    name, message = raised.get("type"), raised.get("message", "")
    if type(name) is not str or not name.isidentifier() or type(message) is not str:
        raise wire.WireError("a malformed exception")
    cls = None
    if type(raised.get("class")) is dict:
        try:
            cls = program.stand_in(raised["class"])
        except (TypeError, wire.WireError):
            cls = None
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = _remote_classes.get(name)
    if cls is None:
        base = getattr(builtins, name, None)
        if not (isinstance(base, type) and issubclass(base, BaseException)):
            base = Exception
        cls = _remote_classes[name] = named(name, [base])
    try:
        error = cls.__new__(cls, message)
    except Exception:
        # A built-in whose constructor wants more than a message.
        cls = _remote_classes[name] = named(name, [Exception])
        error = cls.__new__(cls, message)
    error.args = (message,)
    error.remote_text = message
    try:
        args = program.decode(raised["args"]) if "args" in raised else None
    except (wire.WireError, TypeError):
        args = None
    if type(args) is tuple:
        error.args = args
    try:
        fields = program.decode(raised["fields"]) if "fields" in raised else {}
    except (wire.WireError, TypeError):
        fields = {}
    for key, value in fields.items() if type(fields) is dict else ():
        if type(key) is str and key.isidentifier() and not key.startswith("__") and key != "remote_text":
            try:
                setattr(error, key, value)
            except (AttributeError, TypeError):
                pass
    return error
