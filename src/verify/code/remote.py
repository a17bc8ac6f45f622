"""The checker's stand-ins for the program's objects, for harness.

A value that is not plain data (a `re.Match`, a generator, an instance of
the program's class, the class itself) crosses by reference: the checker
holds a `Remote`, and each thing a test does with it is a request to the
program, answered with data or another reference. What is safe goes
through: truth, `repr`, `str`, `len`, attributes, calls, items, iteration
(`next`, `for`, `list(...)`: one item per request, as lazily as in one
process). A Remote is equal only to itself (the same object of the
program's), and only when its class leaves `==` to `object`: anything the
program's own code would decide with a test's value in hand (`==`, `<`,
`in` through its own `__contains__`, arithmetic, hashing by its own
`__hash__`) raises `Unsupported`, a failure that names the class and that
a test's `except Exception` cannot swallow.

An exception class of the program's crosses as a local class with the
same name and bases (`except InvalidInput:` works), and an exception the
program raises is an instance of it.
"""
import builtins


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

    __slots__ = ("_program", "_on", "_about")

    def __init__(self, program, on, about):
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "_on", on)
        object.__setattr__(self, "_about", about)

    def _op(self, op, *args, **kwargs):
        return self._program.op(op, self._on, args, kwargs)

    def _typed(self, op, kind, *args):
        value = self._op(op, *args)
        if type(value) is not kind:
            raise TypeError("%s answered %s with a %s" % (_what(self._about), op, type(value).__name__))
        return value

    def _refuse(self, doing, why):
        raise Unsupported("cannot %s %s: %s; compare plain data instead (its fields, "
                          "repr() or list())" % (doing, _what(self._about), why))

    def __call__(self, *args, **kwargs):
        if "global" in self._on:
            return self._program.call(self._on["global"], args, kwargs)
        return self._op("invoke", *args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in PLAIN_DUNDERS:
            raise AttributeError(name)
        return self._op("getattr", name)

    def __setattr__(self, name, value):
        self._op("setattr", name, value)

    def __delattr__(self, name):
        self._op("delattr", name)

    def __getitem__(self, key):
        return self._op("getitem", key)

    def __setitem__(self, key, value):
        self._op("setitem", key, value)

    def __delitem__(self, key):
        self._op("delitem", key)

    def __bool__(self):
        return self._typed("truth", bool)

    def __len__(self):
        return self._typed("len", int)

    def __repr__(self):
        return self._typed("repr", str)

    def __str__(self):
        return self._typed("str", str)

    def __format__(self, spec):
        return self._typed("format", str, spec)

    def __iter__(self):
        return self._op("iter")

    def __next__(self):
        return self._op("next")

    def __contains__(self, value):
        if self._about.get("contains"):
            self._refuse("look in", "its class decides `in` with its own __contains__")
        return any(item is value or item == value for item in self)

    def __instancecheck__(self, value):
        return self._typed("isinstance", bool, value)

    def __subclasscheck__(self, value):
        return self._typed("issubclass", bool, value)

    def _identity(self):
        compares = self._about.get("compares")
        if compares:
            self._refuse("compare", "its class decides comparisons with its own %s"
                         % ", ".join(compares))

    def __eq__(self, other):
        self._identity()
        return True if other is self else NotImplemented

    def __ne__(self, other):
        self._identity()
        return False if other is self else NotImplemented

    def __hash__(self):
        self._identity()
        return hash((Remote, repr(self._on)))


def _refused(symbol):
    def refuse(self, *args):
        self._refuse("compute `%s` with" % symbol, "only the program could, with the test's values in hand")
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
