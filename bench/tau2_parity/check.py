"""Checks, without τ²-bench, that the committed parity output still holds.

Replays the committed tau2_retail episodes through the harness (no model is
asked: 0 requests) and compares what it reports with output.jsonl, which
evaluate.sh wrote from τ²-bench's own evaluator: every episode's verdict
must equal τ²'s DB verdict, and its `communicated` rule τ²'s communicate
check. `--self-check` shows the comparison can fail.

Usage: check.py [--harness PATH] [--self-check]
"""

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import full_spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SPEC = ROOT / "specs" / "tau2_retail.toml"
# Golden directories (what `--golden` takes) and the source names output.jsonl gives them.
SOURCES = {
    ROOT / "golden": "golden/tau2_retail",
    HERE / "episodes": "bench/tau2_parity/episodes/tau2_retail",
}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def replay(harness, golden):
    """The journal records of a replay of `golden`'s tau2_retail transcripts.

    Compressed transcripts (record.sh keeps its episodes so) are unpacked into
    a scratch golden directory first.
    """
    with tempfile.TemporaryDirectory() as scratch:
        packed = sorted(Path(golden, "tau2_retail").glob("*.jsonl.xz"))
        if packed:
            Path(scratch, "golden", "tau2_retail").mkdir(parents=True)
            for path in packed:
                with lzma.open(path, "rb") as f:
                    Path(scratch, "golden", "tau2_retail", path.name[: -len(".xz")]).write_bytes(f.read())
            golden = Path(scratch, "golden")
        results = str(Path(scratch, "results"))
        # Every task the episodes hold, not only the spec's golden subset.
        spec = full_spec.write(scratch) if packed else SPEC
        run = subprocess.run(
            [harness, "run", str(spec), "--golden", str(golden), "--results", results, "--no-progress"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        journals = sorted(Path(results, "runs").glob("*/journal.jsonl"))
        if not journals:
            output = run.stdout + run.stderr
            sys.exit("check.py: the replay wrote no journal (exit %d):\n%s" % (run.returncode, output))
        return read_jsonl(journals[-1])


def compare(rows, records):
    """What differs between τ²'s verdicts (rows) and the harness's (records)."""
    wanted = {(r["source"], r["model"], r["instance"], r["sample"]): r for r in rows}
    problems = []
    seen = set()
    for source, record in records:
        key = (source, record["model"], record["instance"], record["sample"])
        seen.add(key)
        row = wanted.get(key)
        if row is None:
            problems.append("%s: no line in output.jsonl" % (key,))
            continue
        if record.get("attempts", 0) != 0:
            problems.append("%s: the replay asked a model (%d attempts)" % (key, record["attempts"]))
        if record["passed"] != row["tau2_passed"]:
            problems.append("%s: harness passed=%s, tau2 DB verdict=%s" % (key, record["passed"], row["tau2_passed"]))
        said = [r["passed"] for r in record.get("rules", []) if r["name"] == "communicated"]
        if said != [row["tau2_communicate_met"]]:
            problems.append("%s: harness communicated=%s, tau2 met=%s" % (key, said, row["tau2_communicate_met"]))
    problems += ["%s: not replayed" % (key,) for key in wanted if key not in seen]
    return problems


def self_check(rows, records):
    """Each kind of disagreement is caught."""
    flipped = [dict(rows[0], tau2_passed=not rows[0]["tau2_passed"]), *rows[1:]]
    silent = [dict(rows[0], tau2_communicate_met=not rows[0]["tau2_communicate_met"]), *rows[1:]]
    for name, changed in (("a DB verdict", flipped), ("a communicate check", silent), ("a missing line", rows[1:])):
        if not compare(changed, records):
            sys.exit("check.py --self-check: %s changed and nothing was caught" % name)
    print("self-check: a changed DB verdict, communicate check and line are each caught")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", default=os.environ.get("HARNESS", "harness"))
    parser.add_argument("--self-check", action="store_true")
    args = parser.parse_args()
    rows = read_jsonl(HERE / "output.jsonl")
    records = []
    for golden, source in SOURCES.items():
        if any(r["source"] == source for r in rows):
            records += [(source, r) for r in replay(args.harness, golden)]
    problems = compare(rows, records)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    agree = sum(r["agree"] for r in rows)
    print("tau2 parity holds: %d episodes replayed with 0 requests, %d agree with tau2" % (len(records), agree))
    if args.self_check:
        self_check(rows, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
