"""The one undo path every front end takes (the notebook, `Agent`, the CLI): put a turn's
files, cells and kernel variables back, asking first where the user changed them since; and
what it did, told once (`UndoReport`): for the user as Markdown, plain text and HTML, and for
the model as the `<system-note>` the next prompt carries. Its failures are told there too:
nothing left to undo, an undo of several turns stopped by an error, a rewind that made no
branch."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Literal, overload

from larik_jupyter.agent.undo_list import UndoList, nothing_left, undo_list
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellSources,
    FileHolder,
    held_by_nobody,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.errors import CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.store import CheckpointStore, UndoResult
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Usage
from larik_jupyter.plural import counted
from larik_jupyter.session.branch import check_prompt
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel import KernelSnapshots, kernel_snapshots
from larik_jupyter.tools.notebook import cell_restorer, cell_sources, file_holder

# A piece of a report line: words, a name (a path or a command: code in Markdown and HTML), or
# an emphasised word.
Span = tuple[Literal["text", "code", "strong"], str]
# What a line says, which the undo panel styles it by: the heading of an undone turn, an item
# under it (restored, kept as the user changed it, not restored, changed since, the kernel's
# variables), or what to do next.
LineKind = Literal["head", "restored", "skipped", "refused", "changed", "variables", "advice"]


def _code(text: str) -> Span:
    return ("code", text)


def _text(text: str) -> Span:
    return ("text", text)


@dataclass(frozen=True)
class ReportLine:
    """One line of an `UndoReport`: spans every rendering reads the same words from."""

    kind: LineKind
    spans: tuple[Span, ...]

    @property
    def is_item(self) -> bool:
        return self.kind not in ("head", "advice")

    def plain(self) -> str:
        return "".join(text for _, text in self.spans)

    def markdown(self) -> str:
        return "".join(_markdown_span(style, text) for style, text in self.spans)

    def html(self) -> str:
        return "".join(_html_span(style, text) for style, text in self.spans)


def _markdown_span(style: str, text: str) -> str:
    if style == "code":
        # A fence longer than any run of backticks in the name, so a name holding one stays whole.
        fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        return f"{fence}{pad}{text}{pad}{fence}"
    return f"**{text}**" if style == "strong" else text


def _html_span(style: str, text: str) -> str:
    escaped = html.escape(text)
    if style == "code":
        return f"<code>{escaped}</code>"
    return f"<strong>{escaped}</strong>" if style == "strong" else escaped


# How each kind of line is classed in HTML (the undo panel's stylesheet and its tests).
_HTML_CLASS: dict[LineKind, str] = {
    "head": "larik-outcome-head",
    "restored": "larik-restored",
    "skipped": "larik-skipped",
    "refused": "larik-refused",
    "changed": "larik-refused",
    "variables": "larik-variables-outcome",
    "advice": "larik-outcome-advice",
}


@dataclass(frozen=True)
class UndoReport(Sequence[UndoResult]):
    """What one undo did, the one source of its words in every front end: the turns it undid
    (`results`, newest first; `/undo` undoes one, `/undo --to N` down to prompt `prompt_number`,
    stopping after the first not fully undone), as Markdown (the magic), plain text (the CLI, text-only
    front ends), HTML (the undo panel and its static page), a one-line `summary` (the panel's
    status) and the `<system-note>` that tells the model.

    `again` in the renderings is the command that repeats the undo (default: `command()`);
    `buttons` says the front end offers restoring anyway or skipping as buttons, so the
    advice to run `again --force` or `--skip-changed` is left out."""

    results: tuple[UndoResult, ...] = ()
    prompt_number: int | None = None

    @overload
    def __getitem__(self, index: int) -> UndoResult: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[UndoResult]: ...

    def __getitem__(self, index: int | slice) -> UndoResult | Sequence[UndoResult]:
        return self.results[index]

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[UndoResult]:
        return iter(self.results)

    @property
    def ok(self) -> bool:
        """Whether every turn it reached was fully undone (nothing refused, nothing changed since)."""
        return all(result.ok for result in self.results)

    def command(self) -> str:
        """The magic that repeats this undo."""
        return "%larik /undo" if self.prompt_number is None else f"%larik /undo --to {self.prompt_number}"

    def lines(self, again: str | None = None, *, buttons: bool = False) -> list[ReportLine]:
        """The report, line by line (`again`, `buttons`: see the class)."""
        again = again or self.command()
        lines = [line for result in self.results for line in _result_lines(result, again, buttons)]
        if self.results and not self.ok and not self.results[-1].changed:
            last = self.results[-1]
            then = (_text("then run "), _code(again), _text(" again."))
            if self.prompt_number is not None:
                lines.append(ReportLine("advice", (
                    _text(f"Stopped at {last.label}: it was not fully undone, so the prompts before "
                          "it were left as they are. Fix the files above, "), *then,
                )))
            else:
                lines.append(ReportLine("advice", (
                    _text("The snapshot was kept: fix the files not restored, "), *then,
                )))
        return lines

    def markdown(self, again: str | None = None, *, buttons: bool = False) -> str:
        """Headings and advice as paragraphs, each turn's items as a list (blank lines between,
        so a paragraph after a list does not run into its last item)."""
        return "\n\n".join(
            "\n".join(f"- {line.markdown()}" for line in run) if listed else "\n\n".join(line.markdown() for line in run)
            for listed, run in groupby(self.lines(again, buttons=buttons), key=lambda line: line.is_item)
        )

    def plain(self, again: str | None = None, *, buttons: bool = False) -> str:
        """One line each, items as `- …`."""
        return "\n".join(
            f"- {line.plain()}" if line.is_item else line.plain() for line in self.lines(again, buttons=buttons)
        )

    def html(self, again: str | None = None, *, buttons: bool = False) -> str:
        """Headings and advice as paragraphs, each turn's items as a list, classed by kind."""
        return "".join(
            _html_list(list(run)) if listed
            else "".join(f'<p class="{_HTML_CLASS[line.kind]}">{line.html()}</p>' for line in run)
            for listed, run in groupby(self.lines(again, buttons=buttons), key=lambda line: line.is_item)
        )

    def summary(self) -> str:
        """One line on what it did (the undo panel's status)."""
        if not self.results:
            return "Nothing was undone."
        last = self.results[-1]
        if last.ok and not any(r.unrestored_variables for r in self.results):
            return f"Undid {', '.join(r.label for r in self.results)}."
        if last.ok:
            return (f"{', '.join(r.label for r in self.results).capitalize()}: undone, but some variables "
                    "could not be restored; see the report.")
        if last.changed:
            return (f"{last.label.capitalize()} was not undone: {', '.join(last.changed)} changed "
                    "since; restore them anyway or skip them.")
        if self.prompt_number is not None:
            return (f"Stopped at {last.label}: it was only partly undone, so older prompts were "
                    "left as they are; see the files not restored.")
        return f"{last.label.capitalize()} was only partly undone; see the files not restored."

    # -- failures: what an undo says when it undid nothing, or stopped ---------------------

    def nothing_left(self, session_id: str) -> str:
        """What an undo that found no turn to undo says (from prompt `prompt_number` on, with
        one); also what the undo panel and the sidebar say when they list no turn."""
        return nothing_left(session_id, self.prompt_number)

    def stopped(self, reason: str) -> str:
        """What an undo of several turns says when `reason` (a checkpoint error's sentence)
        stopped it: the turns it undid first, then why it stopped."""
        if not self.results:
            return f"Nothing was undone: {reason}"
        return f"Undid {', '.join(r.label for r in self.results)}, then stopped: {reason}"

    def rewind_stopped(self, prompt_number: int) -> str:
        """Why a rewind to before prompt `prompt_number` with files made no branch: the last turn
        this undo reached was not fully undone (files changed since it, or files not restored)."""
        failed = self.results[-1]
        if failed.changed:
            why = (f"{failed.label} was left as it is because {', '.join(failed.changed)} "
                   "changed since that turn; no branch was made. Rewind with files again, "
                   "forcing the restore (`force=True`, `--force`: their later changes are "
                   "lost) or skipping them (`skip_changed=True`, `--skip-changed`)")
        else:
            paths = ", ".join(f"{p} ({reason})" for p, reason in failed.refused)
            why = f"{failed.label} could not restore {paths}; no branch was made. Fix that and rewind with files again"
        return f"Rewind to before prompt {prompt_number} stopped: {why} (the turns already undone stay undone)."

    def system_note(self) -> str | None:
        """The `<system-note>` telling the model what was put back (None: nothing)."""
        sentences = [sentence for result in self.results for sentence in _note_sentences(result)]
        return "<system-note>" + " ".join(sentences) + "</system-note>" if sentences else None

    def __str__(self) -> str:
        return self.plain()

    def _repr_markdown_(self) -> str:
        return self.markdown() or "Nothing was undone."


