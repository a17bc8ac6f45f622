#!/usr/bin/env python3
"""Build the rrr_ru splits (routes_3/5/7/9.jsonl) from the hand-written sources.

Python 3 standard library only. The output is deterministic: running this
script again reproduces the committed split files byte for byte.

    python3 build.py           # parse sources, self-check, (re)write the splits
    python3 build.py --check   # same, but only compare with the files on disk

Source format (source/*.txt, UTF-8), one organization per file:

    @org <org_key>
    @name <organization name, for humans only>
    @domain <domain, for humans only>
    @route <route_key> | <description shown to the model> | <near-miss route keys, space separated>
    ...
    # <route_key> [tags...]        starts a dialogue labelled with <route_key>
    U: <user message>
    A: <assistant message>
    U: <user message>

Blank lines separate blocks. A line that starts with none of "@", "#", "U:", "A:"
continues the previous message (joined with a newline). Tags after the route key
(e.g. "shift" = the topic changes during the dialogue) are not exported.
"""

import json
import random
import re
import sys
from collections import Counter, OrderedDict
from pathlib import Path

SEED = 20261122
SPLITS = (3, 5, 7, 9)
MIN_ROWS = 200
MAX_MESSAGES = 4
# A word that mixes Cyrillic and Latin letters is almost always a homoglyph typo.
MIXED_SCRIPT = re.compile(r"\w*(?:[А-Яа-яЁё][A-Za-z]|[A-Za-z][А-Яа-яЁё])\w*")
HERE = Path(__file__).resolve().parent
SOURCE_DIR = HERE / "source"


class SourceError(Exception):
    pass


def parse_file(path):
    org = None
    routes = OrderedDict()  # key -> {"description": str, "near": [keys]}
    dialogues = []
    current = None
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{lineno}"
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.startswith("@"):
            directive, _, rest = line.partition(" ")
            rest = rest.strip()
            if directive == "@org":
                org = {"key": rest, "name": None, "domain": None, "file": path.name}
            elif directive in ("@name", "@domain"):
                org[directive[1:]] = rest
            elif directive == "@route":
                parts = [p.strip() for p in rest.split("|")]
                if len(parts) != 3:
                    raise SourceError(f"{where}: @route needs 'key | description | near keys'")
                key, description, near = parts
                if key in routes:
                    raise SourceError(f"{where}: duplicate route key {key!r}")
                routes[key] = {"description": description, "near": near.split()}
            else:
                raise SourceError(f"{where}: unknown directive {directive}")
        elif line.startswith("#"):
            fields = line[1:].split()
            if not fields:
                raise SourceError(f"{where}: '#' needs a route key")
            current = {"route": fields[0], "tags": fields[1:], "messages": [], "where": where}
            dialogues.append(current)
        elif line.startswith("U:") or line.startswith("A:"):
            if current is None:
                raise SourceError(f"{where}: message outside a dialogue")
            role = "user" if line[0] == "U" else "assistant"
            current["messages"].append({"role": role, "content": line[2:].strip()})
        else:
            if current is None or not current["messages"]:
                raise SourceError(f"{where}: stray text line")
            current["messages"][-1]["content"] += "\n" + line.strip()
    if org is None:
        raise SourceError(f"{path.name}: missing @org")
    org["routes"] = routes
    org["dialogues"] = dialogues
    return org


def validate_org(org):
    routes = org["routes"]
    name = org["file"]
    if len(routes) < max(SPLITS):
        raise SourceError(f"{name}: catalog has {len(routes)} routes, need >= {max(SPLITS)}")
    descriptions = [r["description"] for r in routes.values()]
    if len(set(descriptions)) != len(descriptions):
        raise SourceError(f"{name}: duplicate route descriptions")
    for key, route in routes.items():
        if not route["description"]:
            raise SourceError(f"{name}: empty description for {key}")
        for near in route["near"]:
            if near not in routes or near == key:
                raise SourceError(f"{name}: route {key} has bad near-miss {near!r}")
    for d in org["dialogues"]:
        if d["route"] not in routes:
            raise SourceError(f"{d['where']}: unknown route {d['route']!r}")
        check_messages(d["messages"], d["where"])


def check_messages(messages, where):
    assert 1 <= len(messages) <= MAX_MESSAGES, f"{where}: {len(messages)} messages"
    for i, m in enumerate(messages):
        expected = "user" if i % 2 == 0 else "assistant"
        assert m["role"] == expected, f"{where}: message {i} should be {expected}"
        assert m["content"].strip(), f"{where}: empty message {i}"
        mixed = MIXED_SCRIPT.search(m["content"])
        assert not mixed, f"{where}: Latin/Cyrillic look-alike letters mixed in {mixed.group(0)!r}"
    assert messages[-1]["role"] == "user", f"{where}: last message must be the user's"


