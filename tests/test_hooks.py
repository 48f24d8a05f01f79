"""Shell hooks around tool calls, prompts and turn ends, driven by scripted turns."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.config.layers import load_config
from larik_jupyter.config.update import approve
from tests.agent_helpers import done, personal, results_of, scripted, tool

BLOCK_RM = """
import json, sys
event = json.load(sys.stdin)
command = event["tool_input"].get("command", "")
if command.split()[:1] == ["rm"]:
    print(f"refusing to run {command!r}: deleting files is not allowed here", file=sys.stderr)
    sys.exit(2)
"""

LOG_CALL = """
import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"event": event["hook_event_name"], "tool": event.get("tool_name"),
                          "error": event.get("tool_response", {}).get("is_error")}) + "\\n")
print("logged " + event.get("tool_name", ""))
"""


def python_hook(tmp_path: Path, name: str, code: str, *args: str) -> str:
    script = tmp_path / name
    script.write_text(code)
    return shlex.join([sys.executable, str(script), *args])


def run_collecting(agent: Agent, prompt: str) -> tuple[Any, list[ae.AgentEvent]]:
    seen: list[ae.AgentEvent] = []
    agent.subscribe(seen.append)
    return agent.run(prompt), seen


def test_before_hook_blocks_rm_and_after_hook_logs(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    personal(
        {
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "command": python_hook(tmp_path, "block.py", BLOCK_RM)}],
                # Claude's nested form, with a matcher selecting every tool.
                "PostToolUse": [
                    {"matcher": "*", "hooks": [{"type": "command", "command": python_hook(tmp_path, "log.py", LOG_CALL, str(log))}]}
                ],
            }
        }
    )
    (project / "precious.txt").write_text("keep me")
    spec = scripted(
        tmp_path,
        [tool("bash", command="rm -f precious.txt")],
        [tool("bash", command="echo still here")],
        done(),
    )
    agent = Agent(project, model=spec, yes=True)
    outcome, events = run_collecting(agent, "clean up")
    agent.close()

    assert outcome.status == "done"
    assert (project / "precious.txt").read_text() == "keep me"
    blocked, ran = results_of(agent)
    assert blocked.is_error
    assert "A PreToolUse hook blocked this call" in blocked.content
    assert "deleting files is not allowed here" in blocked.content
    assert ran.content.startswith("still here") and not ran.is_error
    # The blocked call never ran, so only the second call reached the after-hook.
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        {"event": "PostToolUse", "tool": "bash", "error": False}
    ]
    notices = [e.text for e in events if isinstance(e, ae.Notice)]
    assert any("blocked" in n and "deleting files" in n for n in notices)
    assert any("logged bash" in n for n in notices)


def test_a_hook_that_times_out_is_killed_and_blocks_nothing(project: Path, tmp_path: Path) -> None:
    personal({"hooks": {"PreToolUse": [{"matcher": "", "command": "sleep 60", "timeout": 0.5}]}})
    spec = scripted(tmp_path, [tool("bash", command="echo ran")], done())
    agent = Agent(project, model=spec, yes=True)
    started = time.monotonic()
    outcome, events = run_collecting(agent, "go")
    agent.close()
    assert time.monotonic() - started < 30  # the hook was killed: not its 60 s sleep's natural end
    assert outcome.status == "done"
    (result,) = results_of(agent)
    assert result.content.startswith("ran")
    assert any(isinstance(e, ae.Notice) and "timed out" in e.text for e in events)


def test_prompt_hook_can_block_and_stop_hook_runs_at_turn_end(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "stopped.json"
    block_secret = (
        "import json, sys\n"
        "p = json.load(sys.stdin)['prompt']\n"
        "print(json.dumps({'decision': 'block', 'reason': 'no secrets'}) if 'secret' in p else '')\n"
    )
    record_stop = f"import shutil, sys\nshutil.copyfileobj(sys.stdin, open({str(marker)!r}, 'w'))\n"
    personal(
        {
            "hooks": {
                "UserPromptSubmit": [{"command": python_hook(tmp_path, "prompt.py", block_secret)}],
                "Stop": [{"command": python_hook(tmp_path, "stop.py", record_stop)}],
            }
        }
    )
    agent = Agent(project, model=scripted(tmp_path, done("Hello.")), yes=True)
    blocked = agent.run("tell me the secret")
    assert blocked.status == "blocked" and "no secrets" in (blocked.error or "")
    assert not any(m.is_prompt() for m in agent.loop.session.state.all)
    # A blocked prompt sends nothing, but the turn still ended.
    assert json.loads(marker.read_text())["status"] == "blocked"
    ok = agent.run("say hello")
    agent.close()
    assert ok.status == "done" and ok.text == "Hello."
    stop_event = json.loads(marker.read_text())
    assert stop_event["hook_event_name"] == "Stop" and stop_event["status"] == "done"
    assert stop_event["session_id"] == agent.session_id


def test_hooks_from_a_shared_file_run_only_once_approved(project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"command": f"touch {shlex.quote(str(flag))}"}]}})
    )
    agent = Agent(project, model=scripted(tmp_path, [tool("ls")], done()), yes=True)
    agent.run("look")
    agent.close()
    assert not flag.exists()
    (pending,) = load_config(project).pending
    approve(project, pending.key)
    agent = Agent(project, model=scripted(tmp_path, [tool("ls")], done()), yes=True)
    agent.run("look")
    agent.close()
    assert flag.exists()
