"""The sidebar's transcript shows each plan update as a checklist and each skill load by name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.store import Session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def _call(session: Session, call_id: str, name: str, tool_input: dict[str, object], result: str,
          *, error: bool = False) -> None:  # fmt: skip
    session.append_message(Message(role="assistant", content=[ToolUseBlock(id=call_id, name=name, input=tool_input)]))
    block = ToolResultBlock(tool_use_id=call_id, content=result, is_error=error or None)
    session.append_message(Message(role="user", content=[block]))


def test_sidebar_renders_plan_updates_as_checklists_and_skill_loads(
    lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    with Session.create(root, "scripted", "demo") as session:
        session.append_message(user_text("Plan and deploy"))
        _call(session, "p1", "todo_write", {"todos": [{"content": "Build", "status": "in_progress"},
                                                      {"content": "Deploy", "status": "pending"}]}, "Plan updated")
        _call(session, "s1", "skill", {"name": "deploy"}, "Loaded skill deploy (repository, x).")
        _call(session, "p2", "todo_write", {"todos": [{"content": "Build", "status": "in_progress"},
                                                      {"content": "Deploy", "status": "in_progress"}]},
              "todo_write got 2 items in_progress", error=True)  # fmt: skip
        _call(session, "p3", "todo_write", {"todos": [{"content": "Build", "status": "completed"},
                                                      {"content": "Deploy", "status": "completed"}]}, "Plan updated")
        sid = session.id
    page = lab_page
    page.click('li[data-id="larik-sessions"]')
    page.click(f'.jp-larik-node[data-session-id="{sid}"] > .jp-larik-row')
    transcript = page.locator(".jp-larik-transcript")
    plans = transcript.locator(".jp-larik-plan")
    expect(plans).to_have_count(2)  # the refused update is an ordinary tool error
    expect(plans.nth(0).locator(".jp-larik-plan-title")).to_have_text("Plan · 0/2 done")
    expect(plans.nth(0).locator(".jp-larik-plan-in_progress")).to_have_text("Build (in progress)")
    expect(plans.nth(1).locator("input:checked")).to_have_count(2)
    expect(transcript.locator(".jp-larik-skill summary")).to_have_text("loaded skill deploy")
    expect(transcript.locator(".jp-larik-tool-result summary", has_text="tool error")).to_have_count(1)
