"""A scripted retail agent for the harness's `exec` provider.

It plays one τ²-bench retail task from the instance's variables: it calls
the task's gold actions one per turn, then tells the user each string of
`communicate_info`. Variants make the comparison with τ²'s evaluator cover
failures too:

- `gold`: the gold actions, then the information (passes);
- `wrong`: `gold` plus a change of the user's default address to one no
  task asks for (the database differs: fails);
- `silent`: the gold actions, then a reply without the information (fails
  where the task has `communicate_info`).

stdin is the harness's request (docs/models.md, exec); stdout its answer.
"""

import json
import sys

WRONG_ADDRESS = {
    "address1": "1 Nowhere Lane",
    "address2": "Suite 0",
    "city": "Nowhere",
    "state": "NA",
    "country": "USA",
    "zip": "00000",
}


def gold_actions(variables):
    """The task's gold actions as (name, arguments) pairs."""
    actions = variables.get("actions") or []
    return [(a["name"], a.get("arguments") or {}) for a in actions]


def plan(variables, variant):
    """The calls the agent makes, in order."""
    calls = gold_actions(variables)
    if variant == "wrong":
        user_id = (variables.get("users") or ["unknown_user"])[0]
        # After the gold actions, so none of them undoes it, but before a
        # hand-over to a human, which ends the episode.
        at = len(calls) - 1 if calls and calls[-1][0] == "transfer_to_human_agents" else len(calls)
        calls.insert(at, ("modify_user_address", dict(WRONG_ADDRESS, user_id=user_id)))
    return calls


def answer(request, variant):
    """The next turn, given the conversation so far."""
    variables = request.get("vars") or {}
    calls = plan(variables, variant)
    made = sum(1 for m in request["messages"] if m.get("role") == "assistant" and m.get("tool_calls"))
    if made < len(calls):
        name, arguments = calls[made]
        return {"text": "", "tool_calls": [{"id": "call_%d" % made, "name": name, "arguments": arguments}]}
    info = variables.get("communicate_info") or []
    if variant == "silent" or not info:
        return {"text": "Your request has been handled."}
    return {"text": "Your request has been handled. For your records: %s." % "; ".join(info)}


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else "gold"
    if variant not in ("gold", "wrong", "silent"):
        sys.exit("agent.py: unknown variant %r (gold, wrong, silent)" % variant)
    request = json.loads(sys.stdin.read())
    json.dump(answer(request, variant), sys.stdout)


if __name__ == "__main__":
    main()
