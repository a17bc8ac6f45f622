"""Writes a harness journal of the parity spec as compare.py reads it: one
line per item, {"id", "loglikelihoods", "acc", "acc_norm"}, from each
record's `choice` (its pick by log-likelihood, and per character).

Usage: python3 harness_output.py JOURNAL.jsonl OUT.jsonl
"""

import json
import sys


def main():
    journal, out = sys.argv[1], sys.argv[2]
    lines = []
    with open(journal, encoding="utf-8") as f:
        for text in f:
            record = json.loads(text)
            choice = record.get("choice")
            if choice is None:
                sys.exit("record %s has no choice: %s" % (record["instance_id"], record.get("error")))
            correct = choice["correct"]
            lines.append({
                "id": record["vars"]["id"],
                "loglikelihoods": choice["loglikelihoods"],
                "acc": int(choice.get("picked") == correct),
                "acc_norm": int(choice.get("picked_norm") == correct),
            })
    lines.sort(key=lambda line: line["id"])
    with open(out, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
