"""What a notebook check found, and how it reads as text (the tool's result, terminals) and as
static HTML (headless runs); the JupyterLab widget renders the same JSON (`as_json`)."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from larik_jupyter.nbjson.cells import cell_number
from larik_jupyter.plural import counted
from larik_jupyter.session.call_summary import short_cell_id


@dataclass(frozen=True)
class CellRef:
    """A cell by its position (0-based) and id; `edited_in` is the prompt whose agent call last
    wrote it (its `metadata.larik.prompt`), None for a cell the agent never touched."""

    index: int
    id: str
    edited_in: int | None = None

    @property
    def label(self) -> str:
        """`cell 3 (2363e7e8…)`: as people read it, a long id shortened (`short_cell_id`)."""
        return self._named(short_cell_id(self.id))

    @property
    def full_label(self) -> str:
        """`cell 3 (<the whole id>)`: for the model, which edits the cell by its id."""
        return self._named(self.id)

    def _named(self, shown: str) -> str:
        edited = f", edited by the agent in prompt {self.edited_in}" if self.edited_in is not None else ""
        return f"{cell_number(self.index)} ({shown}{edited})"


@dataclass(frozen=True)
class Failure:
    cell: CellRef
    error: str


@dataclass(frozen=True)
class Hidden:
    """A name cells use that only the live kernel has; `made_in` is the prompt whose agent call
    made it, as the session records it (None: not the agent, as far as the record says)."""

    name: str
    cells: list[CellRef]
    made_in: int | None = None


@dataclass(frozen=True)
class OutOfOrder:
    """`cell` ran as In [`count`], before `above` (In [`above_count`]) though it comes after it."""

    cell: CellRef
    count: int
    above: CellRef
    above_count: int


@dataclass(frozen=True)
class Difference:
    """A variable whose value differs: as the user's (live) kernel has it, and the scratch one."""

    name: str
    kernel: str
    scratch: str


@dataclass(frozen=True)
class Refusal:
    """A change outside the scratch copy (or a shell command) a cell tried, and was refused."""

    cell: CellRef
    message: str


@dataclass(frozen=True)
class ChangedReceipt:
    """A receipt of a cell that differs from the one its last `notebook_run` in the session
    recorded (`fan-out was +312, now +1,906`)."""

    cell: CellRef
    change: str


@dataclass(frozen=True)
class Skipped:
    cell: CellRef
    why: str


