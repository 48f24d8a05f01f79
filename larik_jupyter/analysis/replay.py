"""Replay a branch without the model: its `python` calls, file writes and `notebook_run`
sources run in order in a fresh guarded kernel (`scratch.kernel`), in a scratch copy of the
project or in place, each output compared with the recorded one.

In a copy nothing reaches the project: changes outside the copy (absolute paths, symlinks out)
and shell commands are refused. Either way the kernel is confined by the operating system where
it can be (`scratch.confine`) and has no network unless `network`; the table's first line says
what did not hold, its last line names the confinement. In place, changes stay inside the project, a file changed since
the session is left alone unless `force`, and shell commands (the `bash` tool's, `!` lines of
recorded code) run only with `include_shell`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from larik_jupyter.analysis.as_notebook import cells_of
from larik_jupyter.analysis.compare import (
    DEFAULT_RTOL,
    block_bytes,
    image_diff,
    text_diff,
)
from larik_jupyter.analysis.steps import Step, read_branch
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.errors import LarikError
from larik_jupyter.paths import project_root
from larik_jupyter.scratch.copy import ScratchFolder, make_copy, scratch_folder
from larik_jupyter.scratch.kernel import CellOutcome, Confinement, ScratchKernel
from larik_jupyter.scratch.receipts import last_receipts, watch_receipts
from larik_jupyter.session.receipts import receipt_changes
from larik_jupyter.session.summary import first_line

Status = Literal["same", "changed", "failed", "skipped"]
DEFAULT_TIMEOUT = 600.0
EXIT_STATUS: dict[Status, int] = {"same": 0, "skipped": 0, "changed": 1, "failed": 2}
# A line of recorded code that runs a shell command: `!cmd`, `x = !cmd`, `%sx`, `%system`,
# `%pip`/`%conda`/`%mamba`; and a cell that is a shell script (`%%bash`, `%%sh`, `%%script`).
_SHELL_LINE = re.compile(r"^(\s*)(?:[\w.]+\s*=\s*)?(?:!|%sx\b|%system\b|%pip\b|%conda\b|%mamba\b)")
_SHELL_CELL = re.compile(r"^\s*%%(?:bash|sh|script|system|sx)\b")


class ReplayDirError(LarikError):
    """The directory to replay in is missing or not a directory."""


class ReplayShellError(LarikError):
    """Shell commands were asked for where they cannot be kept inside the replay's folder."""


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
    opening: str = ""  # what did not hold: the network allowed, no confinement by the operating system
    closing: str = ""  # the confinement the replay ran under

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
        lines = [self.opening] if self.opening else []
        lines += [f"Replay of {self.session_id} in {place}: {self.where}", ""]
        width = max([len(r.call) for r in self.rows] + [4])
        lines.append(f"{'#':>3}  {'prompt':>6}  {'call':<{width}}  status")
        for n, row in enumerate(self.rows, 1):
            lines.append(f"{n:>3}  {row.prompt:>6}  {row.call:<{width}}  {row.status}")
            lines += [f"{'':>13}{line}" for line in row.detail]
        counts = self.counts()
        lines += ["", ", ".join(f"{v} {k}" for k, v in counts.items())]
        if self.closing:
            lines += ["", self.closing]
        return redactor_for(self.where).text("\n".join(lines))


def _label(step: Step) -> str:
    """A row's call as every view names it: its one-line summary (`python: total = …`)."""
    if step.kind == "user":
        return f"user cell: {first_line(step.text, 60)}"
    if step.kind == "file":  # the content the prompt's run of writes and edits left
        return f"write: {step.path}"
    if step.summary:
        return step.summary
    return f"prompt {step.prompt}: undone" if step.kind == "note" else step.kind


def _compare(
    step: Step, run: CellOutcome, rtol: float, places: Sequence[str], *, error: bool = False
) -> tuple[Status, list[str]]:
    """The recorded output against the run's (the directories in `places` read alike); for a
    run that raised as recorded, the output before the traceback (which the recorded text ends
    with)."""
    recorded = step.recorded.split("Traceback (most recent call last):")[0].rstrip("\n") if error else step.recorded
    diff = text_diff(recorded, run.text, rtol, places)
    diff += image_diff([block_bytes(b) for b in step.images], list(run.images))
    return ("changed", diff) if diff else ("same", [])


def _outside(step: Step) -> bool:
    return step.path is not None and (os.path.isabs(step.path) or step.path.startswith(".."))


def without_shell(source: str) -> tuple[str, list[str]]:
    """`source` with each shell line replaced by `pass` (same indent, so blocks stay valid),
    and the lines taken out; a whole shell cell becomes empty."""
    if _SHELL_CELL.match(source):
        return "", [first_line(source, 60)]
    kept: list[str] = []
    taken: list[str] = []
    for line in source.split("\n"):
        found = _SHELL_LINE.match(line)
        if found:
            taken.append(line.strip())
            line = f"{found.group(1)}pass  # shell line not replayed"
        kept.append(line)
    return "\n".join(kept), taken


