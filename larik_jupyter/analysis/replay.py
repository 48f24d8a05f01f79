"""Replay a branch without the model: its `python` calls, file writes and `notebook_run`
sources run in order in a fresh kernel, in a scratch copy of the project (or in place), each
output compared with the recorded one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from larik_jupyter.analysis.as_notebook import cells_of
from larik_jupyter.analysis.compare import DEFAULT_RTOL, block_size, image_diff, text_diff
from larik_jupyter.analysis.kernel_run import FreshKernel
from larik_jupyter.analysis.steps import Step, read_branch
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.errors import LarikError
from larik_jupyter.paths import project_root
from larik_jupyter.session.summary import first_line

Status = Literal["same", "changed", "failed", "skipped"]
DEFAULT_TIMEOUT = 600.0
EXIT_STATUS: dict[Status, int] = {"same": 0, "skipped": 0, "changed": 1, "failed": 2}
# Left out of the scratch copy: version control, environments and caches no analysis reads.
NOT_COPIED = (".git", ".venv", "node_modules", "__pycache__", ".ipynb_checkpoints")


class ReplayDirError(LarikError):
    """The directory to replay in is missing or not a directory."""


@dataclass
class ReplayRow:
    """One call of the branch and how its replay went; `detail` holds the diff or the error."""

    prompt: int
    call: str
    status: Status
    detail: list[str] = field(default_factory=list)
    tool_use_id: str | None = None


@dataclass
class ReplayReport:
    """Every replayable call of a branch with its outcome; `where` is the directory it ran in."""

    session_id: str
    where: Path
    scratch: bool
    rows: list[ReplayRow] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0 when everything matched, 1 when some output changed, 2 when a call failed."""
        return max((EXIT_STATUS[row.status] for row in self.rows), default=0)

    def counts(self) -> dict[Status, int]:
        out: dict[Status, int] = {"same": 0, "changed": 0, "failed": 0, "skipped": 0}
        for row in self.rows:
            out[row.status] += 1
        return out

    def table(self) -> str:
        """The report as a plain-text table, one row per call, diffs and errors below it."""
        place = "a scratch copy" if self.scratch else "place"
        lines = [f"Replay of {self.session_id} in {place}: {self.where}", ""]
        width = max([len(r.call) for r in self.rows] + [4])
        lines.append(f"{'#':>3}  {'prompt':>6}  {'call':<{width}}  status")
        for n, row in enumerate(self.rows, 1):
            lines.append(f"{n:>3}  {row.prompt:>6}  {row.call:<{width}}  {row.status}")
            lines += [f"{'':>13}{line}" for line in row.detail]
        counts = self.counts()
        lines += ["", ", ".join(f"{v} {k}" for k, v in counts.items())]
        return redactor_for(self.where).text("\n".join(lines))


def _label(step: Step) -> str:
    if step.kind == "write":
        return f"write {step.path}"
    name = "shell" if step.tool == "bash" else step.tool or step.kind
    return f"{name} …{(step.tool_use_id or '')[-8:]}"


def _compare(step: Step, run_text: str, run_images: list[object], rtol: float) -> tuple[Status, list[str]]:
    diff = text_diff(step.recorded, run_text, rtol)
    diff += image_diff([block_size(b) for b in step.images], run_images)  # type: ignore[arg-type]
    return ("changed", diff) if diff else ("same", [])


def _outside(step: Step) -> bool:
    return step.path is not None and (os.path.isabs(step.path) or step.path.startswith(".."))


def _copy_project(source: Path) -> tuple[Path, Path]:
    """A scratch copy of `source`'s project (links copied as links, `NOT_COPIED` left out);
    returns the temporary folder and the copy of `source` in it."""
    root = project_root(source)
    scratch = Path(tempfile.mkdtemp(prefix="larik-replay-"))
    copy = scratch / (root.name or "project")
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return scratch, copy / source.relative_to(root)


def replay_branch(
    session: str | os.PathLike[str],
    *,
    at: int | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    stop_on_fail: bool = False,
    in_place: bool = False,
    rtol: float = DEFAULT_RTOL,
    lookup: str | os.PathLike[str] | None = None,
    progress: Callable[[ReplayRow], None] | None = None,
) -> ReplayReport:
    """Replay `session` (an id, looked up in `lookup`'s folder first, or a file) up to prompt
    `at` in a fresh kernel. It works in a scratch copy of `cwd` (default: the directory the
    session recorded), removed afterwards, or in `cwd` itself with `in_place`. No model is
    asked anything. `progress` is called with each row as it is decided."""
    branch = read_branch(session, at=at, cwd=lookup)
    workdir = Path(os.path.abspath(cwd)) if cwd is not None else branch.cwd
    if not workdir.is_dir():
        raise ReplayDirError(f"{workdir} is not a directory; pass --cwd with the project directory to replay in.")
    scratch: Path | None = None
    where = workdir
    try:
        if not in_place:
            scratch, where = _copy_project(workdir)
        report = ReplayReport(branch.session_id, where, scratch=not in_place)
        sources = {id(step): cell.source for step, cell in zip(branch.steps, cells_of(branch), strict=True)}

        def add(row: ReplayRow) -> None:
            report.rows.append(row)
            if progress is not None:
                progress(row)

        stopped = False
        with FreshKernel(where) as kernel:
            for step in branch.steps:
                if step.kind in ("prompt", "reply"):
                    continue
                row = ReplayRow(step.prompt, _label(step), "skipped", tool_use_id=step.tool_use_id)
                if step.kind == "note":
                    row.detail = [step.text.strip("*")]
                elif step.kind == "shell":
                    row.detail = [f"shell commands are not replayed: {first_line(step.text, 60)}"]
                elif stopped:
                    row.detail = ["not run: --stop-on-fail stopped at the first failure"]
                elif step.kind == "write" and _outside(step) and not in_place:
                    row.detail = ["the file lies outside the project, so the scratch copy cannot hold it"]
                else:
                    run = kernel.run(sources[id(step)], timeout)
                    if run.timed_out:
                        row.status, row.detail = "failed", [f"timed out after {timeout:g} s and was interrupted"]
                    elif run.error is not None:
                        row.status, row.detail = "failed", [run.error]
                    elif step.kind == "write":
                        row.status = "same"
                    else:
                        row.status, row.detail = _compare(step, run.text, list(run.images), rtol)
                    stopped = stop_on_fail and row.status == "failed"
                add(row)
        return report
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