def _html_list(items: list[ReportLine]) -> str:
    """A turn's items; the files changed since a turn not undone are marked as a list apart."""
    changed = " larik-changed" if any(item.kind == "changed" for item in items) else ""
    return f'<ul class="larik-outcome-files{changed}">' + "".join(
        f'<li class="{_HTML_CLASS[item.kind]}">{item.html()}</li>' for item in items
    ) + "</ul>"


def _result_lines(result: UndoResult, again: str, buttons: bool) -> list[ReportLine]:
    """One undone turn: its heading, then what became of each file, cell, directory and
    variable; for a turn left alone because the user changed its files since, which ones and
    how to go on."""
    which = result.label
    if result.changed:
        lines = [
            ReportLine("head", (
                _text(f"{which.capitalize()} was "), ("strong", "not undone"),
                _text(": these files changed since that turn, and undoing it would overwrite "
                      "those changes:"),
            )),
            *[ReportLine("changed", (_text("changed since: "), _code(path))) for path in result.changed],
        ]
        if not buttons:
            lines.append(ReportLine("advice", (
                _text("Run "), _code(f"{again} --force"),
                _text(" to restore them anyway (the later changes are lost), or "),
                _code(f"{again} --skip-changed"), _text(" to keep them as they are and undo the rest."),
            )))
        return lines
    # Variables left changed make the undo partial too, though the turn's snapshot is dropped.
    whole = result.ok and not result.unrestored_variables
    head = f"Undid {which}." if whole else f"{which.capitalize()} was only partly undone:"
    lines = [ReportLine("head", (_text(head),))]
    lines += [ReportLine("restored", (_text("restored "), _code(path))) for path in result.restored]
    for path, count, where in result.restored_cells:
        saved = " (save it to write the file)" if where == "the open notebook" else ""
        lines.append(ReportLine("restored", (
            _text(f"restored {count} cell{'s' if count != 1 else ''} of "), _code(path),
            _text(f" in {where}{saved}"),
        )))
    lines += [
        ReportLine("skipped", (_text("kept as you changed it since: "), _code(path)))
        for path in result.skipped
    ]
    lines += [
        ReportLine("refused", (("strong", "not restored"), _text(" "), _code(path), _text(f": {reason}")))
        for path, reason in result.refused
    ]
    lines += [
        ReportLine("restored", (_text("removed "), _code(f"{path}/"), _text(" (created by the turn)")))
        for path in result.removed_dirs
    ]
    lines += [
        ReportLine("refused", (_text("kept "), _code(f"{path}/"), _text(f": {reason}")))
        for path, reason in result.kept_dirs
    ]
    if variables := result.variables_text():
        lines.append(ReportLine("variables", (_text(variables),)))
    return lines


