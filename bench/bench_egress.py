"""What the egress door adds to a request: a 100k-token request with 20 restricted variables.

The request: a system prompt and 60 tool results of printed tables (numbers, words, ids,
dates, emails; 400,000 characters in all, about 100k tokens at 4 characters a token), a few of
them holding values of the restricted frames. The kernel holds 20 restricted DataFrames of
1,000 rows each (an email, an id, an amount, a date and a category column), indexed once
before the rounds (that cost is printed too: it is paid when a variable first becomes
restricted or changes, in the background, not per request).

Per round: the floor builds the Anthropic request body (`request_messages`) and serialises it
with orjson, as every request does; the subject passes the same messages through
`EgressDoor.pass_request` with the same build (the filter, the markers, the measuring, the
ledger line kept in memory) on a door that forgot every message and search
(`EgressDoor.forget`: the first request that carries all of this, as in a new process);
`next request` is the following request of the turn, one tool result longer, through the same
door (its earlier messages went as they went before); `after a rule change` is a request after
`/egress` changed a restricted variable's policy (every block decided again, the searches of
its texts kept); `a turn's first request` is the next request after a new turn began (what
each restricted frame holds looked at again, through the kernel's fingerprints, which the
turn's first `python` call would take anyway); `after a variable changed` is a request after a
cell made one of the 20 frames anew (its values are indexed again in the background,
`egress/builder.py`: the request withholds the untagged texts meanwhile and does not wait). Target: the door adds at most 5 ms to the fresh request. The search of a
fresh request's texts is shared by two cores where there are two (`egress/values.py`
`SHARED_FROM`).

    .venv/bin/python bench/bench_egress.py 9
    .venv/bin/python bench/bench_egress.py --first 3   # issue 51: 20 frames of 10,000 rows
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson
import pandas as pd
from paired import alternate, banner, span

from larik_jupyter.egress.door import EgressDoor, TurnMark
from larik_jupyter.egress.policy import Policy, PolicySet
from larik_jupyter.llm.anthropic_provider import request_messages
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.provider import Destination
from larik_jupyter.tools.fingerprint_cache import FingerprintCache
from larik_jupyter.tools.kernel import content_key

TARGET_CHARS = 400_000
RESULTS = 60
VARIABLES = 20
ROWS = 1_000
LARGE_ROWS = 10_000  # `--first`: issue 51's 20 frames of 10,000 rows


def _frames(rng: random.Random, rows: int = ROWS) -> dict[str, pd.DataFrame]:
    frames = {}
    for v in range(VARIABLES):
        frames[f"customers_{v}"] = pd.DataFrame(
            {
                "email": [f"user{v}_{i}.{rng.randrange(10**6)}@example.com" for i in range(rows)],
                "id": [f"C{v:02d}{i:06d}" for i in range(rows)],
                "amount": [round(rng.uniform(1000, 99999), 2) for _ in range(rows)],
                "joined": pd.date_range("2020-01-01", periods=rows, freq="D"),
                "segment": [rng.choice(["retail", "smb", "enterprise"]) for _ in range(rows)],
            }
        )
    return frames


def _output(rng: random.Random, chars: int, frames: dict[str, pd.DataFrame], leak: bool) -> str:
    lines = []
    size = 0
    while size < chars:
        line = (
            f"{rng.randrange(10**5):>6}  {rng.uniform(0, 10**4):>12.4f}  run_{rng.randrange(10**4)}  "
            f"step {rng.randrange(100)} loss={rng.random():.6f} at 2026-0{rng.randrange(1, 9)}-1{rng.randrange(9)}"
        )
        lines.append(line)
        size += len(line) + 1
    if leak:
        frame = frames[rng.choice(list(frames))]
        row = frame.iloc[rng.randrange(ROWS)]
        lines.insert(len(lines) // 2, f"{row['email']}  {row['amount']}  {row['id']}")
    return "\n".join(lines)


def _messages(rng: random.Random, frames: dict[str, pd.DataFrame], results: int) -> list[Message]:
    messages = [Message(role="user", content=[TextBlock(text="Summarise the training runs.")])]
    per = TARGET_CHARS // RESULTS
    for n in range(results):
        call = f"toolu_{n:04d}"
        messages.append(Message(role="assistant", content=[ToolUseBlock(id=call, name="bash", input={"command": f"cat log{n}.txt"})]))
        text = _output(rng, per, frames, leak=n % 10 == 3)
        messages.append(Message(role="user", content=[ToolResultBlock(tool_use_id=call, content=text)]))
    return messages


def _build(system: str, messages: list[Message]) -> dict[str, object]:
    return {"model": "claude-sonnet-4-6", "system": system, "messages": request_messages(messages)}


def main() -> None:
    banner()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    rng = random.Random(41)
    frames = _frames(rng)
    policies = PolicySet()
    for name in frames:
        policies.set(name, Policy("schema"), "bench")
    system = "You are Larik. " * 500
    messages = _messages(rng, frames, RESULTS)
    longer = messages + _messages(rng, frames, 1)[1:]
    destination = Destination("anthropic:claude-sonnet-4-6", "https://api.anthropic.com")
    # What a frame holds is looked at once a turn, through the kernel's fingerprints, as the
    # agent's door does (`agent/loop.py`).
    prints = FingerprintCache()
    turns = [0]  # the running turn's number, as the agent's loop says it (`AgentLoop.turn_mark`)
    door = EgressDoor(
        policies, Path("."), None, lambda: frames.items(), lambda name, value: content_key(prints, name, value),
        lambda: TurnMark(turns[0] or None, None),
    )
    start = time.perf_counter()
    door.refresh()  # the index is built in the background (`egress/builder.py`), compiled there
    if not door.values.settle(600):
        sys.exit("the index was not built within 600 s")
    door.refresh()  # and taken
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    door.index.find("")
    compiled = time.perf_counter() - start
    chars = sum(len(b.content) for m in messages for b in m.content if isinstance(b, ToolResultBlock))
    print(f"request: {chars:,} characters of tool results (~{chars // 4:,} tokens), {len(messages)} messages")
    print(f"index of {VARIABLES} frames x {ROWS} rows: {len(door.index):,} keys, built in {indexed * 1000:.0f} ms, its search compiled in {compiled * 1000:.0f} ms (once)")

    def floor() -> float:
        start = time.perf_counter()
        orjson.dumps(_build(system, messages))
        return time.perf_counter() - start

    def timed(sent: list[Message]) -> float:
        start = time.perf_counter()
        body = door.pass_request(destination, system, sent, _build)
        orjson.dumps(body)
        return time.perf_counter() - start

    def fresh() -> float:
        door.forget()
        return timed(messages)

    def after(change: Callable[[], object], sent: list[Message]) -> float:
        """`sent` through the door after the request of `messages` and then `change`."""
        door.forget()
        door.pass_request(destination, system, messages, _build)
        door.values.settle(600)  # no build of an earlier round runs beside this one
        change()
        return timed(sent)

    policy = iter([Policy("stats"), Policy("schema")] * (rounds + 1))

    def new_turn() -> None:
        turns[0] += 1  # the person may have run cells since
        prints.clear()

    def changed_frame() -> None:
        frames["customers_0"] = frames["customers_0"].copy()  # a cell made it anew

    def rule_change() -> float:
        return after(lambda: door.set_policy("customers_0", next(policy)), messages)

    def following() -> float:
        return after(lambda: None, longer)

    def turn_start() -> float:
        return after(new_turn, longer)

    def variable_change() -> float:
        return after(changed_frame, messages)

    results = alternate(
        {"floor": floor, "door": fresh, "next": following, "rule": rule_change, "turn": turn_start}, rounds
    )
    # Last: after a change the changed frame's values are searched apart from the others' (a
    # second pass) until the changed values pass a quarter of all and the search is compiled whole.
    results |= alternate({"floor after": floor, "variable": variable_change}, rounds)
    added = [d - f for d, f in zip(results["door"], results["floor"], strict=True)]
    added_next = [d - f for d, f in zip(results["next"], results["floor"], strict=True)]
    added_rule = [d - f for d, f in zip(results["rule"], results["floor"], strict=True)]
    added_turn = [d - f for d, f in zip(results["turn"], results["floor"], strict=True)]
    added_variable = [d - f for d, f in zip(results["variable"], results["floor after"], strict=True)]
    record = door.records[-1]
    withheld = sum(w.count for w in record.withheld)
    print(f"withheld in the request: {withheld} values")
    print(f"floor (build + serialise): {span(results['floor'], 1000, 2, ' ms')}")
    print(f"through the door, fresh:   {span(results['door'], 1000, 2, ' ms')}; added {span(added, 1000, 2, ' ms')} (target <= 5 ms)")
    print(f"the next request:          {span(results['next'], 1000, 2, ' ms')}; added {span(added_next, 1000, 2, ' ms')}")
    print(f"after a rule change:       {span(results['rule'], 1000, 2, ' ms')}; added {span(added_rule, 1000, 2, ' ms')}")
    print(f"a turn's first request:    {span(results['turn'], 1000, 2, ' ms')}; added {span(added_turn, 1000, 2, ' ms')}")
    print(f"after a variable changed:  {span(results['variable'], 1000, 1, ' ms')}; added {span(added_variable, 1000, 1, ' ms')}")


def first_request(rounds: int) -> None:
    """Issue 51's target: 20 frames of `LARGE_ROWS` rows in the kernel, each made restricted
    with `/egress NAME schema` (`EgressDoor.set_policy`) on a new door, then the first request
    of the session (the same 60 results): how long the 20 rules take, and what the first
    request adds to the floor (build + serialise). Target: the rules within 1 s, the first
    request adds at most 0.5 s."""
    rng = random.Random(51)
    frames = _frames(rng, LARGE_ROWS)
    messages = _messages(rng, frames, RESULTS)
    destination = Destination("anthropic:claude-sonnet-4-6", "https://api.anthropic.com")
    rules, added, unfinished, built = [], [], [], []
    for _ in range(rounds):
        door = EgressDoor(PolicySet(), Path("."), None, lambda: frames.items(), partial(content_key, FingerprintCache()))
        start = time.perf_counter()
        for name in frames:
            door.set_policy(name, Policy("schema"))
        rules.append(time.perf_counter() - start)
        start = time.perf_counter()
        orjson.dumps(_build("You are Larik.", messages))
        floor = time.perf_counter() - start
        start = time.perf_counter()
        orjson.dumps(door.pass_request(destination, "You are Larik.", messages, _build))
        added.append(time.perf_counter() - start - floor)
        unfinished.append(len(door.values.unfinished))
        door.values.settle(600)  # the next round starts with this one's build done
        built.append(time.perf_counter() - start)
    print(f"{VARIABLES} frames x {LARGE_ROWS} rows made restricted: {span(rules, 1000, 1, ' ms')} (target <= 1000 ms)")
    print(f"the session's first request adds: {span(added, 1000, 0, ' ms')} (target <= 500 ms); "
          f"sources still being indexed when it left: {unfinished}")
    print(f"the index built in the background, from the first request on: {span(built, 1, 1, ' s')}")


if __name__ == "__main__":
    if "--first" in sys.argv:
        banner()
        first_request(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 3)
    else:
        main()
