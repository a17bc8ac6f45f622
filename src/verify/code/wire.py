"""Values crossing between harness's checker and a program, for harness;
and how both describe an error.

A value on the wire is JSON: null, true, false, a number, a string, an array
(a Python list), or an object with exactly one key naming another type:

    {"tuple": [...]}   {"set": [...]}   {"frozenset": [...]}
    {"dict": [[key, value], ...]}       {"bytes": "<latin-1 text>"}
    {"float": "nan" | "inf" | "-inf"}   {"complex": [real, imag]}
    {"range": [start, stop, step]}      {"iterator": [...]}
    {"keys": [...]}   {"values": [...]}   {"items": [[key, value], ...]}  (a dict's views)
    {"namedtuple": [name, [field, ...], [value, ...]]}  {"deque": [[...], maxlen]}
    {"counter": pairs}  {"ordered": pairs}  {"defaultdict": [factory, pairs]}
    {"fraction": [numerator, denominator]}  {"decimal": "text"}
    {"date" | "time" | "datetime": "ISO text"}  {"timedelta": [days, seconds, microseconds]}
    {"object": {"id": n, ...}}          (an object of the program's, by reference)

Decoding builds nothing but these built-in types: an answer is data, never
an object with methods of its own. The one exception is `object`, which
each side turns into its own stand-in through the `objects` hook it passes
(serve.py: the object it handed out; check.py: a remote reference whose
every operation is a request to the program). One message is one line of
JSON.
"""
import collections
import importlib
import json
import math
import os
import sys
import traceback

MAX_LINE = 16 << 20


class WireError(Exception):
    """A message or value that is not plain data."""


def encode(value, objects=None, depth=0):
    """A Python value as wire JSON. What is not plain data goes to
    `objects`, which describes it as a reference or answers None; then an
    iterator is read to the end, and anything else cannot cross."""
    if depth > 200:
        raise WireError("the value is nested too deeply")
    inner = depth + 1

    def each(values):
        return [encode(v, objects, inner) for v in values]

    def pairs(items):
        return [[encode(k, objects, inner), encode(v, objects, inner)] for k, v in items]

    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, complex):
        return {"complex": [encode(value.real), encode(value.imag)]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).decode("latin-1")}
    if isinstance(value, list):
        return each(value)
    library = _library(value, each, pairs)
    if library is not None:
        return library
    if isinstance(value, tuple):
        return {"tuple": each(value)}
    if isinstance(value, frozenset):
        return {"frozenset": each(value)}
    if isinstance(value, set):
        return {"set": each(value)}
    if isinstance(value, dict):
        return {"dict": pairs(value.items())}
    if isinstance(value, range):
        return {"range": [value.start, value.stop, value.step]}
    if isinstance(value, type({}.keys())):
        return {"keys": each(value)}
    if isinstance(value, type({}.values())):
        return {"values": each(value)}
    if isinstance(value, type({}.items())):
        return {"items": pairs(value)}
    described = objects(value) if objects is not None else None
    if described is not None:
        return {"object": described}
    if hasattr(value, "__next__"):
        return {"iterator": each(value)}
    raise WireError("a %s is not plain data and cannot cross" % type(value).__name__)


# A defaultdict crosses with its factory when that is one of these.
_FACTORIES = {f.__name__: f for f in (int, float, str, list, dict, set, tuple)}


def _library(value, each, pairs):
    """The standard library's value types, as data: their equality is the
    library's, which the checker has too."""
    if isinstance(value, tuple) and type(value) is not tuple and hasattr(type(value), "_fields"):
        fields = [f for f in type(value)._fields if type(f) is str]
        return {"namedtuple": [type(value).__name__, fields, each(value)]}
    if isinstance(value, collections.Counter):
        return {"counter": pairs(value.items())}
    if isinstance(value, collections.OrderedDict):
        return {"ordered": pairs(value.items())}
    if isinstance(value, collections.defaultdict) and value.default_factory in _FACTORIES.values():
        return {"defaultdict": [value.default_factory.__name__, pairs(value.items())]}
    if isinstance(value, collections.deque):
        return {"deque": [each(value), value.maxlen]}
    # Only a module already loaded can have made the value: none is
    # imported for nothing.
    fractions, decimal, datetime = (sys.modules.get(m) for m in ("fractions", "decimal", "datetime"))
    if fractions and isinstance(value, fractions.Fraction):
        return {"fraction": [int(value.numerator), int(value.denominator)]}
    if decimal and isinstance(value, decimal.Decimal):
        return {"decimal": str(decimal.Decimal.__str__(value))}
    if datetime and isinstance(value, datetime.timedelta):
        return {"timedelta": [int(value.days), int(value.seconds), int(value.microseconds)]}
    for kind in (datetime.datetime, datetime.date, datetime.time) if datetime else ():
        if isinstance(value, kind):
            return {kind.__name__: str(kind.isoformat(value))}
    return None


def _from(module, name):
    """`module.name`, imported when a value first needs it."""
    return getattr(importlib.import_module(module), name)


_namedtuples = {}


def _namedtuple(parts):
    name, fields, values = parts
    key = (_text(name), tuple(_text(f) for f in _checked(fields)))
    if key not in _namedtuples:
        _namedtuples[key] = collections.namedtuple(*key)
    return _namedtuples[key](*_list(values))


def _checked(items):
    if type(items) is not list:
        raise WireError("expected a list")
    return items


