"""Markdown export of the canonical transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.export import ExportExistsError, export_markdown
from larik_jupyter.session.store import Session


def _session(cwd: Path) -> Path:
    with Session.create(cwd, "anthropic", "claude-sonnet-4-5") as s:
        s.append_message(user_text("fix the build"))
        s.append_message(Message(role="assistant", content=[TextBlock(text="Looking."), ToolUseBlock(id="t1", name="bash", input={"command": "make"})]))
        s.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="error: ```x```", is_error=True)]))
        s.append(Entry(type="compaction", summary="The build failed on x."))
        s.append_message(user_text("try again"))
        s.append_message(Message(role="assistant", content=[TextBlock(text="Retrying")], interrupted=True))
        return s.path


def test_export_renders_everything_to_the_default_place(tmp_path: Path) -> None:
    path = _session(tmp_path)
    out = export_markdown(path, cwd=tmp_path, redactor=redactor_for(tmp_path))
    assert out == tmp_path / ".larik" / "exports" / f"{path.stem}.md"
    text = out.read_text()
    for expected in ("## 1. User", "fix the build", "**Tool call** `bash: make` (`t1`)", '"command": "make"',
                     "**Tool error** for `t1`", "````\nerror: ```x```\n````", "Context compacted",
                     "> The build failed on x.", "## 2. User", "Retrying", "Interrupted", "claude-sonnet-4-5"):
        assert expected in text


def test_export_never_overwrites(tmp_path: Path) -> None:
    path = _session(tmp_path)
    first = export_markdown(path, cwd=tmp_path, redactor=redactor_for(tmp_path))
    second = export_markdown(path, cwd=tmp_path, redactor=redactor_for(tmp_path))
    assert second == first.with_name(f"{path.stem}-2.md") and first.exists()
    target = tmp_path / "mine.md"
    target.write_text("precious")
    with pytest.raises(ExportExistsError, match="mine.md already exists"):
        export_markdown(path, "mine.md", cwd=tmp_path, redactor=redactor_for(tmp_path))
    assert target.read_text() == "precious"
    assert export_markdown(path, "sub/other.md", cwd=tmp_path, redactor=redactor_for(tmp_path)) == tmp_path / "sub" / "other.md"
