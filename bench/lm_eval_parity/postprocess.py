"""Turns one lm-eval run of the parity task into the rig's committed output.

Reads lm-eval's --log_samples file and results file (in --out-dir) and the
shim's capture of every tokenization and completion request, and writes:
  lm_eval_output.jsonl  per item, in the items' order: id, loglikelihoods
                        (lm-eval's floats, full precision), is_greedy, acc,
                        acc_norm (0 or 1)
  summary.json          lm-eval's aggregate acc/acc_norm, versions, timing,
                        request count, and checks of the server's answers
  request_example.json  the first completion request and its answer

`offsets_method_vs_lm_eval` in the summary recomputes every log-likelihood
from the captured answers the way the harness finds the continuation (by
text_offset, not by token count) and acc/acc_norm from those sums, and says
how far they are from lm-eval's.

The checks recompute, for every completion request, where lm-eval's
continuation starts (its context token count, from the captured
tokenizations) and where the server's text_offset says it starts, and count
echoed answers whose logprobs stop at the prompt's last token (no entry for
the generated token, so lm-eval's `[ctxlen:-1]` drops a continuation token)
or run two or more entries past it (so it keeps a generated token).
"""

import argparse
import json
import sys
from pathlib import Path

TASK = "harness_choices_parity"


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def only(paths, what):
    paths = sorted(paths)
    if len(paths) != 1:
        raise SystemExit(f"expected one {what}, found {len(paths)}: {paths}")
    return paths[0]


def per_item(sample):
    """The compact line of one lm-eval sample."""
    resps = sample["filtered_resps"]
    # lm-eval logs each (log-likelihood, is_greedy) pair as strings: the
    # float's repr, so float() gives back the exact value.
    lls = [float(ll) for ll, _ in resps]
    greedy = [{"True": True, "False": False}[g] for _, g in resps]
    return {
        "id": sample["doc"]["id"],
        "loglikelihoods": lls,
        "is_greedy": greedy,
        "acc": int(sample["acc"]),
        "acc_norm": int(sample["acc_norm"]),
    }


def check_requests(capture, items, prefix):
    """Counts what the echoed answers say about lm-eval's token arithmetic."""
    tokens_of = {c["request"]["prompt"]: c["response"]["tokens"] for c in capture if c["endpoint"] == "tokenize"}
    context_of = {}
    for item in items:
        for choice in item["choices"]:
            context_of[item["question"] + " " + choice] = item["question"]
    completions = [c for c in capture if c["endpoint"] == "completions"]
    counts = {
        "completion_requests": len(completions),
        "tokenize_requests": len(capture) - len(completions),
        "non_200_answers": 0,
        "prompts_not_context_space_choice": 0,
        "prompt_token_count_mismatches": 0,
        "continuation_start_mismatches": 0,
        "generated_token_missing_from_logprobs": 0,
        "generated_tokens_kept_by_lm_eval": 0,
    }
    for c in completions:
        if c["status"] != 200:
            counts["non_200_answers"] += 1
            continue
        sent = c["request"]["prompt"]
        context = context_of.get(sent[len(prefix) :]) if sent.startswith(prefix) else None
        if context is None:
            counts["prompts_not_context_space_choice"] += 1
            continue
        logprobs = c["response"]["choices"][0]["logprobs"]
        offsets = logprobs["text_offset"]
        # The server leaves a leading BOS out of the echo and its offsets;
        # any other prefix stays in both.
        echoed = sent if "".join(logprobs["tokens"]).startswith(prefix) else sent[len(prefix) :]
        shift = len(echoed) - len(sent) + len(prefix)
        in_prompt = sum(1 for o in offsets if o < len(echoed))
        # lm-eval's own count of the prompt's tokens: context + continuation.
        if in_prompt != len(tokens_of[sent[len(prefix) :]]):
            counts["prompt_token_count_mismatches"] += 1
        # lm-eval's ctxlen must index the first token of " " + choice.
        ctxlen = len(tokens_of[context])
        if ctxlen >= len(offsets) or offsets[ctxlen] != shift + len(context):
            counts["continuation_start_mismatches"] += 1
        # lm-eval drops the last entry as the one generated token. The server
        # may give none, or (generating past max_tokens to finish a UTF-8
        # character) more than one, and then lm-eval keeps all but the last.
        generated = len(offsets) - in_prompt
        if generated == 0:
            counts["generated_token_missing_from_logprobs"] += 1
        elif generated > 1:
            counts["generated_tokens_kept_by_lm_eval"] += 1
    return counts


