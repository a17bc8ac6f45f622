"""A scripted retail agent for the harness's `exec` provider.

It plays one τ²-bench retail task from the instance's variables: it calls
the task's gold actions, all in its first turn, then tells the user each
string of `communicate_info`. Variants make the comparison with τ²'s evaluator cover
failures too:

- `gold`: the gold actions, then the information (passes);
- `wrong`: `gold` plus a change of the user's default address to one no
  task asks for (the database differs: fails);
- `silent`: the gold actions, then a reply without the information (passes
  the DB check; the communicate check fails where the task has
  `communicate_info`);
- `stray`: first a turn of three calls that fail (an unknown order, a tool
  that does not exist, a write without its arguments), then `gold` (passes:
  a failed call changes nothing);
- `endless`: the gold actions, then reads the user's details every turn and
  never replies, until the episode runs out of turns (fails: it never
  ended).

stdin is the harness's request (docs/models.md, exec); stdout its answer.
"""

import json
import sys

VARIANTS = ("gold", "wrong", "silent", "stray", "endless")
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
    """The agent's turns with calls, in order: each a list of calls.

    The gold actions go in one turn, in their order (the harness runs a
    turn's calls one after another), so an episode needs few turns.
    """
    gold = gold_actions(variables)
    user_id = (variables.get("users") or ["unknown_user"])[0]
    if variant == "wrong":
        # After the gold actions, so none of them undoes it, but before a
        # hand-over to a human, which ends the episode.
        at = len(gold) - 1 if gold and gold[-1][0] == "transfer_to_human_agents" else len(gold)
        gold.insert(at, ("modify_user_address", dict(WRONG_ADDRESS, user_id=user_id)))
    turns = [gold] if gold else []
    if variant == "stray":
        stray = [
            ("get_order_details", {"order_id": "#W0000000"}),
            ("refund_everything", {"user_id": user_id}),
            ("cancel_pending_order", {}),
        ]
        turns.insert(0, stray)
    if variant == "endless":
        # More turns than any episode has: it never gets to reply.
        turns += [[("get_user_details", {"user_id": user_id})]] * 64
    return turns


def answer(request, variant):
    """The next turn, given the conversation so far."""
    variables = request.get("vars") or {}
    turns = plan(variables, variant)
    made = sum(1 for m in request["messages"] if m.get("role") == "assistant" and m.get("tool_calls"))
    if made < len(turns):
        calls = [
            {"id": "call_%d_%d" % (made, j), "name": name, "arguments": arguments}
            for j, (name, arguments) in enumerate(turns[made])
        ]
        return {"text": "", "tool_calls": calls}
    info = variables.get("communicate_info") or []
    if variant == "silent" or not info:
        return {"text": "Your request has been handled."}
    return {"text": "Your request has been handled. For your records: %s." % "; ".join(info)}


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else "gold"
    if variant not in VARIANTS:
        sys.exit("agent.py: unknown variant %r (%s)" % (variant, ", ".join(VARIANTS)))
    request = json.loads(sys.stdin.read())
    json.dump(answer(request, variant), sys.stdout)


if __name__ == "__main__":
    main()
