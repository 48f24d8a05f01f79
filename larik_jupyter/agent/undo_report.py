"""What one undo did, told once (`UndoReport`): the turns it undid, for the user as Markdown,
plain text and HTML, and for the model as the `<system-note>` the next prompt carries; and its
failures told there too: nothing left to undo, an undo of several turns stopped by an error, a
rewind that made no branch. Built by `undo.py`, rendered by every front end."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Literal, overload

from larik_jupyter.agent.undo_list import nothing_left
from larik_jupyter.checkpoint.store import UndoResult
from larik_jupyter.plural import counted

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
