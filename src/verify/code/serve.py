"""Serves a solution's names and objects to harness's checker, for harness.

Runs beside the model's code and is exactly as trusted as it: nothing here
decides a verdict. The checker, another process this one cannot reach,
sends each call's arguments and compares the values this process returns.

Messages, one JSON line each, over the descriptors in HARNESS_CHANNEL
(`<read>,<write>`); values as in wire.py:

    -> {"ready": NAMES} or {"failed": {"type": name, "error": text}} when the solution does not load
    <- {"call": name, "args": [value, ...], "kwargs": [[name, value], ...]}
    <- {"op": op, "on": {"global": name} | {"id": n}, "args": [...], "kwargs": [...]}
    -> {"value": value} or {"raised": {"type": name, "message": text, "args": value,
                                      "fields": value, "class": object}}

NAMES is {"functions": [name, ...], "modules": {name: module}, "names": [name, ...]}
(and in "ready", "shares": true, for the links below):
the solution's top-level callables (but classes), imported modules and
every top-level name. A reply also carries {"names": NAMES}
when they changed since the last, {"printed": text} when the request
printed, and {"changed": [[arg, value], ...]} for the list, dict, set and
bytearray arguments a call changed when it returned None. A request
carries {"patched": {"input" | "print": callable}} while the test has
replaced them (or `sys.stdin`): the program's built-ins are those callables
for that request.

Unless the checker guards its tests, a request also says {"share": true}
and links the containers both sides hold (share.py): it carries the
checker's changes to linked objects ({"sync": [[link, value], ...]}), the
links it dropped ({"drop": [link, ...]}) and the arguments it links
({"link": [[arg, link], ...]}); a linked argument crosses as
{"object": {"link": link}}. The reply then carries the request's changes
to linked objects ({"synced": [[link, value], ...]}), the links only the
checker still holds ({"dropped": [...]}) and, for a list, dict, set or
bytearray value, the link it is under ({"linked": link}). An op `assign`
on {"global": name} binds the program's global, as a test's top-level
assignment does in one module.

A value that is not plain data crosses as an object reference
(`{"object": {"id": n, "type": ..., ...}}`, see `described`), on which the
checker performs ops: `get` (the object itself), `invoke`, `getattr`,
`setattr`, `delattr`, `getitem`, `setitem`, `delitem`, `truth`, `repr`,
`str`, `format`, `len`, `iter`, `next`, `drain` (every item left, an error
after some raised at the next `next`), `isinstance`, `issubclass`. A
built-in crosses the other way as `{"object": {"builtin": name}}`, the
program's own; any other callable of the test's as `{"object": {"callback":
n}}`: calling it sends `{"callback": n, "args": ..., "kwargs": ...}` and
waits for its `value` or `raised`, serving the checker's requests meanwhile.
"""
import builtins
import io
import operator
import os
import sys
import types

import share
import wire

OPS = {
    "get": lambda target: target,
    "invoke": lambda target, *args, **kwargs: target(*args, **kwargs),
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "truth": bool,
    "repr": repr,
    "str": str,
    "format": format,
    "len": len,
    "iter": iter,
    "next": next,
    "isinstance": lambda target, value: isinstance(value, target),
    "issubclass": lambda target, value: issubclass(value, target),
}

# Comparisons whose outcome a class of its own decides; the checker refuses them.
COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")


class Objects:
    """The objects handed to the checker, by id, kept alive so ids stay unique."""

    def __init__(self):
        self.by_id = {}
        self.ids = {}

    def describe(self, value):
        n = self.ids.get(id(value))
        if n is None:
            n = self.ids[id(value)] = len(self.by_id) + 1
            self.by_id[n] = value
        return described(n, value, self.describe)

    def find(self, reference):
        if type(reference) is not dict or type(reference.get("id")) is not int \
                or reference["id"] not in self.by_id:
            raise TypeError("no such object: %r" % (reference,))
        return self.by_id[reference["id"]]


def described(n, value, describe):
    """What the checker may know of an object: its type's name and module,
    whether the program's own code decides comparisons with it or
    membership in it; its class (`of`), when not a built-in; for a class,
    its name and bases, and for an exception class its bases (built-in
    ones by name)."""
    kind = type(value)
    about = {"id": n, "type": kind.__qualname__, "module": kind.__module__,
             "compares": [c for c in COMPARISONS if getattr(kind, c, None) is not getattr(object, c)],
             "contains": own(kind, "__contains__"), "iterator": hasattr(kind, "__next__")}
    if not built_in(kind):
        about["of"] = describe(kind)
    if isinstance(value, type) and issubclass(value, BaseException):
        about["exception"] = value.__name__
        about["bases"] = [b.__name__ if built_in(b) else describe(b)
                          for b in value.__bases__ if issubclass(b, BaseException)]
    elif isinstance(value, type):
        about["class"] = value.__name__
        about["qualname"], about["in"] = value.__qualname__, value.__module__
        about["bases"] = [describe(b) for b in value.__bases__ if not built_in(b)]
    return about


