"""Terminal IPython and `jupyter console` under a pseudo-terminal: plain text printed once,
approvals at a prompt."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from larik_jupyter.frontends.notebook.terminal import parse_answer

BIN = Path(sys.executable).parent
# Terminal IPython runs the agent in its own process; `jupyter console` (prompt_toolkit, as a
# user has it) in a kernel, which tells the console apart by its is_complete requests.
FRONT_ENDS = {
    "ipython": [str(BIN / "ipython"), "--simple-prompt", "--no-banner", "--colors=NoColor"],
    # On a loaded machine the console must wait longer for its kernel than its defaults: 60 s
    # for the first answer, and 1 s for an is_complete answer, after which it never asks again,
    # and the kernel (which tells a console by those requests) takes it for a notebook.
    "jupyter console": [str(BIN / "jupyter"), "console", "--ZMQTerminalInteractiveShell.banner=", "--colors=NoColor",
                        "--ZMQTerminalInteractiveShell.kernel_timeout=180",
                        "--ZMQTerminalInteractiveShell.kernel_is_complete_timeout=30"],
}
PROMPT = r"In \[\d+\]: "
QUESTION = r"\[y\]es once / \[a\]lways / \[n\]o, reason: "
# Generous: on a loaded machine a front end, its kernel and a first turn's imports take a while.
PATIENCE = 180
HTML_TAG = re.compile(r"</?(details|summary|code|sub|b|i|pre|div|span|table|tr|td|ul|li|p)\b[^>]*>")


@pytest.fixture(params=list(FRONT_ENDS))
def ipython(project: Path, request: pytest.FixtureRequest) -> Iterator[pexpect.spawn]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "TERM": "dumb"}
    command, *args = FRONT_ENDS[request.param]
    child = pexpect.spawn(command, args, cwd=str(project), env=env, encoding="utf-8", timeout=PATIENCE)
    try:
        child.expect(PROMPT)
        child.sendline("%load_ext larik_jupyter")
        child.expect(PROMPT)
        yield child
    finally:
        close(child)


def close(child: pexpect.spawn) -> None:
    """End the front end whatever state a test left it in; at worst it is killed. Never raises,
    so a teardown reports nothing a test did not."""
    try:
        child.sendline("exit")
        if child.expect([pexpect.EOF, QUESTION]) == 1:  # a failed test left a turn asking: end it
            child.sendintr()
            child.expect(PROMPT)
            child.sendline("exit")
            child.expect(pexpect.EOF)
    except (pexpect.ExceptionPexpect, OSError):
        pass
    finally:
        child.close(force=True)


def run(child: pexpect.spawn, line: str) -> str:
    child.sendline(line)
    child.expect(PROMPT)
    return str(child.before)


def assert_plain(text: str) -> None:
    assert "<IPython.core.display" not in text
    assert HTML_TAG.search(text) is None, HTML_TAG.search(text)


@pytest.mark.timeout(600)
def test_a_turn_streams_once_and_asks_at_a_terminal_prompt(ipython: pexpect.spawn, project: Path) -> None:
    ipython.sendline("%larik what does the demo do?")
    transcript = ""
    for answer in ("y", "a", "n, not now"):
        ipython.expect(QUESTION)
        transcript += str(ipython.before)
        ipython.sendline(answer)
    ipython.expect(PROMPT)
    transcript += str(ipython.before)
    assert_plain(transcript)
    assert transcript.count("[scripted demo] Now I'll edit one line of it.") == 1
    assert transcript.count("What happened:") == 1
    assert "? Create larik_demo.txt with this content?" in transcript
    assert "? Run this shell command?\r\n$ cat larik_demo.txt" in transcript
    assert re.search(r"▶ write: larik_demo.txt … ✓ \(\d+\.\d+s\) Created larik_demo.txt", transcript)
    assert "✗ bash: cat larik_demo.txt" in transcript and "The user said: not now" in transcript
    assert "editing larik_demo.txt: done" in transcript and "`cat larik_demo.txt`: denied" in transcript
    assert (project / "larik_demo.txt").read_text().startswith("Hello from the Larik demo, prompt 1.")

    tree = run(ipython, "%larik /tree")
    assert re.search(r"\d{8}-\d{6}-[0-9a-f]{6} \(current\)\s+1\. what does the demo do\?", tree)
    checkpoints = run(ipython, "%larik /checkpoints")
    assert "Prompt 1: larik_demo.txt" in checkpoints
    sessions = run(ipython, "%larik /sessions")
    assert re.search(r"\d{8}-\d{6}-[0-9a-f]{6} .* what does the demo do\?", sessions)
    usage = run(ipython, "%larik /usage")
    assert "Session `" in usage
    for text in (tree, checkpoints, sessions, usage):
        assert_plain(text)


@pytest.mark.parametrize(
    ("typed", "decision", "message"),
    [("y", "allow", ""), ("yes", "allow", ""), ("a", "always", ""), ("n", "deny", ""),
     ("n, too risky", "deny", "too risky"), ("no not now", "deny", "not now")],
)
def test_terminal_answers(typed: str, decision: str, message: str) -> None:
    answer = parse_answer(typed)
    assert answer is not None and (answer.decision, answer.message) == (decision, message)


def test_an_unclear_answer_is_asked_again() -> None:
    assert parse_answer("maybe") is None and parse_answer("") is None


@pytest.mark.timeout(600)
def test_ctrl_c_at_the_approval_prompt_ends_the_turn(ipython: pexpect.spawn, project: Path) -> None:
    ipython.sendline("%larik go")
    ipython.expect(QUESTION)
    ipython.sendintr()
    ipython.expect(PROMPT)  # an unanswered question waits for ever
    text = str(ipython.before)
    assert_plain(text)
    assert "turn 1 interrupted" in text
    assert not (project / "larik_demo.txt").exists()
    assert "running False" in run(
        ipython, "import larik_jupyter; print('running', larik_jupyter.current().loop.running)"
    )
