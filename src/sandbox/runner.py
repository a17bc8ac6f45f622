"""Runs solution.py against the tests in tests.json, for harness.

Reports one line per test on stdout: "<nonce> <json>". The nonce arrives on
stdin, so the solution's own prints cannot pose as results by accident.
"""
import json
import sys
import traceback


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


def describe(error, filename, source):
    text = type(error).__name__
    message = str(error)
    if message:
        text += ": " + message
    if isinstance(error, SyntaxError):
        return text
    lines = source.splitlines()
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename == filename and frame.lineno and frame.lineno <= len(lines):
            return "%s at line %d: %s" % (text, frame.lineno, lines[frame.lineno - 1].strip())
    return text


def main():
    nonce = sys.stdin.readline().strip()
    out = sys.stdout

    def report(**fields):
        out.write("\n" + nonce + " " + json.dumps(fields) + "\n")
        out.flush()

    with open("tests.json", encoding="utf-8") as f:
        tests = json.load(f)
    with open("solution.py", encoding="utf-8") as f:
        source = f.read()
    namespace = {"__name__": "solution"}
    try:
        exec(compile(source, "solution.py", "exec"), namespace)
    except BaseException as error:
        report(test=None, status="error", kind=kind_of(error),
               error=describe(error, "solution.py", source)[:500])
        return
    for i, test in enumerate(tests):
        name = "test %d" % (i + 1)
        try:
            exec(compile(test, name, "exec"), namespace)
        except BaseException as error:
            report(test=i, status="fail", kind=kind_of(error),
                   error=describe(error, name, test)[:500])
        else:
            report(test=i, status="pass")


main()