_TAGS = {
    "tuple": lambda items: tuple(_list(items)),
    "set": lambda items: set(_list(items)),
    "frozenset": lambda items: frozenset(_list(items)),
    "dict": lambda pairs: {_one(k): _one(v) for k, v in _pairs(pairs)},
    "bytes": lambda text: _text(text).encode("latin-1"),
    "float": lambda name: float({"nan": "nan", "inf": "inf", "-inf": "-inf"}[_text(name)]),
    "complex": lambda parts: complex(*_numbers(parts)),
    "range": lambda parts: range(*_ints(parts, 3)),
    "iterator": lambda items: iter(_list(items)),
    "keys": lambda items: dict.fromkeys(_list(items)).keys(),
    "values": lambda items: dict(enumerate(_list(items))).values(),
    "items": lambda pairs: {_one(k): _one(v) for k, v in _pairs(pairs)}.items(),
    "object": lambda body: _object(body),
    "namedtuple": _namedtuple,
    "deque": lambda parts: collections.deque(_list(parts[0]), _maxlen(parts[1])),
    "counter": lambda pairs: collections.Counter({_one(k): _one(v) for k, v in _pairs(pairs)}),
    "ordered": lambda pairs: collections.OrderedDict((_one(k), _one(v)) for k, v in _pairs(pairs)),
    "defaultdict": lambda parts: collections.defaultdict(
        _FACTORIES[_text(parts[0])], {_one(k): _one(v) for k, v in _pairs(parts[1])}),
    "fraction": lambda parts: _from("fractions", "Fraction")(*_ints(parts, 2)),
    "decimal": lambda text: _from("decimal", "Decimal")(_text(text)),
    "timedelta": lambda parts: _from("datetime", "timedelta")(*_ints(parts, 3)),
    "date": lambda text: _from("datetime", "date").fromisoformat(_text(text)),
    "time": lambda text: _from("datetime", "time").fromisoformat(_text(text)),
    "datetime": lambda text: _from("datetime", "datetime").fromisoformat(_text(text)),
}


def _maxlen(value):
    if value is not None and type(value) is not int:
        raise WireError("expected an integer")
    return value


def decode(data, objects=None):
    """Wire JSON (already parsed) as a Python value of built-in types only,
    but for references, which `objects` turns into the side's stand-ins."""
    global _objects
    _objects = objects
    try:
        return _one(data)
    except RecursionError:
        raise WireError("the value is nested too deeply") from None


# The hook of the decode under way; one thread per process, and a decode
# never starts another.
_objects = None


def _object(body):
    if _objects is None or type(body) is not dict:
        raise WireError("an object cannot cross here")
    return _objects(body)


def _one(data):
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [_one(v) for v in data]
    if kind is dict and len(data) == 1:
        (tag, body), = data.items()
        if tag in _TAGS:
            try:
                return _TAGS[tag](body)
            except WireError:
                raise
            except (TypeError, ValueError, KeyError, IndexError, ArithmeticError,
                    UnicodeError) as error:
                raise WireError("a malformed %s: %s" % (tag, error)) from None
    raise WireError("not a value: %s" % json.dumps(data)[:80])


def _list(items):
    if type(items) is not list:
        raise WireError("expected a list")
    return [_one(v) for v in items]


def _pairs(pairs):
    if type(pairs) is not list or any(type(p) is not list or len(p) != 2 for p in pairs):
        raise WireError("expected [key, value] pairs")
    return pairs


def _text(text):
    if type(text) is not str:
        raise WireError("expected a string")
    return text


def _numbers(parts):
    values = _list(parts)
    if len(values) != 2 or any(type(v) not in (int, float) for v in values):
        raise WireError("expected two numbers")
    return values


def _ints(parts, n):
    if type(parts) is not list or len(parts) != n or any(type(v) is not int for v in parts):
        raise WireError("expected %d integers" % n)
    return parts


def dumps(message):
    """One message as a line of bytes."""
    return json.dumps(message, allow_nan=False, separators=(",", ":")).encode() + b"\n"


def loads(line):
    """One line as a message: JSON without NaN or infinities spelled bare."""
    def bare(name):
        raise WireError("bare %s: not plain JSON" % name)
    try:
        return json.loads(line, parse_constant=bare)
    except (ValueError, RecursionError) as error:
        raise WireError("not JSON: %s" % str(error)[:120]) from None


def text_of(error):
    """str(error), or nothing when its __str__ fails."""
    try:
        return str(error)
    except BaseException:
        return ""


def describe(error, filename, source):
    """`Type: message at line N: <line>`, the line being the last of
    `filename` (whose text is `source`) the error passed through."""
    text = type(error).__name__
    message = text_of(error)
    if message:
        text += ": " + message
    if isinstance(error, SyntaxError):
        return text
    lines = source.splitlines()
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename == filename and frame.lineno and frame.lineno <= len(lines):
            return "%s at line %d: %s" % (text, frame.lineno, lines[frame.lineno - 1].strip())
    return text


class Lines:
    """Messages read from a descriptor, one per line, each at most MAX_LINE bytes."""

    def __init__(self, fd):
        self._fd = fd
        self._buffer = bytearray()
        self._scanned = 0

    def next(self):
        """The next line's message, or None at end of input."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                break
            self._scanned = len(self._buffer)
            if self._scanned > MAX_LINE:
                raise WireError("a message over %d bytes" % MAX_LINE)
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        if len(line) > MAX_LINE:
            raise WireError("a message over %d bytes" % MAX_LINE)
        return loads(line)
