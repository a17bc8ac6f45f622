"""Serves a solution's functions to harness's checker, for harness.

Runs beside the model's code and is exactly as trusted as it: nothing here
decides a verdict. The checker, another process this one cannot reach,
sends each call's arguments and compares the values this process returns.

Messages, one JSON line each, over the descriptors in HARNESS_CHANNEL
(`<read>,<write>`); values as in wire.py:

    -> {"ready": {"functions": [name, ...], "modules": {name: module}}}
       or {"failed": {"type": name, "error": text}} when the solution does not load
    <- {"call": name, "args": [value, ...], "kwargs": [[name, value], ...]}
    -> {"value": value} or {"raised": {"type": name, "message": text, "args": value}}
"""
import os
import types

import wire


def answer(namespace, request):
    """The reply to one call: its value, or the exception it raised."""
    try:
        function = namespace[request["call"]]
        args = [wire.decode(a) for a in request["args"]]
        kwargs = {k: wire.decode(v) for k, v in request["kwargs"]}
    except Exception as error:
        return {"raised": {"type": "TypeError", "message": "a malformed call: %r" % error}}
    try:
        result = function(*args, **kwargs)
    except BaseException as error:
        return {"raised": raised(error)}
    try:
        return {"value": wire.encode(result)}
    except (wire.WireError, RecursionError) as error:
        return {"raised": {"type": "TypeError", "message": wire.text_of(error)}}


def raised(error):
    """An exception as data: its class's name, its text, its args when they are values."""
    described = {"type": type(error).__name__, "message": wire.text_of(error)[:2000]}
    try:
        described["args"] = wire.encode(tuple(error.args))
    except BaseException:
        pass
    return described


def exported(namespace):
    """The solution's top-level functions (any callable) and imported modules."""
    functions, modules = [], {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        elif callable(value):
            functions.append(name)
    return {"functions": functions, "modules": modules}


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
    send({"ready": exported(namespace)})
    while True:
        request = requests.next()
        if request is None:
            return
        send(answer(namespace, request))


main()
