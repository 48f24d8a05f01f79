"""No state needs `/clear` (issue 38): random sessions against the strict wire fakes.

Hypothesis drives `Agent` through random sequences of prompts whose replies call tools, return
images, think, are refused, stop at the output limit, are cut mid-stream or stopped by the user
(at a random point of the stream or during a tool), a process killed with SIGKILL mid-turn and
the session re-opened from its file, `/model` switches across Anthropic (thinking on), OpenAI
and a compatible server that reports no usage (Kimi-style tool-call ids, a small window),
`/compact` and `/rewind`. Every request must be one the APIs accept (`api_rules`), and after the
sequence every model must still answer a prompt: no dead end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.testing.anthropic_rules import anthropic_problem, anthropic_too_long
from larik_jupyter.testing.openai_rules import openai_problem, openai_too_long
from tests.agent_helpers import personal, text, tool
from tests.process_helpers import wait_until
from tests.test_dead_ends import KEY, noise_png

MODELS = ["anthropic:claude-sonnet-4-5", "openai:gpt-5", "openai-compatible:local"]
WINDOW = 24_000  # the compatible server's, and the model table's override for it
SIGNED = {"type": "thinking", "thinking": "Think first.", "signature": "Sig+1=="}
# The kinds of prompt, the rarer dead ends drawn more often.
PROMPTS = [
    "text", "read", "image", "cut_write", "refusal", "stop_stream", "drop", "big",
    "stop_tool", "stop_tool", "after_thinking", "after_thinking",
]

actions = st.lists(
    st.one_of(
        st.tuples(st.just("prompt"), st.sampled_from(PROMPTS), st.integers(1, 8)),
        st.tuples(st.just("model"), st.sampled_from(MODELS), st.just(0)),
        st.tuples(st.just("compact"), st.just(""), st.just(0)),
        st.tuples(st.just("rewind"), st.just(""), st.integers(0, 5)),
        st.tuples(st.just("kill"), st.just(""), st.just(0)),
    ),
    min_size=3,
    max_size=12,
)


class Planner:
    """The servers' responder: a summary for a compaction request, else the next planned
    reply (thinking first where the request has thinking on; Kimi-style ids from the
    compatible server), else a short answer."""

    def __init__(self) -> None:
        self.queue: deque[dict[str, Any]] = deque()
        self.calls = 0

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        last = json.dumps((request.get("messages") or [{}])[-1])
        reply = (
            {"content": [text("SUMMARY: the work so far.")]}
            if "Summarise the conversation" in last
            else self.queue.popleft() if self.queue else {"content": [text("ok")]}
        )
        content = list(reply["content"])
        if isinstance(request.get("thinking"), dict):
            content = [SIGNED, *content]
        if request.get("model") == "local":
            content = [
                {**b, "id": f"functions.{b['name']}:{self.calls}"} if b["type"] == "tool_use" else b
                for b in content
            ]
        return {**reply, "content": content}


def plan(kind: str, n: int) -> list[dict[str, Any]]:
    """The replies a prompt of `kind` gets."""
    return {
        "text": [{"content": [text("Answered.")]}],
        "read": [{"content": [tool("read", path="a.txt")]}, {"content": [text("Read it.")]}],
        "image": [{"content": [tool("notebook_read", path="figs.ipynb")]}, {"content": [text("Seen.")]}],
        "cut_write": [
            {"content": [tool("write", path="w.txt", content="w" * 300)], "stop_reason": "max_tokens"},
            {"content": [text("Will write in parts.")]},
        ],
        "refusal": [{"content": [text("I can't")], "stop_reason": "refusal"}],
        "stop_stream": [{"content": [text("A slow answer " * 6)], "delay": 0.02}],
        "stop_tool": [{"content": [tool("bash", command="sleep 5")]}],
        "drop": [{"content": [text("Cut " * 10), tool("read", path="a.txt")], "drop_after": n}],
        # Cut right after the thinking ("Think first." in two deltas, then its signature).
        "after_thinking": [{"content": [text("An answer never seen.")], "drop_after": 3}],
        "big": [{"content": [text("Noted.")]}],
    }[kind]


class Stopper:
    """A listener pressing Stop when a `stop_tool` prompt's tool starts, or at the `at`-th
    text delta of a `stop_stream` prompt's reply."""

    def __init__(self, agent: Agent, kind: str, at: int) -> None:
        self.agent, self.kind, self.at, self.deltas = agent, kind, at, 0

    def __call__(self, event: ae.AgentEvent) -> None:
        if self.kind == "stop_tool" and isinstance(event, ae.ToolStarted):
            self.agent.stop()
        if self.kind == "stop_stream" and isinstance(event, ae.TextDelta):
            self.deltas += 1
            if self.deltas == self.at:
                self.agent.stop()