def own(kind, method):
    """Whether `method` of `kind` is the program's code, not a library's."""
    for cls in kind.__mro__:
        if method in cls.__dict__:
            return cls.__module__ == "solution"
    return False


def built_in(kind):
    return getattr(builtins, kind.__name__, None) is kind


def raised(error, objects):
    """An exception as data: its class's name (and the class, when the
    solution's), its text, its args and attributes when they are values."""
    described = {"type": type(error).__name__, "message": wire.text_of(error)[:2000]}
    try:
        if not built_in(type(error)):
            described["class"] = objects.describe(type(error))
        described["args"] = wire.encode(tuple(error.args), objects.describe)
        fields = {k: v for k, v in vars(error).items() if type(k) is str and not k.startswith("__")}
        if fields:
            described["fields"] = wire.encode(fields, objects.describe)
    except BaseException:
        pass
    return described


# Arguments whose changes a call hands back, when it returns None (an
# in-place sort): only then, so a function whose value a test compares
# cannot also rewrite what the test compares it with.
MUTABLE = (list, dict, set, bytearray)


class Callback:
    """A callable of the test's (a lambda, a key function, `str`): calling
    it asks the checker, which runs it and answers; requests the checker
    makes meanwhile are served here."""

    def __init__(self, server, n):
        self.server, self.n = server, n

    def __call__(self, *args, **kwargs):
        server = self.server
        server.send({"callback": self.n, "args": [server.encode(a) for a in args],
                     "kwargs": [[k, server.encode(v)] for k, v in kwargs.items()]})
        while True:
            message = server.requests.next()
            if message is None:
                os._exit(0)
            if "value" in message:
                return server.decode(message["value"])
            if "raised" in message:
                kind = getattr(builtins, str(message["raised"].get("type")), None)
                if not (isinstance(kind, type) and issubclass(kind, Exception)):
                    kind = Exception
                raise kind(str(message["raised"].get("message", "")))
            server.serve(message)


