"""A branch written as a new `.ipynb`: prompts and replies as Markdown, the code the agent ran
with its recorded outputs, each file it wrote as a `%%writefile` cell, notes for the rest; the
written notebook has its secrets redacted (replay runs the cells as recorded)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from larik_jupyter.analysis.steps import Branch, Step, read_branch
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.errors import LarikError
from larik_jupyter.redaction import Redactor
from larik_jupyter.session.new_file import write_new, write_numbered
from larik_jupyter.session.receipts import receipt_text


class NotebookExistsError(LarikError):
    """A notebook is never written over an existing file."""


def _outputs(step: Step) -> list[Any]:
    """The recorded output text as stdout, then each recorded image."""
    import nbformat.v4 as v4

    outputs = [v4.new_output("stream", name="stdout", text=step.recorded + "\n")] if step.recorded else []
    for image in step.images:
        source = image.source
        if source.get("type") == "base64":
            media = str(source.get("media_type", "image/png"))
            outputs.append(v4.new_output("display_data", data={media: source.get("data", ""), "text/plain": "<image>"}))
    return outputs


def _expecting(meta: dict[str, Any], step: Step) -> dict[str, Any]:
    """A code cell's metadata: a step that raised when recorded is tagged `raises-exception`,
    so the notebook runs on past it (nbclient, "Run All") as the session did."""
    return {**meta, "tags": ["raises-exception"]} if step.error else meta


def _shell_source(command: str) -> str:
    return f"!{command}" if "\n" not in command.strip() else f"%%bash\n{command}"


def _markdown_quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines())


def _undone_source(step: Step) -> str:
    """A step of an undone prompt as Markdown: its code shown, never run."""
    code = f"%%writefile {shlex.quote(step.path or '')}\n{step.text}" if step.kind == "file" else step.text
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", code))])
    return f"*Undone (not run):*\n\n{fence}python\n{code}\n{fence}"


def cells_of(branch: Branch, *, include_shell: bool = False) -> list[Any]:
    """The notebook cells of a branch's steps, each with its provenance under `larik_branch`
    (not `larik`, which marks a cell the agent changed in a notebook: an export is a record
    of a branch, and its cells must not pass for the edited ones in JupyterLab)."""
    import nbformat.v4 as v4

    cells = []
    for step in branch.steps:
        larik: dict[str, Any] = {"session": branch.session_id, "prompt": step.prompt}
        if step.tool_use_id:
            larik["tool_use_id"] = step.tool_use_id
        meta = {"larik_branch": larik}
        if step.undone:
            larik["undone"] = True
        if step.undone and step.kind not in ("prompt", "reply", "note"):
            cells.append(v4.new_markdown_cell(_undone_source(step), metadata=meta))
        elif step.kind == "prompt":
            head = f"### Prompt {step.prompt}" + (" (undone)" if step.undone else "")
            cells.append(v4.new_markdown_cell(f"{head}\n\n{_markdown_quote(step.text)}", metadata=meta))
        elif step.kind in ("reply", "note"):
            cells.append(v4.new_markdown_cell(step.text, metadata=meta))
        elif step.kind == "user":
            larik["user_cell"] = True  # the user's own cell, run before the prompt: not the agent's
            cells.append(v4.new_code_cell(step.text, metadata=_expecting(meta, step)))
        elif step.kind == "code":
            said = "".join(f"# receipt: {receipt_text(r)}\n" for r in step.receipts)  # as recorded
            cells.append(v4.new_code_cell(said + step.text, metadata=_expecting(meta, step), outputs=_outputs(step)))
        elif step.kind == "file":
            assert step.path is not None
            cells.append(v4.new_code_cell(f"%%writefile {shlex.quote(step.path)}\n{step.text}", metadata=meta))
        elif include_shell:
            cells.append(v4.new_code_cell(_shell_source(step.text), metadata=meta))
        else:
            fence = "```"
            cells.append(v4.new_markdown_cell(
                f"*The agent ran a shell command (left out; `--include-shell` adds it as a cell):*\n\n"
                f"{fence}sh\n{step.text}\n{fence}", metadata=meta))
    return cells


def build_notebook(branch: Branch, *, redactor: Redactor, include_shell: bool = False) -> Any:
    """The branch as an nbformat v4 notebook, validated, every string of its cells (sources,
    outputs) redacted by `redactor`."""
    import nbformat
    import nbformat.v4 as v4

    nb = v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "larik": {"session": branch.session_id, "prompts": branch.prompts, **({"undone": branch.undone} if branch.undone else {})},
    })
    nb.cells = [nbformat.from_dict(redactor.data(cell)) for cell in cells_of(branch, include_shell=include_shell)]
    nbformat.validate(nb)
    return nb


def write_notebook(
    session: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    prompt_number: int | None = None,
    include_shell: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    folder: str | os.PathLike[str] | None = None,
    include_undone: bool = False,
) -> Path:
    """Write `session` (an id or file) up to prompt `prompt_number` as a new notebook and return
    its path. Prompts an undo put back are a note, their code kept as Markdown only with
    `include_undone`.

    `path` (relative to `cwd`) must not exist; by default the notebook goes to `folder` (default:
    the session's working directory) as `<session-id>.ipynb`, or `<session-id>-2.ipynb`, … if
    taken."""
    import nbformat

    here = Path(os.fspath(cwd or os.getcwd()))
    branch = read_branch(session, prompt_number=prompt_number, cwd=here, include_undone=include_undone)
    notebook = build_notebook(branch, redactor=redactor_for(branch.cwd), include_shell=include_shell)
    text = nbformat.writes(notebook)
    if path is not None:
        target = here / Path(path).expanduser()
        if target.suffix != ".ipynb":
            raise NotebookExistsError(f"{target} does not end in .ipynb; name the notebook file NAME.ipynb.")
        try:
            write_new(target, text)
        except FileExistsError:
            raise NotebookExistsError(
                f"{target} already exists; a notebook is never written over an existing file, so choose another path."
            ) from None
        return target
    return write_numbered(Path(folder) if folder is not None else branch.cwd, branch.session_id, ".ipynb", text)