def near_misses(routes, correct):
    """Routes the catalog marks as confusable with `correct`, in both directions."""
    keys = list(routes[correct]["near"])
    for key, route in routes.items():
        if correct in route["near"] and key not in keys:
            keys.append(key)
    return [k for k in keys if k != correct]


def build_split(n, items):
    rng = random.Random(SEED * 100 + n)
    # Balanced answer positions: every position 1..n is used equally often
    # (up to rounding), in a shuffled order.
    positions = [(i % n) + 1 for i in range(len(items))]
    rng.shuffle(positions)
    rows = []
    for (org, dialogue), answer_id in zip(items, positions):
        routes = org["routes"]
        correct = dialogue["route"]
        near = near_misses(routes, correct)
        rng.shuffle(near)
        n_near = min(len(near), max(1, (n - 1) // 2))
        chosen = near[:n_near]
        rest = [k for k in routes if k != correct and k not in chosen]
        rng.shuffle(rest)
        distractors = chosen + rest[: n - 1 - len(chosen)]
        rng.shuffle(distractors)
        ordered = distractors[: answer_id - 1] + [correct] + distractors[answer_id - 1 :]
        row = OrderedDict()
        row["messages"] = [{"role": m["role"], "content": m["content"]} for m in dialogue["messages"]]
        row["routes"] = [
            {"route_id": i, "description": routes[k]["description"]} for i, k in enumerate(ordered, 1)
        ]
        row["answer_id"] = answer_id
        rows.append(row)
    return rows


def self_check(n, rows):
    assert len(rows) >= MIN_ROWS, f"routes_{n}: only {len(rows)} rows (< {MIN_ROWS})"
    for i, row in enumerate(rows):
        where = f"routes_{n} row {i}"
        assert list(row.keys()) == ["messages", "routes", "answer_id"], where
        ids = [r["route_id"] for r in row["routes"]]
        assert ids == list(range(1, n + 1)), f"{where}: route ids {ids}"
        descriptions = [r["description"] for r in row["routes"]]
        assert len(set(descriptions)) == n, f"{where}: duplicate descriptions"
        assert isinstance(row["answer_id"], int) and 1 <= row["answer_id"] <= n, where
        check_messages(row["messages"], where)
        for m in row["messages"]:
            assert list(m.keys()) == ["role", "content"], where


def serialize(rows):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv):
    if not __debug__:
        sys.exit("build.py relies on assert statements; run it without -O")
    check_only = "--check" in argv
    files = sorted(SOURCE_DIR.glob("*.txt"))
    orgs = [parse_file(p) for p in files]
    keys = [o["key"] for o in orgs]
    assert len(set(keys)) == len(keys), "duplicate @org keys"
    for org in orgs:
        validate_org(org)

    items = [(org, d) for org in orgs for d in org["dialogues"]]
    texts = [json.dumps(d["messages"], ensure_ascii=False) for _, d in items]
    dupes = [t for t, c in Counter(texts).items() if c > 1]
    assert not dupes, f"duplicate dialogues: {dupes[:3]}"
    # One shared, shuffled row order: row i is the same dialogue in every split.
    random.Random(SEED).shuffle(items)

    print(f"organizations: {len(orgs)}, dialogues: {len(items)}")
    for org in orgs:
        used = Counter(d["route"] for d in org["dialogues"])
        print(f"  {org['key']:<12} {len(org['dialogues']):>3} dialogues, "
              f"{len(org['routes'])} routes ({len(used)} used as answers)  {org['name']}")
    lengths = Counter(len(d["messages"]) for _, d in items)
    print("messages per dialogue:", dict(sorted(lengths.items())))
    tags = Counter(t for _, d in items for t in d["tags"])
    print("tags:", dict(sorted(tags.items())))

    failed = False
    for n in SPLITS:
        rows = build_split(n, items)
        self_check(n, rows)
        text = serialize(rows)
        out = HERE / f"routes_{n}.jsonl"
        dist = Counter(r["answer_id"] for r in rows)
        print(f"routes_{n}.jsonl: {len(rows)} rows; answer_id distribution: "
              + ", ".join(f"{k}:{dist[k]}" for k in range(1, n + 1)))
        if check_only:
            current = out.read_text(encoding="utf-8") if out.exists() else None
            if current != text:
                print(f"  MISMATCH: {out.name} differs from a fresh build", file=sys.stderr)
                failed = True
        else:
            out.write_bytes(text.encode("utf-8"))
    if failed:
        sys.exit(1)
    print("self-check passed" + (" (files on disk are up to date)" if check_only else ""))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SourceError as exc:
        sys.exit(f"source error: {exc}")