class Server:
    def __init__(self, namespace, requests, out):
        self.namespace, self.requests, self.out = namespace, requests, out
        self.objects = Objects()
        self.names = self.held = None
        self.pending = {}
        self.links = share.Links("p")

    def send(self, message):
        self.out.write(wire.dumps(message))
        self.out.flush()

    def encode(self, value):
        return wire.encode(value, self.objects.describe)

    def decode(self, value):
        return wire.decode(value, self.find)

    def find(self, reference):
        if type(reference.get("callback")) is int:
            return Callback(self, reference["callback"])
        if "global" in reference:
            return self.namespace[reference["global"]]
        if "link" in reference:
            return self.links.get(reference["link"])
        if type(reference.get("builtin")) is str and hasattr(builtins, reference["builtin"]):
            return getattr(builtins, reference["builtin"])
        return self.objects.find(reference)

    def serve(self, request):
        """Answers one request, with what it printed and the names it changed."""
        printed, saved = io.StringIO(), sys.stdout
        console = {"input": builtins.input, "print": builtins.print}
        sys.stdout = printed
        try:
            patched = request.get("patched") or {}
            for name in set(console) & set(patched):
                setattr(builtins, name, self.decode(patched[name]))
            if request.get("share"):
                self.synced(request)
            reply = self.answer(request)
        except Exception as error:
            reply = {"raised": {"type": "TypeError", "message": "a malformed request: %r" % error}}
        finally:
            sys.stdout = saved
            for name, value in console.items():
                setattr(builtins, name, value)
        if printed.getvalue():
            reply["printed"] = printed.getvalue()
            try:
                saved.write(printed.getvalue())
            except BaseException:
                pass
        if request.get("share"):
            self.shared(reply)
        names = self.changed_names()
        if names is not None:
            reply["names"] = names
        self.send(reply)

    def synced(self, request):
        """Takes the checker's changes to linked objects, and its dropped links."""
        for n, value in request.get("sync") or []:
            if n not in self.links:
                raise TypeError("no such link: %r" % (n,))
            self.links.agree(n, self.decode(value), value)
        for n in request.get("drop") or []:
            self.links.unlink(n)

    def shared(self, reply):
        """Tells the checker what the request changed in linked objects, and
        which links only it still holds."""
        try:
            changed = self.links.changes(self.encode)
        except (wire.WireError, RecursionError) as error:
            # A linked list the program filled with what cannot cross.
            reply.clear()
            reply["raised"] = {"type": "TypeError", "message": wire.text_of(error)}
            changed = []
        if changed:
            reply["synced"] = changed
        dropped = self.links.lonely()
        if dropped:
            reply["dropped"] = dropped

    def answer(self, request):
        """The reply to one request: its value, or the exception it raised."""
        try:
            if "call" in request:
                op, target = "invoke", self.namespace[request["call"]]
            elif request["op"] == "assign":
                op, target = "assign", request["on"]["global"]
            else:
                op, on = request["op"], request["on"]
                target = self.namespace[on["global"]] if "global" in on else self.objects.find(on)
            action = {"drain": self.drain, "next": self.next, "assign": self.assign}.get(op) or OPS[op]
            args, kwargs = self.arguments(request)
        except KeyError as error:
            return {"raised": {"type": "NameError", "message": "name %s is not defined" % error}}
        except Exception as error:
            return {"raised": {"type": "TypeError", "message": "a malformed request: %r" % error}}
        mutable = [(i, a) for i, a in enumerate(args) if isinstance(a, MUTABLE)] + \
            [(k, v) for k, v in kwargs.items() if isinstance(v, MUTABLE)]
        before = [self.encode(a) for _, a in mutable] if op == "invoke" and not request.get("share") else []
        try:
            result = action(target, *args, **kwargs)
        except BaseException as error:
            return {"raised": raised(error, self.objects)}
        try:
            reply = {"value": self.encode(result)}
            if request.get("share") and isinstance(result, share.MUTABLE):
                n = self.links.of(result)
                reply["linked"] = n or self.links.new(result, reply["value"])
            if result is None and before:
                after = [(key, self.encode(a)) for key, a in mutable]
                changed = [[key, a] for (key, a), b in zip(after, before) if a != b]
                if changed:
                    reply["changed"] = changed
            return reply
        except (wire.WireError, RecursionError) as error:
            return {"raised": {"type": "TypeError", "message": wire.text_of(error)}}

    def arguments(self, request):
        """The request's arguments, the linked ones under their links, in
        order (an argument may be one linked before it)."""
        links = {key: n for key, n in request.get("link") or []}
        args, kwargs = [], {}
        for i, encoded in enumerate(request["args"]):
            args.append(self.decode(encoded))
            if i in links:
                self.links.link(links[i], args[-1], encoded)
        for key, encoded in request["kwargs"]:
            kwargs[key] = self.decode(encoded)
            if key in links:
                self.links.link(links[key], kwargs[key], encoded)
        return args, kwargs

    def assign(self, name, value):
        if type(name) is not str or not name.isidentifier():
            raise TypeError("a malformed name")
        self.namespace[name] = value

    def drain(self, iterator):
        """Every item left; an error after some is kept for the next `next`."""
        items = []
        try:
            for item in iterator:
                items.append(item)
        except BaseException as error:
            self.pending[id(iterator)] = error
        return items

    def next(self, iterator):
        error = self.pending.pop(id(iterator), None)
        if error is not None:
            raise error
        return next(iterator)

    def changed_names(self):
        """The solution's names, when they changed since last asked."""
        # Which objects the names hold: the same ones, the same names.
        held = tuple(map(id, self.namespace.values()))
        if held == self.held:
            return None
        self.held = held
        names = exported(self.namespace)
        if names == self.names:
            return None
        self.names = names
        return names


def exported(namespace):
    """The solution's top-level functions (any callable), modules and names."""
    functions, modules, names = [], {}, []
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        names.append(name)
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        elif callable(value) and not isinstance(value, type):
            functions.append(name)
    return {"functions": functions, "modules": modules, "names": names}


def main():
    read_fd, write_fd = (int(fd) for fd in os.environ.pop("HARNESS_CHANNEL").split(","))
    requests = wire.Lines(read_fd)
    out = os.fdopen(write_fd, "wb")

    def send(message):
        out.write(wire.dumps(message))
        out.flush()

    with open("solution.py", encoding="utf-8") as f:
        source = f.read()
    namespace = {"__name__": "solution"}
    try:
        exec(compile(source, "solution.py", "exec"), namespace)
    except BaseException as error:
        send({"failed": {"type": type(error).__name__, "error": wire.describe(error, "solution.py", source)[:500]}})
        return
    server = Server(namespace, requests, out)
    send({"ready": dict(server.changed_names(), shares=True)})
    while True:
        request = requests.next()
        if request is None:
            return
        server.serve(request)


# Run as a script; a warm interpreter (src/sandbox/warm.py) imports it and calls main itself.
if __name__ == "__main__":
    main()