def _note_sentences(result: UndoResult) -> list[str]:
    """What one undone turn tells the model."""
    sentences = []
    if result.restored:
        sentences.append(
            f"The user reverted the file changes of {result.label}; these files are back "
            f"to their state before that turn: {', '.join(result.restored)}. Re-read them "
            "before relying on their content."
        )
    if result.restored_cells:
        sentences.append(
            f"The user reverted the notebook cells {result.label} changed; "
            + "; ".join(f"{path}: {counted(n, 'cell')}, in {where}" for path, n, where in result.restored_cells)
            + ". Read those notebooks again before editing their cells."
        )
    if result.skipped:
        sentences.append(
            f"The user changed these files or cells again after {result.label} and kept them as "
            f"they are now (not reverted): {', '.join(result.skipped)}."
        )
    if variables := result.variables_text():
        sentences.append(
            f"The user reverted {result.label} in the kernel: {variables}. Inspect these "
            "variables again before relying on their values."
        )
    return sentences


def undo_turn(
    checkpoints: CheckpointStore,
    *,
    cells: CellRestorer = restore_in_file,
    sources: CellSources = sources_in_file,
    force: bool = False,
    skip_changed: bool = False,
    holder: FileHolder = held_by_nobody,
) -> UndoReport:
    """Undo the turn the session's undo list names next (`UndoList.next`: the newest that
    changed files, cells or kernel variables still held; see `CheckpointStore.undo` for `force`
    and `skip_changed`): its files and cells, then the variables this process holds snapshots
    of. When the result lists files changed since the turn, nothing was done."""
    listed = undo_list(checkpoints)
    if listed.next is None:
        raise NothingToUndoError(listed.nothing_left())
    try:
        result = checkpoints.undo(cells, sources, force=force, skip_changed=skip_changed, passing=listed.passing,
                                  holder=holder)
    except NothingToUndoError:
        raise NothingToUndoError(listed.nothing_left()) from None
    if not result.changed:
        done = kernel_snapshots(checkpoints.session_id).restore(result.turn, result.variables, keep=not result.ok)
        result.restored_variables, result.removed_variables = done.restored, done.removed
        result.unrestored_variables, result.lost_variables = done.not_restored, done.gone
    return UndoReport((result,))