def check_all(servers: list[tuple[ScriptedHTTPServer, int | None]], seen: dict[int, int]) -> None:
    """Every request not checked yet is one the APIs accept."""
    for server, window in servers:
        requests = server.requests
        for r in requests[seen.get(id(server), 0) :]:
            if r.path == "/v1/messages":
                problem = anthropic_problem(r.body) or anthropic_too_long(r.body, window)
            else:
                problem = openai_problem(r.body) or openai_too_long(r.body, window)
            assert problem is None, (problem, json.dumps(r.body)[:3000])
        seen[id(server)] = len(requests)


def killed_mid_turn(project: Path, session: str, model: str, server: ScriptedHTTPServer, planner: Planner) -> None:
    """Resume `session` in another process, start a turn there and SIGKILL it mid-stream."""
    planner.queue.append({"content": [text("A reply the crash cuts " * 8)], "delay": 0.05})
    before = len(server.requests)
    code = (
        "import sys\nfrom larik_jupyter import Agent\n"
        "Agent(sys.argv[1], model=sys.argv[2], yes=True, session=sys.argv[3]).run('crash here')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(project), model, session])
    try:
        # Killed once its turn has asked the model (the reply streams at once: the server plays no delay).
        wait_until(lambda: len(server.requests) > before or proc.poll() is not None, "the resumed turn to ask the model")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    planner.queue.clear()


def run_actions(
    steps: list[tuple[str, str, int]],
    servers: list[tuple[ScriptedHTTPServer, int | None]],
    planner: Planner,
) -> None:
    project = Path(tempfile.mkdtemp(prefix="dead-ends-"))
    (project / ".git").mkdir()
    (project / "a.txt").write_text("alpha\n")
    nb = nbformat.v4.new_notebook()
    for i in range(3):
        cell = nbformat.v4.new_code_cell(f"plot({i})")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": noise_png(i, 12)})]
        nb.cells.append(cell)
    nbformat.write(nb, project / "figs.ipynb")
    planner.queue.clear()
    seen: dict[int, int] = {}
    check_all(servers, seen)
    model = MODELS[0]
    agent = Agent(project, model=model, yes=True)
    killed = False
    try:
        for action, arg, n in steps:
            if action == "model":
                model = arg
                agent.switch_model(model)
            elif action == "compact":
                if len(agent.loop.context) > 1:
                    agent.compact()
            elif action == "rewind":
                prompts = len(agent.loop.session.state.prompt_positions)
                if prompts:
                    agent.rewind(1 + n % prompts)
            elif action == "kill" and not killed:
                killed = True
                session = agent.session_id
                agent.close()
                server = servers[0][0] if not model.startswith("openai-compatible") else servers[1][0]
                killed_mid_turn(project, session, model, server, planner)
                agent = Agent(project, model=model, yes=True, session=session)
                # The killed process had stored its prompt before its model call.
                assert "crash here" in [m.prompt_text() for m in agent.loop.session.state.all]
            elif action == "prompt":
                planner.queue.extend(plan(arg, n))
                prompt = f"do {arg}" + (": " + "paste " * 3000 if arg == "big" else "")
                outcome = agent.run(prompt, listener=Stopper(agent, arg, n))
                planner.queue.clear()
                refused = outcome.status == "error" and "refusal" in (outcome.error or "")
                assert outcome.status in ("done", "interrupted") or refused, (arg, model, outcome.error)
            check_all(servers, seen)
        # No dead end: every model answers the next prompt.
        for final in MODELS:
            agent.switch_model(final)
            outcome = agent.run("still there?")
            assert outcome.status == "done", (final, outcome.error)
        check_all(servers, seen)
    finally:
        agent.close()


@pytest.mark.timeout(300)
def test_no_state_needs_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    planner = Planner()
    main = ScriptedHTTPServer(planner, api_key=KEY, fragment=8)
    compatible = ScriptedHTTPServer(planner, api_key=KEY, fragment=8, context_window=WINDOW, send_usage=False)
    with main, compatible:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", main.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", main.openai_base_url)
        personal({
            "providers": {
                "anthropic": {"thinking_budget": 2048},
                "openai-compatible": {"base_url": compatible.openai_base_url, "api_key_env": "OPENAI_API_KEY"},
            },
            "models": {"local": {"context_window": WINDOW}},
        })
        servers: list[tuple[ScriptedHTTPServer, int | None]] = [(main, None), (compatible, WINDOW)]

        @settings(
            max_examples=int(os.environ.get("LARIK_DEAD_ENDS_EXAMPLES", "8")),
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(actions)
        def run(steps: list[tuple[str, str, int]]) -> None:
            run_actions(steps, servers, planner)

        run()
