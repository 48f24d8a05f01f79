"""How the live views name a pending call and who changed a file, as the call's tool says (the
summaries themselves are each tool's `summary`, through tools/calls.py; the approval's question is the tool's
`approval_question`)."""

from __future__ import annotations

from larik_jupyter.tools.registry import builtin_tool


def asked_label(tool: str, summary: str) -> str:
    """How an approval, and the status and tool row around it, name a pending call: by its
    summary, or by the tool alone when the preview already shows the call's text
    (`Tool.preview_is_call`), so the code appears once."""
    cls = builtin_tool(tool)
    return tool if cls is not None and cls.preview_is_call else summary


def changed_by(tool: str) -> str:
    """Who made a file change the checkpoints did not capture, in words (`Tool.doer`); a change
    no tool is named for was the shell's."""
    if not tool:
        return "the shell"
    cls = builtin_tool(tool)
    return cls.doer() if cls is not None else f"the tool `{tool}`"