def undo_turns(
    checkpoints: CheckpointStore, env: Env, queue_note: Callable[[str], None], prompt_number: int | None, *,
    prompts: int, nothing_ok: bool = False, force: bool = False, skip_changed: bool = False,
) -> UndoReport:
    """Undo the newest turn, or with `prompt_number` each turn down to it (`undo_down_to`, of
    the session's `prompts`): files, cells where `env`'s kernel shows or keeps them, kernel
    variables; each report's note for the model goes to `queue_note`."""

    def newest() -> UndoReport:
        report = undo_turn(
            checkpoints, cells=cell_restorer(env), sources=cell_sources(env), force=force,
            skip_changed=skip_changed, holder=file_holder,
        )
        if note := report.system_note():
            queue_note(note)
        return report

    if prompt_number is None:
        return newest()
    return undo_down_to(
        checkpoints, prompt_number, prompts, newest, session_id=checkpoints.session_id, nothing_ok=nothing_ok
    )


def bind_variable(
    host: KernelHost | None, snapshots: KernelSnapshots | None, checkpoints: CheckpointStore, name: str, value: object
) -> None:
    """Bind kernel variable `name` to `value` as a change of the last turn, which undo puts
    back; see `Agent.bind`."""
    if host is None or snapshots is None:
        raise LarikError(f"Binding `{name}` needs a kernel; run the agent inside Jupyter (with a `host`).")
    existed = name in host.namespace
    snapshots.rebind(host.namespace, name, value)
    checkpoints.note_variables([(name, existed)])  # a failure says undo will not know


def undo_down_to(
    checkpoints: CheckpointStore, prompt_number: int, prompts: int, undo_newest: Callable[[], UndoReport], *,
    session_id: str, nothing_ok: bool = False,
) -> UndoReport:
    """Undo (`undo_newest`) every turn from the newest down to the one of prompt `prompt_number`
    (1-based, of the session's `prompts`, as `/rewind` counts), newest first, stopping after
    the first one not fully undone.

    Raises `NothingToUndoError` when no turn from that prompt on is left (unless
    `nothing_ok`), and `CheckpointError` naming what was undone when a turn cannot be undone
    at all or was saved without its prompt number."""
    check_prompt(session_id, prompt_number, prompts)
    results: list[UndoResult] = []
    listed: UndoList = undo_list(checkpoints)
    while (newest := listed.next) is not None:
        if newest.prompt is None:
            raise CheckpointError(UndoReport(tuple(results), prompt_number=prompt_number).stopped(
                f"turn {newest.turn} was saved without its prompt number (by an older "
                f"version), so it cannot be matched to prompt {prompt_number}; undo it on its own "
                "with `/undo`."
            ))
        if newest.prompt < prompt_number:
            break
        try:
            results += undo_newest()
        except CheckpointError as exc:
            raise CheckpointError(UndoReport(tuple(results), prompt_number=prompt_number).stopped(str(exc))) from None
        if not results[-1].ok:
            break
        listed = undo_list(checkpoints)
    report = UndoReport(tuple(results), prompt_number=prompt_number)
    if not results and not nothing_ok:
        raise NothingToUndoError(listed.nothing_left(prompt_number))
    return report


class RewindStopped(CheckpointError):
    """`rewind(prompt_number, files=True)` could not put every file back, so it made no branch; `results`
    are the turns it undid, the last one not fully."""

    def __init__(self, message: str, results: UndoReport) -> None:
        super().__init__(message)
        self.results = results


def record_note(session: Session, pending: str | None, note: str) -> str:
    """Add `note` to the `pending` one and record the sum in `session` (a usage entry with no
    tokens and no model, so it changes no model), so the next prompt carries it even after a
    restart; returns it."""
    combined = f"{pending}\n{note}" if pending else note
    session.append(Entry(type="usage", usage=Usage(), note=combined), sync=True)
    return combined


def record_undone(session: Session, report: UndoReport) -> None:
    """Record in `session` which prompts `report` undid (a usage entry with no tokens whose
    `undone` lists them): each turn whose snapshot was dropped, files skipped as asked
    included; a turn left as it was or only partly restored is not undone."""
    undone = sorted({r.prompt for r in report if r.ok and r.prompt is not None})
    if undone:
        session.append(Entry(type="usage", usage=Usage(), undone=undone), sync=True)
