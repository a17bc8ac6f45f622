"""Scores the harness's recorded tau2_retail episodes with τ²-bench's own evaluator.

Each record of a golden-format directory (`<model>.jsonl` transcripts, as
`harness run --bless` writes them, or xz-compressed) becomes a τ²
`SimulationRun`: its trajectory as `AssistantMessage`s (with their
`ToolCall`s), `ToolMessage`s and `UserMessage`s, and a termination reason
read from how the episode ended. τ²'s `evaluate_simulation` then scores it
against the task of the same id from τ²'s own retail tasks.json, replaying
it in the retail environment of τ²'s registry.

Run it with the interpreter of the venv setup.sh builds (evaluate.sh does).
Writes one line per episode to --out and the totals to --summary.
"""

import argparse
import json
import lzma
import sys
from pathlib import Path

from loguru import logger

# τ² logs every replayed call and its registry at import: keep errors only.
logger.remove()
logger.add(sys.stderr, level="ERROR")

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator  # noqa: E402
from tau2.registry import registry  # noqa: E402

DOMAIN = "retail"
STOP = "###STOP###"
# τ²'s retail agent ends a conversation by handing it to a human.
TRANSFER = "transfer_to_human_agents"
# The harness's failure kinds of an episode that did not end normally.
FAILURES = {
    "max_turns": TerminationReason.MAX_STEPS,
    "max_calls": TerminationReason.MAX_STEPS,
    "too_many_calls": TerminationReason.TOO_MANY_ERRORS,
    "episode_timeout": TerminationReason.TIMEOUT,
    "user_error": TerminationReason.USER_ERROR,
}


def tool_message_error(content):
    """Whether a harness tool result is its error form, `{"error": why}`."""
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


def to_messages(trajectory):
    """The harness trajectory as τ² messages; calls and results paired by order.

    A call without an id (a provider gave none) gets one made of its turn
    and position, and so does its result, so τ²'s replay can pair them.
    """
    messages = []
    pending = []
    for turn, step in enumerate(trajectory):
        role = step["role"]
        content = step.get("content") or None
        if role == "assistant":
            calls = []
            for j, call in enumerate(step.get("tool_calls") or []):
                arguments = call.get("arguments")
                # Arguments that did not parse ran as an error in the harness;
                # no arguments fail alike in τ²'s tools.
                calls.append(
                    ToolCall(
                        id=call.get("id") or "h%d_%d" % (turn, j),
                        name=call["name"],
                        arguments=arguments if isinstance(arguments, dict) else {},
                        requestor="assistant",
                    )
                )
            pending = [c.id for c in calls]
            messages.append(AssistantMessage(role="assistant", content=content, tool_calls=calls or None))
        elif role == "tool":
            call_id = pending.pop(0) if pending else step.get("tool_call_id") or ""
            text = step.get("content") or ""
            messages.append(
                ToolMessage(
                    id=call_id,
                    role="tool",
                    content=text,
                    requestor="assistant",
                    error=tool_message_error(text),
                )
            )
        elif role == "user":
            messages.append(UserMessage(role="user", content=content))
        else:
            raise ValueError("unknown role %r in a trajectory" % role)
    return messages


def without_nulls(value):
    """A tool result with its null fields left out (τ² dumps unset fields as null)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def parsed(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_results(messages):
    """(calls, differing): every call the harness ran, run again by τ²'s own
    retail tools in order from the initial database, and how many of the
    harness's results differ from τ²'s beyond null fields (two errors count
    as equal: their wording differs)."""
    env = registry.get_env_constructor(DOMAIN)()
    results = {m.id: m for m in messages if isinstance(m, ToolMessage)}
    calls = differing = 0
    for message in messages:
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        for call in message.tool_calls:
            mine = results.get(call.id)
            if mine is None:
                # Not run by the harness (past max_calls or too_many_calls).
                continue
            calls += 1
            theirs = env.get_response(call)
            if not (theirs.error and mine.error):
                differing += without_nulls(parsed(mine.content)) != without_nulls(parsed(theirs.content))
    return calls, differing


def termination(record):
    """τ²'s termination reason for how the harness episode ended."""
    trajectory = record.get("trajectory") or []
    last = trajectory[-1] if trajectory else {}
    if last.get("role") == "user" and STOP in (last.get("content") or ""):
        return TerminationReason.USER_STOP
    turns = [s for s in trajectory if s["role"] == "assistant"]
    if turns and any(c["name"] == TRANSFER for c in turns[-1].get("tool_calls") or []):
        return TerminationReason.AGENT_STOP
    failure = record.get("failure")
    if failure in FAILURES:
        return FAILURES[failure]
    # A golden transcript keeps no failure kind, only its detail; the user's
    # missing stop names max_turns too ("did not say `###STOP###` within
    # max_turns = 4").
    detail = record.get("detail") or ""
    if "did not say" in detail:
        return TerminationReason.USER_ERROR
    for kind, reason in FAILURES.items():
        if kind in detail:
            return reason
    return TerminationReason.MAX_STEPS


