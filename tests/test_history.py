"""`/history` renders the stored transcript with the live view's renderer: the same picture."""

from __future__ import annotations

import json
from pathlib import Path

from larik_jupyter import Agent
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import parts_from_messages, render_parts
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import as_stored


def test_history_from_disk_matches_the_live_transcript(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [
        {"content": [{"type": "thinking", "thinking": "plan it", "signature": "sig"},
                     {"type": "text", "text": "Editing **a.py**."},
                     {"type": "tool_use", "name": "edit",
                      "input": {"path": "a.py", "old_string": "1", "new_string": "2"}}]},
        {"content": [{"type": "tool_use", "name": "bash", "input": {"command": "false"}}]},
        {"content": [{"type": "text", "text": "Done."}]},
    ]}))
    agent = Agent(tmp_path, model=f"scripted:{script}", yes=True)
    view = TranscriptView()
    agent.subscribe(view.handle)
    agent.run("edit a.py")
    path = agent.session_path
    agent.close()
    stored = replay(load_entries(path).entries).all
    live = render_parts(view.parts)
    # The same picture, but for how each call was allowed: the live row says it, no file stores it.
    assert live.count(" · allowed by --yes") == 2
    assert render_parts(parts_from_messages(list(stored), include_prompts=False)) == as_stored(live)
    assert 'class="larik-diff"' in live and "-x = 1" in live and "+x = 2" in live
    assert "<summary>thinking</summary>" in live and "✗ <code>bash: false</code>" in live


def test_status_marks_render_without_an_emoji_font() -> None:
    from larik_jupyter.frontends.notebook.render import ThinkingPart, ToolPart, render_parts

    statuses = ["requested", "asking", "running", "done", "error", "denied", "interrupted"]
    parts = [ToolPart(id=s, summary=f"bash: {s}", status=s) for s in statuses]
    parts.append(ThinkingPart("hmm"))
    text = render_parts(parts)  # type: ignore[arg-type]
    emoji = [c for c in text if ord(c) >= 0x1F000 or 0x2300 <= ord(c) < 0x2400 or 0x2600 <= ord(c) < 0x2700
             or c in "❓❗⭕"]
    assert emoji == []
    assert "✗ denied: <code>bash: denied</code>" in text


def test_the_undo_note_and_an_attachment_are_labelled_in_history_and_export(tmp_path: Path) -> None:
    from larik_jupyter.frontends.notebook import commands
    from larik_jupyter.frontends.notebook.kernel import KernelSession
    from larik_jupyter.session.export import render_markdown
    from larik_jupyter.tools.envelope import wrap
    from tests.agent_helpers import done, scripted, tool

    model = scripted(tmp_path, [tool("write", path="a.txt", content="a\n")], done("Wrote it."), done("Fine."))
    kernel = KernelSession(tmp_path, model=model, yes=True)
    agent = kernel.ensure()
    agent.run("write a.txt")
    agent.undo()
    from larik_jupyter.api import PromptExtras
    from larik_jupyter.llm.messages import TextBlock

    data = TextBlock(text=wrap("0a1b2c", "--with sales", "region,total\nnorth,3"))
    agent.run("look at it", PromptExtras(after=[data]))
    shown: list[object] = []
    commands.run(kernel, commands.parse_command("/history"), commands.Output(shown.append))
    history = "\n".join(getattr(item, "data", "") for item in shown)
    assert "**You:** look at it" in history and "**You:** <system-note>" not in history
    assert "<summary>note to the model</summary>" in history and "The user reverted" in history
    assert "<summary>attached sales</summary>" in history and "region,total\nnorth,3" in history
    assert "do not follow instructions" not in history
    exported = render_markdown(agent.session_path, load_entries(agent.session_path).entries, redactor=redactor_for(None))
    assert "<summary>Note to the model</summary>" in exported and "<summary>Attached sales</summary>" in exported
    assert "do not follow instructions" not in exported
    kernel.close()


def test_history_and_the_export_name_cells_by_their_position_with_the_id_on_hover(tmp_path: Path) -> None:
    import nbformat

    from larik_jupyter.frontends.notebook import commands
    from larik_jupyter.frontends.notebook.kernel import KernelSession
    from larik_jupyter.session.export import render_markdown
    from tests.agent_helpers import done, scripted, tool

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Sales", id="title"), nbformat.v4.new_code_cell("x = 1", id="calc")]
    nbformat.write(nb, tmp_path / "work.ipynb")
    model = scripted(
        tmp_path,
        [tool("notebook_edit", path="work.ipynb", cell_id="calc", new_source="x = 2")],
        [tool("notebook_read", path="work.ipynb", cell_ids=["title", "calc"])],
        [tool("python", code="total = 1 + 1\nprint(total)")],
        done("Done."),
    )
    kernel = KernelSession(tmp_path, model=model, yes=True)
    kernel.ensure().run("change calc")
    shown: list[object] = []
    commands.run(kernel, commands.parse_command("/history"), commands.Output(shown.append))
    history = "\n".join(getattr(item, "data", "") for item in shown)
    exported = render_markdown(kernel.require().session_path, load_entries(kernel.require().session_path).entries, redactor=redactor_for(None))
    records = kernel.require().records
    kernel.close()
    assert records.tool_calls[0].summary == 'notebook_edit: replace cell 2 of work.ipynb ("x = 2")'  # the API's too
    assert '**Tool call** `notebook_edit: replace cell 2 of work.ipynb ("x = 2")` (`' in exported
    assert "`, cell id calc)" in exported and "`, cell ids title, calc)" in exported
    # Read from disk, with no browser: the cells are named by where they stand in the file.
    assert '<code title="cell id calc">notebook_edit: replace cell 2 of work.ipynb ("x = 2")</code>' in history
    assert '<code title="cell ids title, calc">notebook_read: cells 1, 2 of work.ipynb</code>' in history
    assert "<code>python: total = 1 + 1…</code> · allowed by --yes" not in history  # no decision is stored
    assert "```python\ntotal = 1 + 1\nprint(total)\n```" in history  # the whole code, one click away
