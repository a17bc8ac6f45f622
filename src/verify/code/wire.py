"""Values crossing between harness's checker and a program, for harness;
and how both describe an error.

A value on the wire is JSON: null, true, false, a number, a string, an array
(a Python list), or an object with exactly one key naming another type:

    {"tuple": [...]}   {"set": [...]}   {"frozenset": [...]}
    {"dict": [[key, value], ...]}       {"bytes": "<latin-1 text>"}
    {"float": "nan" | "inf" | "-inf"}   {"complex": [real, imag]}
    {"range": [start, stop, step]}      {"iterator": [...]}
    {"keys": [...]}   {"values": [...]}   {"items": [[key, value], ...]}  (a dict's views)

Decoding builds nothing but these built-in types: an answer is data, never
an object with methods of its own. One message is one line of JSON.
"""
import json
import math
import os
import traceback

MAX_LINE = 16 << 20


class WireError(Exception):
    """A message or value that is not plain data."""


def encode(value, depth=0):
    """A Python value as wire JSON; iterators are read to the end."""
    if depth > 200:
        raise WireError("the value is nested too deeply")
    inner = depth + 1
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
        return {"complex": [encode(value.real, inner), encode(value.imag, inner)]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).decode("latin-1")}
    if isinstance(value, list):
        return [encode(v, inner) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, inner) for v in value]}
    if isinstance(value, frozenset):
        return {"frozenset": [encode(v, inner) for v in value]}
    if isinstance(value, set):
        return {"set": [encode(v, inner) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, inner), encode(v, inner)] for k, v in value.items()]}
    if isinstance(value, range):
        return {"range": [value.start, value.stop, value.step]}
    if isinstance(value, type({}.keys())):
        return {"keys": [encode(v, inner) for v in value]}
    if isinstance(value, type({}.values())):
        return {"values": [encode(v, inner) for v in value]}
    if isinstance(value, type({}.items())):
        return {"items": [[encode(k, inner), encode(v, inner)] for k, v in value]}
    if hasattr(value, "__next__"):
        return {"iterator": [encode(v, inner) for v in value]}
    raise WireError("a %s cannot cross to the checker: only plain data can"
                    % type(value).__name__)


_TAGS = {
    "tuple": lambda items: tuple(_list(items)),
    "set": lambda items: set(_list(items)),
    "frozenset": lambda items: frozenset(_list(items)),
    "dict": lambda pairs: {_one(k): _one(v) for k, v in _pairs(pairs)},
    "bytes": lambda text: _text(text).encode("latin-1"),
    "float": lambda name: float({"nan": "nan", "inf": "inf", "-inf": "-inf"}[_text(name)]),
    "complex": lambda parts: complex(*_numbers(parts)),
    "range": lambda parts: range(*_ints(parts)),
    "iterator": lambda items: iter(_list(items)),
    "keys": lambda items: dict.fromkeys(_list(items)).keys(),
    "values": lambda items: dict(enumerate(_list(items))).values(),
    "items": lambda pairs: {_one(k): _one(v) for k, v in _pairs(pairs)}.items(),
}


def decode(data):
    """Wire JSON (already parsed) as a Python value of built-in types only."""
    try:
        return _one(data)
    except RecursionError:
        raise WireError("the value is nested too deeply")


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
            except (TypeError, ValueError, KeyError, UnicodeError) as error:
                raise WireError("a malformed %s: %s" % (tag, error))
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


def _ints(parts):
    if type(parts) is not list or len(parts) != 3 or any(type(v) is not int for v in parts):
        raise WireError("expected three integers")
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
        raise WireError("not JSON: %s" % str(error)[:120])


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