def _row(step: Step, run: CellOutcome, timeout: float, rtol: float, places: Sequence[str]) -> tuple[Status, list[str]]:
    """How a step's run compares with what was recorded."""
    if run.refused and step.kind == "file" and not run.died:
        return "skipped", run.refused
    if run.stopped == "timeout" and not run.died:
        return "failed", [*run.refused, f"timed out after {timeout:g} s and was interrupted"]
    if step.error and not run.died:  # it raised when recorded: the same exception is expected
        if run.error.partition(":")[0] == step.error.partition(":")[0]:
            return ("same", []) if step.kind == "user" else _compare(step, run, rtol, places, error=True)
        return "changed", [f"- {step.error}", f"+ {run.error or 'no error'}"]
    if run.error:
        return "failed", [*run.refused, run.error]
    if run.refused:
        return "failed", run.refused
    if step.kind in ("file", "user"):
        return "same", []
    return _compare(step, run, rtol, places)


def replay_branch(
    session: str | os.PathLike[str],
    *,
    prompt_number: int | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    stop_on_fail: bool = False,
    in_place: bool = False,
    force: bool = False,
    include_shell: bool = False,
    rtol: float = DEFAULT_RTOL,
    lookup: str | os.PathLike[str] | None = None,
    progress: Callable[[ReplayRow], None] | None = None,
    network: bool = False,
) -> ReplayReport:
    """Replay `session` (an id, looked up in `lookup`'s folder first, or a file) up to prompt
    `prompt_number` in a fresh kernel. It works in a scratch copy of `cwd` (default: the directory the
    session recorded), removed afterwards, or in `cwd` itself with `in_place`, where a file
    changed since the session is left alone unless `force` and shell commands run only with
    `include_shell` (see the module docstring); `network` lets the code connect to other
    machines. No model is asked anything. `progress` is called with each row as it is decided."""
    if include_shell and not in_place:
        raise ReplayShellError(
            "--include-shell runs shell commands, which cannot be kept inside a scratch copy; "
            "add --in-place to run them in the project itself."
        )
    if force and not in_place:
        raise ReplayShellError("--force replays over files changed since the session, so it needs --in-place.")
    branch = read_branch(session, prompt_number=prompt_number, cwd=lookup)
    workdir = Path(os.path.abspath(cwd)) if cwd is not None else branch.cwd
    if not workdir.is_dir():
        raise ReplayDirError(f"{workdir} is not a directory; pass --cwd with the project directory to replay in.")
    folder: ScratchFolder | None = None
    try:
        if in_place:
            folder, where, copied = scratch_folder(), workdir, ""
            rule = "" if include_shell else "replay runs shell commands only with --include-shell"
            confinement = Confinement.in_place(project_root(workdir), folder, "replayed in place",
                                               shell_rule=rule, cutoff=None if force else branch.ended, network=network)
        else:
            copy = make_copy(project_root(workdir))
            folder, where, copied = copy.folder, copy.place(workdir), str(copy.copy)
            confinement = Confinement.in_copy(copy, "replayed in a copy", network=network)
        report = ReplayReport(branch.session_id, where, scratch=not in_place)
        sources = {id(step): cell.source for step, cell in zip(branch.steps, cells_of(branch, include_shell=True), strict=True)}

        def add(row: ReplayRow) -> None:
            report.rows.append(row)
            if progress is not None:
                progress(row)

        ended = ""
        # Where the session ran and where this replay runs: a path to either reads the same.
        places = {str(branch.cwd), str(where), str(project_root(branch.cwd)), str(project_root(workdir)), copied}
        places |= {os.path.realpath(place) for place in places if place}
        place_list = sorted(places)
        with ScratchKernel(where, confinement, store_history=True) as kernel:
            report.opening = kernel.held.opening(confinement.inside)
            report.closing = kernel.held.closing("The replay", confinement.place, confinement.inside)
            watch_receipts(kernel, timeout)
            for step in branch.steps:
                if step.kind in ("prompt", "reply"):
                    continue
                row = ReplayRow(step.prompt, _label(step), "skipped", tool_use_id=step.tool_use_id)
                source = sources[id(step)]
                taken: list[str] = []
                if step.kind in ("user", "code") and not include_shell:
                    source, taken = without_shell(source)
                if step.kind == "note":
                    row.detail = [step.text.strip("*")]
                elif step.kind == "shell" and not include_shell:
                    row.detail = [f"shell commands are not replayed (--include-shell runs them): {first_line(step.text, 60)}"]
                elif ended:
                    row.detail = [ended]
                elif step.kind == "file" and _outside(step) and not in_place:
                    row.detail = ["the file lies outside the project, so the scratch copy cannot hold it"]
                elif not source.strip():
                    row.detail = [f"shell commands are not replayed (--include-shell runs them): {line}" for line in taken]
                else:
                    run = kernel.run(source, timeout=timeout)
                    row.status, row.detail = _row(step, run, timeout, rtol, place_list)
                    if step.kind == "code" and not run.died and (now := last_receipts(kernel, timeout)) is not None:
                        if changed := receipt_changes(step.receipts, now):  # the rows differ: a `changed` row
                            row.status = "changed" if row.status == "same" else row.status
                            row.detail += changed
                    row.detail += [f"shell line not replayed (--include-shell runs it): {line}" for line in taken]
                    if run.died:
                        ended = f"not run: the kernel died at call #{len(report.rows) + 1}"
                    elif stop_on_fail and row.status == "failed":
                        ended = "not run: --stop-on-fail stopped at the first failure"
                add(row)
        return report
    finally:
        if folder is not None:
            folder.remove()