def by_offsets(capture, items, prefix):
    """Every item's log-likelihoods found the way the harness finds them.

    The continuation is the echoed entries whose text_offset is at or after
    the end of the context; the last entry is dropped as lm-eval drops it.
    Returns {id: [sum per choice]}, None for a choice with no answer.
    """
    echo = {}
    for c in capture:
        if c["endpoint"] == "completions" and c["status"] == 200 and c["request"]["prompt"].startswith(prefix):
            echo[c["request"]["prompt"][len(prefix) :]] = c["response"]["choices"][0]["logprobs"]
    found = {}
    for item in items:
        sums = []
        for choice in item["choices"]:
            logprobs = echo.get(item["question"] + " " + choice)
            if logprobs is None:
                sums.append(None)
                continue
            shift = len(prefix) if "".join(logprobs["tokens"]).startswith(prefix) else 0
            start = shift + len(item["question"])
            pairs = list(zip(logprobs["text_offset"], logprobs["token_logprobs"]))[:-1]
            sums.append(sum(lp for offset, lp in pairs if offset >= start))
        found[item["id"]] = sums
    return found


def agreement(lines, items, found):
    """How far the offsets' sums, and acc/acc_norm recomputed from them as
    lm-eval defines them, are from lm-eval's own numbers."""
    worst, off, metric_mismatches = 0.0, 0, 0
    for line, item in zip(lines, items):
        sums = found[item["id"]]
        if None in sums:
            off += len(sums)
            continue
        for a, b in zip(line["loglikelihoods"], sums):
            worst = max(worst, abs(a - b))
            off += abs(a - b) > 1e-6
        # np.argmax: the first index on a tie; length in characters.
        pred = max(range(len(sums)), key=lambda i: (sums[i], -i))
        norm = [ll / len(ch) for ll, ch in zip(sums, item["choices"])]
        pred_norm = max(range(len(norm)), key=lambda i: (norm[i], -i))
        acc, acc_norm = int(pred == item["answer"]), int(pred_norm == item["answer"])
        metric_mismatches += (acc, acc_norm) != (line["acc"], line["acc_norm"])
    return {
        "max_abs_diff": worst,
        "choices_over_1e-6": off,
        "items_with_other_acc_or_acc_norm": metric_mismatches,
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", required=True)
    parser.add_argument("--out-dir", required=True, help="lm-eval's --output_path")
    parser.add_argument("--capture", required=True)
    parser.add_argument("--elapsed", type=float, required=True, help="seconds lm-eval ran")
    parser.add_argument("--server-version", required=True)
    parser.add_argument("--prompt-prefix", default="")
    parser.add_argument("--write", required=True, help="folder for the three output files")
    args = parser.parse_args(argv)

    out_dir = Path(args.out_dir)
    samples = read_jsonl(only(out_dir.glob(f"*/samples_{TASK}_*.jsonl"), "samples file"))
    with open(only(out_dir.glob("*/results_*.json"), "results file"), encoding="utf-8") as f:
        results = json.load(f)
    items = read_jsonl(args.items)
    capture = read_jsonl(args.capture)

    by_id = {s["doc"]["id"]: s for s in samples}
    if len(by_id) != len(items) or set(by_id) != {it["id"] for it in items}:
        raise SystemExit(f"lm-eval scored {len(by_id)} items, the input has {len(items)}")
    lines = [per_item(by_id[it["id"]]) for it in items]

    agg = results["results"][TASK]
    completions = [c for c in capture if c["endpoint"] == "completions"]
    summary = {
        "task": TASK,
        "items": len(items),
        "choices": sum(len(it["choices"]) for it in items),
        "lm_eval_version": results["lm_eval_version"],
        "server": args.server_version,
        "model": results["model_name"],
        "prompt_prefix": args.prompt_prefix,
        "lm_eval": {
            "acc": agg["acc,none"],
            "acc_stderr": agg["acc_stderr,none"],
            "acc_norm": agg["acc_norm,none"],
            "acc_norm_stderr": agg["acc_norm_stderr,none"],
        },
        "mean_of_output": {
            "acc": sum(x["acc"] for x in lines) / len(lines),
            "acc_norm": sum(x["acc_norm"] for x in lines) / len(lines),
        },
        "elapsed_s": args.elapsed,
        "items_per_s": round(len(items) / args.elapsed, 4),
        "requests_per_s": round(len(completions) / args.elapsed, 4),
        "checks": check_requests(capture, items, args.prompt_prefix),
        "offsets_method_vs_lm_eval": agreement(lines, items, by_offsets(capture, items, args.prompt_prefix)),
    }

    write = Path(args.write)
    with open(write / "lm_eval_output.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    with open(write / "summary.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    with open(write / "request_example.json", "w", encoding="utf-8") as f:
        example = {k: completions[0][k] for k in ("request", "status", "response")}
        f.write(json.dumps(example, ensure_ascii=False, indent=2) + "\n")
    for key in ("lm_eval", "checks", "offsets_method_vs_lm_eval"):
        print(f"{key}: {json.dumps(summary[key])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
