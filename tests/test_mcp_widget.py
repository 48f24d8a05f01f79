"""The notebook's approval card for a shared `.mcp.json`: pending until clicked, then running."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from IPython.utils.capture import capture_output

from larik_jupyter.config.layers import load_config
from larik_jupyter.frontends.notebook.widgets.trust import TrustWidget
from tests.agent_helpers import done, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"


def share(project: Path, args: list[str]) -> None:
    server = {"command": sys.executable, "args": [str(TINY), *args]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tiny": server}}))


def test_approving_in_the_card_starts_the_server_for_the_running_agent(project: Path) -> None:
    share(project, [])
    shell, magics = shell_with_magics(project, "scripted:demo")
    with capture_output() as shown:
        larik(shell, "/new")
    agent = magics.agent
    assert agent is not None
    try:
        # The card replaces the headless notice, and pages without widgets still say what to do.
        texts = [o.data.get("text/markdown", "") + o.data.get("text/html", "") for o in shown.outputs]
        assert not any("awaits your approval" in t for t in texts)
        assert any("larik-jupyter approve mcp:tiny" in t for t in texts)
        assert "mcp__tiny__echo" not in agent.loop.tools

        card = TrustWidget(magics.kernel, load_config(project).pending)
        shown_html = card.rows["mcp:tiny"].children[0].value
        assert "MCP server <code>tiny</code> from .mcp.json" in shown_html and "tiny_server.py" in shown_html
        card.approve_buttons["mcp:tiny"].click()

        assert "running with" in card.settled["mcp:tiny"]
        assert card.approve_buttons["mcp:tiny"].disabled
        (status,) = agent.loop.mcp.statuses()  # type: ignore[union-attr]
        assert status.state == "running"
        assert {"mcp__tiny__echo", "mcp__tiny__pid"} <= set(agent.loop.tools)
        assert agent.loop.tools["mcp__tiny__echo"].run(agent.loop.env, {"text": "hi"}).content == "hi"
        assert not load_config(project).pending

        # Changing the command loses the approval: pending again, in a new card from /mcp.
        share(project, ["--verbose"])
        with capture_output() as listed:
            larik(shell, "/mcp")
        assert any("larik-jupyter approve mcp:tiny" in o.data.get("text/html", "") for o in listed.outputs)
        (pending,) = load_config(project).pending
        assert pending.key == "mcp:tiny" and "--verbose" in pending.definition["args"]
        # A card shown before the change cannot approve the changed definition.
        stale = TrustWidget(magics.kernel, [card.pending[0]])
        stale.approve_buttons["mcp:tiny"].click()
        assert "mcp:tiny" not in stale.settled and load_config(project).pending
    finally:
        agent.close()


def test_not_now_leaves_it_pending(project: Path) -> None:
    share(project, [])
    shell, magics = shell_with_magics(project, "scripted:demo")
    card = TrustWidget(magics.kernel, load_config(project).pending)
    card.later_buttons["mcp:tiny"].click()
    card.approve_buttons["mcp:tiny"].click()  # settled rows ignore later clicks
    assert "Not approved" in card.settled["mcp:tiny"]
    assert [p.key for p in load_config(project).pending] == ["mcp:tiny"]


def test_approving_a_shared_hook_in_the_card_runs_it_from_the_next_call(project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "hook-ran"
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"command": f"touch {flag}"}]}})
    )
    model = scripted(tmp_path, [tool("ls")], done(), [tool("ls")], done())
    shell, magics = shell_with_magics(project, model)
    larik(shell, "look")
    assert not flag.exists()
    (pending,) = load_config(project).pending
    card = TrustWidget(magics.kernel, [pending])
    card.approve_buttons[pending.key].click()
    assert card.settled[pending.key].startswith("✓ Approved hook:PreToolUse:")
    larik(shell, "look again")
    assert flag.exists()
    magics.agent.close()  # type: ignore[union-attr]
