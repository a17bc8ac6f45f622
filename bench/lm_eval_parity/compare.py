"""Compares the harness's per-choice log-likelihoods with lm-eval's.

Usage:
  python3 compare.py LM_EVAL.jsonl HARNESS.jsonl [--tolerance 1e-6] [--show 10] [--subset]
  python3 compare.py --self-check [LM_EVAL.jsonl]

Both files hold one line per item: {"id", "loglikelihoods": [...], "acc": 0|1,
"acc_norm": 0|1} (lm-eval's also has "is_greedy", ignored here). Exit 0 when
the two files hold the same ids, every item has as many choices on both
sides, every log-likelihood agrees within the tolerance (absolute) and acc
and acc_norm are identical; else exit 1, after a table of the worst
differences. Exit 2 on unreadable input.

--subset lets the harness's file hold only some of lm-eval's items (at least
one): CI scores a few items live and holds them to the committed reference.

--self-check runs this comparison on copies of an lm-eval output (default:
lm_eval_output.jsonl beside this file): the copy itself must pass, and each
deliberate perturbation (a log-likelihood moved by 2e-6, an acc flipped, an
acc_norm flipped, an item dropped, a choice dropped) must fail.
"""

import argparse
import copy
import io
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class BadInput(Exception):
    pass


def load(path):
    """{id: line} of a JSONL file, with its shape checked."""
    items = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            where = f"{path}:{number}"
            try:
                line = json.loads(text)
            except ValueError as e:
                raise BadInput(f"{where}: not JSON: {e}") from e
            if not isinstance(line, dict) or not isinstance(line.get("id"), str):
                raise BadInput(f"{where}: a line must be an object with a string id")
            lls = line.get("loglikelihoods")
            if not isinstance(lls, list) or not all(isinstance(x, (int, float)) for x in lls):
                raise BadInput(f"{where}: loglikelihoods must be a list of numbers")
            for key in ("acc", "acc_norm"):
                if line.get(key) not in (0, 1):
                    raise BadInput(f"{where}: {key} must be 0 or 1")
            if line["id"] in items:
                raise BadInput(f"{where}: id {line['id']!r} again")
            items[line["id"]] = line
    return items


def differences(reference, candidate, tolerance, subset=False):
    """(failures, rows): failure messages, and one row per compared choice."""
    failures, rows = [], []
    if subset and not candidate:
        failures.append("the harness's output holds no items")
    for missing in sorted(set(reference) - set(candidate)):
        if not subset:
            failures.append(f"{missing}: only in lm-eval's output")
    for extra in sorted(set(candidate) - set(reference)):
        failures.append(f"{extra}: only in the harness's output")
    for key in sorted(set(reference) & set(candidate)):
        ref, got = reference[key], candidate[key]
        if len(ref["loglikelihoods"]) != len(got["loglikelihoods"]):
            failures.append(f"{key}: {len(ref['loglikelihoods'])} choices vs {len(got['loglikelihoods'])}")
            continue
        for choice, (a, b) in enumerate(zip(ref["loglikelihoods"], got["loglikelihoods"])):
            diff = abs(a - b)
            # NaN never compares within tolerance.
            bad = math.isnan(diff) or diff > tolerance
            rows.append((diff, key, choice, a, b))
            if bad:
                failures.append(f"{key} choice {choice}: {a!r} vs {b!r} (|diff| {diff:.3g})")
        for metric in ("acc", "acc_norm"):
            if ref[metric] != got[metric]:
                failures.append(f"{key}: {metric} {ref[metric]} vs {got[metric]}")
    return failures, rows


def compare(reference, candidate, tolerance, show, out, subset=False):
    failures, rows = differences(reference, candidate, tolerance, subset)
    rows.sort(key=lambda r: -math.inf if math.isnan(r[0]) else -r[0])
    if rows and show:
        out.write(f"{'|diff|':>10}  {'id':<24} {'choice':>6}  {'lm-eval':>22}  {'harness':>22}\n")
        for diff, key, choice, a, b in rows[:show]:
            out.write(f"{diff:10.3g}  {key[:24]:<24} {choice:>6}  {a!r:>22}  {b!r:>22}\n")
    n_items = len(set(reference) & set(candidate))
    if failures:
        for message in failures[:20]:
            out.write(f"FAIL {message}\n")
        if len(failures) > 20:
            out.write(f"FAIL ... and {len(failures) - 20} more\n")
        out.write(f"parity: {len(failures)} failure(s) over {n_items} common items (tolerance {tolerance:g})\n")
        return 1
    out.write(f"parity: {n_items} items, {len(rows)} choices agree within {tolerance:g}; acc and acc_norm identical\n")
    return 0


def perturbations(reference):
    """(name, perturbed copy) pairs, each of which must fail the comparison."""
    first = next(iter(reference))

    def changed(edit):
        copied = copy.deepcopy(reference)
        edit(copied)
        return copied

    def nudge(c):
        c[first]["loglikelihoods"][0] += 2e-6

    def flip(metric):
        def edit(c):
            c[first][metric] = 1 - c[first][metric]

        return edit

    def drop_choice(c):
        c[first]["loglikelihoods"].pop()

    return [
        ("a log-likelihood moved by 2e-6", changed(nudge)),
        ("acc flipped", changed(flip("acc"))),
        ("acc_norm flipped", changed(flip("acc_norm"))),
        ("an item dropped", changed(lambda c: c.pop(first))),
        ("a choice dropped", changed(drop_choice)),
    ]


def self_check(path):
    reference = load(path)
    if not reference:
        raise BadInput(f"{path}: no items")
    sink = io.StringIO()
    ok = compare(reference, copy.deepcopy(reference), 1e-6, 0, sink) == 0
    print(f"{'ok  ' if ok else 'BAD '} an identical copy passes")
    for name, perturbed in perturbations(reference):
        failed = compare(reference, perturbed, 1e-6, 0, sink) == 1
        print(f"{'ok  ' if failed else 'BAD '} {name} fails")
        ok = ok and failed
    # --subset: a part passes, but an empty part or a changed one does not.
    part = dict(list(copy.deepcopy(reference).items())[: max(1, len(reference) // 2)])
    passed = compare(reference, part, 1e-6, 0, sink, subset=True) == 0
    print(f"{'ok  ' if passed else 'BAD '} --subset: half of the items pass")
    ok = ok and passed
    for name, perturbed in [("no items", {}), *perturbations(part)[:3]]:
        failed = compare(reference, perturbed, 1e-6, 0, sink, subset=True) == 1
        print(f"{'ok  ' if failed else 'BAD '} --subset: {name} fails")
        ok = ok and failed
    print(f"self-check: {'passed' if ok else 'FAILED'} on {len(reference)} items of {path}")
    return 0 if ok else 1


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="LM_EVAL.jsonl HARNESS.jsonl")
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--show", type=int, default=10, help="rows of the worst-differences table")
    parser.add_argument("--self-check", action="store_true")
    parser.add_argument("--subset", action="store_true", help="the harness's items may be a subset of lm-eval's")
    args = parser.parse_args(argv)
    try:
        if args.self_check:
            if len(args.files) > 1:
                parser.error("--self-check takes at most one file")
            return self_check(args.files[0] if args.files else HERE / "lm_eval_output.jsonl")
        if len(args.files) != 2:
            parser.error("give LM_EVAL.jsonl and HARNESS.jsonl")
        reference, candidate = load(args.files[0]), load(args.files[1])
        return compare(reference, candidate, args.tolerance, args.show, sys.stdout, args.subset)
    except (OSError, BadInput) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