@dataclass
class CheckReport:
    """One check of `notebook` (as shown; `path` is where it is) in a scratch `kernel`."""

    notebook: str
    kernel: str
    path: str = ""
    ran: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    hidden: list[Hidden] = field(default_factory=list)
    out_of_order: list[OutOfOrder] = field(default_factory=list)
    differing: list[Difference] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    receipts: list[ChangedReceipt] = field(default_factory=list)
    not_run: list[CellRef] = field(default_factory=list)
    copy_of: str = ""  # the project folder the cells ran a scratch copy of
    opening: str = ""  # the first line: what did not hold ("Not confined by the operating system: …")
    closing: str = ""  # the last line: the confinement ("the cells ran in a scratch copy of …, confined by …")
    confined: bool = False  # whether the operating system kept the cells from changing files outside the copy
    stopped: str = ""  # why the run ended early: "stopped", "total timeout", "timeout in cell 3 (…)"
    values_note: str = ""  # why values were not (all) compared

    @property
    def problems(self) -> int:
        return (len(self.failures) + len(self.hidden) + len(self.out_of_order) + len(self.differing) + len(self.refused)
                + len(self.receipts))

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = self.problems
        return data

    def sections(self, *, full: bool = False) -> list[tuple[str, list[tuple[str, CellRef | None]]]]:
        """Each heading with its lines; a line names the cell it is about, for links. Cells are
        named as people read them (`CellRef.label`), with `full` by their whole ids."""

        def n(cell: CellRef) -> str:
            return cell.full_label if full else cell.label

        out: list[tuple[str, list[tuple[str, CellRef | None]]]] = []
        if self.failures:
            out.append(("Cells that fail in the scratch kernel", [(f"{n(f.cell)}: {f.error}", f.cell) for f in self.failures]))
        if self.hidden:
            lines: list[tuple[str, CellRef | None]] = []
            for h in self.hidden:
                users = ", ".join(n(c) for c in h.cells)
                why = (f"made by the agent in prompt {h.made_in}, in no cell: run `/notebook` or add the cell"
                       if h.made_in is not None else "defined by a deleted or edited cell, or by hand")
                lines.append((f"{h.name}: used by {users}; only the live kernel has it ({why})",
                              h.cells[0] if h.cells else None))
            out.append(("Hidden state", lines))
        if self.out_of_order:
            out.append(("Run out of order in the live kernel", [
                (f"{n(o.cell)} ran as In [{o.count}], before {n(o.above)} above it ran as In [{o.above_count}]", o.cell)
                for o in self.out_of_order
            ]))
        if self.differing:
            out.append(("Values that differ between the live and the scratch kernel", [
                (f"{d.name}: live {d.kernel}, scratch {d.scratch}", None) for d in self.differing
            ]))
        if self.receipts:
            out.append(("Receipts that changed since the live run", [
                (f"{n(r.cell)}: {r.change}", r.cell) for r in self.receipts
            ]))
        if self.refused:
            out.append(("Refused: changes outside the scratch copy, shell commands and connections", [
                (f"{n(r.cell)}: {r.message}", r.cell) for r in self.refused
            ]))
        if self.skipped:
            out.append(("Not run", [(f"{n(s.cell)}: {s.why}", s.cell) for s in self.skipped]))
        return out

    def headline(self) -> str:
        parts = [f"Checked {self.notebook} top to bottom in a scratch {self.kernel} kernel: {counted(self.ran, 'cell')} run"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        head = ", ".join(parts) + f" ({self.seconds:.1f} s)."
        if self.stopped:
            rest = f"; {counted(len(self.not_run), 'cell')} after it not run" if self.not_run else ""
            head += f" The run ended early ({self.stopped}{rest})."
        if not self.problems:
            checked = ["no cell failed", "no hidden state", "no out-of-order run", "no differing value", "nothing refused"]
            if self.values_note:  # hidden state and values were not (all) looked at
                checked = [c for c in checked if c not in ("no hidden state", "no differing value")]
            head += f" No problems found: {', '.join(checked)}."
        else:
            head += f" {counted(self.problems, 'problem')} found."
        if self.values_note:
            head += f" {self.values_note}"
        return head

    def footer(self) -> str:
        """The last line: what was not changed, and the confinement the cells ran under."""
        if not self.closing:
            return ""
        if self.confined:
            return f"The live kernel, the notebook and your files were not changed: {self.closing}"
        return f"The live kernel and the notebook were not changed; {self.closing}"

    def text(self, *, full: bool = False) -> str:
        """The report as text; `full`: cells by their whole ids (the tool's result, for the model)."""
        lines = [self.opening] if self.opening else []
        lines.append(self.headline())
        for heading, items in self.sections(full=full):
            lines += ["", f"{heading}:"] + [f"- {text}" for text, _ in items]
        return "\n".join(lines + (["", self.footer()] if self.closing else []))

    def html(self) -> str:
        """Static HTML: the same lines, for a page nothing runs in."""
        body = [f"<p><b>{html.escape(self.opening)}</b></p>"] if self.opening else []
        body.append(f"<p>{html.escape(self.headline())}</p>")
        for heading, items in self.sections():
            body.append(f"<p><b>{html.escape(heading)}</b></p><ul>")
            body += [f"<li>{html.escape(text)}</li>" for text, _ in items]
            body.append("</ul>")
        if self.closing:
            body.append(f"<p>{html.escape(self.footer())}</p>")
        return '<div class="larik-check">' + "".join(body) + "</div>"
