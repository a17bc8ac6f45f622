"""Writes specs/tau2_retail.toml without its `[golden]` table.

The shipped spec records and replays golden transcripts of a subset of its
tasks (`[golden] instances`): `harness run --bless` and a replay run only
that subset. The parity rig records and replays every task, so it runs a
copy without the table, beside a link to the spec's data folder; the spec's
id, tools, rules and prompts are unchanged.

Usage: full_spec.py DIR  (prints the copy's path)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = ROOT / "specs" / "tau2_retail.toml"


def without_golden(text):
    """`text` with its `[golden]` table (header to the next table) cut."""
    cut = re.sub(r"(?ms)^\[golden\]\n.*?(?=^\[)", "", text)
    if "[golden]" in cut:
        raise ValueError("%s: a [golden] table that is not followed by another table" % SPEC)
    return cut


def write(directory):
    """The copy's path, under `directory`/specs/."""
    specs = Path(directory, "specs")
    specs.mkdir(parents=True, exist_ok=True)
    copy = specs / SPEC.name
    copy.write_text(without_golden(SPEC.read_text(encoding="utf-8")), encoding="utf-8")
    data = specs / SPEC.stem
    if not data.exists():
        data.symlink_to(SPEC.parent / SPEC.stem, target_is_directory=True)
    return copy


if __name__ == "__main__":
    print(write(sys.argv[1]))