def task_id_of(variables):
    """The τ² task id an instance plays."""
    for key in ("task_id", "tau2_id", "id"):
        if key in variables:
            return str(variables[key])
    raise KeyError("the instance names no τ² task (task_id, tau2_id or id): %s" % sorted(variables))


def evaluate(simulation, task, kind, strict=False):
    return evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=kind,
        solo_mode=False,
        domain=DOMAIN,
        strict_replay=strict,
    )


def score(record, task, source):
    """One output line: the harness's verdict beside τ²'s."""
    reason = termination(record)
    simulation = SimulationRun(
        id="%s/%s/%s/%s" % (source, record["model"], record["instance"], record.get("sample", 0)),
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=reason,
        messages=to_messages(record.get("trajectory") or []),
    )
    calls, differing = tool_results(simulation.messages)
    env = evaluate(simulation, task, EvaluationType.ENV)
    communicate = evaluate(simulation, task, EvaluationType.COMMUNICATE)
    # evaluate_simulation gives 0 to every check of an episode that did not
    # end by a stop; the harness's `communicated` rule looks at the replies
    # however it ended, as τ²'s CommunicateEvaluator itself does.
    said = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=simulation.messages)
    # Strict replay also compares every mutating call's recorded result with
    # what τ²'s own tool returns: the harness's tools should answer alike.
    try:
        evaluate(simulation, task, EvaluationType.ENV, strict=True)
        outputs_match = True
    except ValueError:
        outputs_match = False
    criteria = task.evaluation_criteria
    # Retail's reward basis is DB and NL_ASSERTION. A task without
    # nl_assertions scores NL_ASSERTION 1.0 with no LLM, so its official
    # reward is computed; one with them would need τ²'s LLM judge.
    judged = not (criteria and criteria.nl_assertions)
    official = evaluate(simulation, task, EvaluationType.ALL).reward if judged else None
    db = env.db_check.db_reward if env.db_check is not None else env.reward
    # The verdict on τ²'s retail basis without the LLM: the DB check (ENV's
    # reward, as retail has no env assertions). The communicate check is
    # reported beside it: retail's reward basis does not include it.
    tau2_pass = env.reward == 1.0
    harness_pass = bool(record["passed"])
    return {
        **episode_key(record, task, source),
        "termination": reason.value,
        "harness_passed": harness_pass,
        "tau2_reward_db": db if reason in (TerminationReason.USER_STOP, TerminationReason.AGENT_STOP) else 0.0,
        "tau2_reward_communicate": communicate.reward,
        "tau2_communicate_met": said.reward == 1.0,
        "tau2_passed": tau2_pass,
        "agree": harness_pass == tau2_pass,
        "tau2_reward_official": official,
        "official_basis": [b.value for b in criteria.reward_basis] if criteria else [],
        "nl_assertions": "none" if judged else "not judged (needs an LLM)",
        "replayed_outputs_match": outputs_match,
        "tool_calls": calls,
        "tool_results_differ": differing,
    }


def episode_key(record, task, source):
    """What names an episode in output.jsonl."""
    return {
        "source": source,
        "model": record["model"],
        "instance": record["instance"],
        "sample": record.get("sample", 0),
        "task_id": task.id,
    }


def refused(record, task, source, error):
    """The line of an episode τ²'s evaluator raised on: no τ² verdict, no agreement."""
    return {
        **episode_key(record, task, source),
        "harness_passed": bool(record["passed"]),
        "tau2_passed": None,
        "tau2_reward_communicate": None,
        "tau2_communicate_met": None,
        "tau2_reward_official": None,
        "agree": False,
        "replayed_outputs_match": False,
        "tool_calls": 0,
        "tool_results_differ": 0,
        "tau2_error": "%s: %s" % (type(error).__name__, error),
    }


def read_jsonl(path):
    """The lines of a .jsonl file, or of an xz-compressed one (.jsonl.xz)."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def episodes(directory, dataset):
    """(source, record, instance variables) of every transcript in a directory.

    A golden directory keeps the instances' variables in instances.jsonl,
    unless the spec keeps only their digests (tau2_retail does: each carries
    the database) or there is none (record.sh keeps none); then instance N
    is line N of the spec's dataset.
    """
    directory = Path(directory)
    listed = directory / "instances.jsonl"
    listed = read_jsonl(listed) if listed.exists() else []
    if listed and all("vars" in i for i in listed):
        instances = {i["index"]: i["vars"] for i in listed}
    else:
        instances = dict(enumerate(read_jsonl(dataset)))
    for path in sorted([*directory.glob("*.jsonl"), *directory.glob("*.jsonl.xz")]):
        if path.name == "instances.jsonl":
            continue
        for record in read_jsonl(path):
            yield str(directory), record, instances[record["instance"]]


def relative(path, root):
    """`path` relative to `root` when it is inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def summarize(rows, seconds):
    agreed = [r for r in rows if r["agree"]]
    official = [r for r in rows if r["tau2_reward_official"] is not None]
    models = {}
    for r in rows:
        m = models.setdefault(r["model"], {"episodes": 0, "harness_passed": 0, "tau2_passed": 0, "agree": 0})
        m["episodes"] += 1
        m["harness_passed"] += r["harness_passed"]
        m["tau2_passed"] += bool(r["tau2_passed"])
        m["agree"] += r["agree"]
    return {
        "episodes": len(rows),
        "tasks": len({r["task_id"] for r in rows}),
        "agree": len(agreed),
        "harness_passed": sum(r["harness_passed"] for r in rows),
        "tau2_passed": sum(bool(r["tau2_passed"]) for r in rows),
        "tau2_refused": sum("tau2_error" in r for r in rows),
        "official_reward_computed": len(official),
        "official_agree": sum((r["tau2_reward_official"] == 1.0) == r["harness_passed"] for r in official),
        "replayed_outputs_match": sum(r["replayed_outputs_match"] for r in rows),
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "tool_results_differ": sum(r["tool_results_differ"] for r in rows),
        "per_model": models,
        "disagreements": [
            {k: r[k] for k in ("source", "model", "instance", "task_id", "harness_passed", "tau2_passed")}
            for r in rows
            if not r["agree"]
        ],
        "seconds": round(seconds, 1),
    }


def main():
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", help="golden-format directories of tau2_retail episodes")
    parser.add_argument("--out", default="output.jsonl")
    parser.add_argument("--summary", default="summary.json")
    parser.add_argument("--root", default=".", help="sources are written relative to it")
    parser.add_argument(
        "--dataset",
        default="specs/tau2_retail/tasks.jsonl",
        help="the spec's dataset, relative to --root: instance N plays its line N",
    )
    args = parser.parse_args()
    started = time.monotonic()
    tasks = {t.id: t for t in registry.get_tasks_loader(DOMAIN)()}
    rows = []
    for directory in args.dirs:
        for source, record, variables in episodes(directory, Path(args.root, args.dataset)):
            task = tasks[task_id_of(variables)]
            source = relative(source, args.root)
            try:
                rows.append(score(record, task, source))
            except Exception as e:  # τ² refusing an episode is a result too
                rows.append(refused(record, task, source, e))
    with open(args.out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = summarize(rows, time.monotonic() - started)
    with open(args.summary, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(
        "tau2 parity: %d episodes on %d tasks, %d agree (harness passed %d, tau2 passed %d)"
        % (summary["episodes"], summary["tasks"], summary["agree"], summary["harness_passed"], summary["tau2_passed"])
    )
    return 0 if summary["agree"] == summary["episodes"] else 1


if __name__ == "__main__":
    sys.exit(main())
