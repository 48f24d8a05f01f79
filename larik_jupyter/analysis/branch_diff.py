"""Two branches compared: the prefix they share (their message entries keep their ids when a
branch is made, so it is the longest run of equal ids), then each branch's own prompts and the
outputs of its `python` / `notebook_run` calls side by side, marking the outputs that differ;
secrets redacted as in the exports."""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

from larik_jupyter.analysis.compare import block_bytes, image_diff, text_diff
from larik_jupyter.analysis.steps import Step, read_branch
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.plural import counted
from larik_jupyter.redaction import Redactor
from larik_jupyter.session import catalog
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.session.summary import first_line

COLUMN = 48


@dataclass
class OutputPair:
    """The n-th code output after the fork point in each branch (None: that branch has fewer)."""

    a: Step | None
    b: Step | None
    differs: bool


@dataclass
class BranchDiff:
    """`a` and `b` compared: the prompts they share, then what each did on its own; `cwd` is
    the project whose config names the secrets `render` redacts (None: the personal config)."""

    a: str
    b: str
    common: list[str]
    a_prompts: list[str] = field(default_factory=list)
    b_prompts: list[str] = field(default_factory=list)
    pairs: list[OutputPair] = field(default_factory=list)
    cwd: Path | None = None
    undone: dict[str, list[int]] = field(default_factory=dict)  # "A"/"B": its prompts an undo put back

    @property
    def fork_prompt(self) -> int:
        """The number of the last prompt both share (0: they share none)."""
        return len(self.common)

    @property
    def differs(self) -> bool:
        return any(pair.differs for pair in self.pairs)

    def render(self) -> str:
        """The comparison as text: the common prefix, each branch's prompts, then the outputs
        side by side (`≠` before outputs that differ), secrets redacted."""
        redactor = redactor_for(self.cwd)
        n = self.fork_prompt
        lines = [f"A: {self.a}", f"B: {self.b}", ""]
        if n:
            lines.append(f"Common prefix: prompts 1-{n}; fork point: after prompt {n}.")
            lines += [f"  {i}. {text}" for i, text in enumerate(self.common, 1)]
        else:
            lines.append("Common prefix: none; fork point: before prompt 1.")
        for name, prompts in (("A", self.a_prompts), ("B", self.b_prompts)):
            lines += ["", f"{name} after the fork point:"]
            lines += [f"  {i}. {text}" for i, text in enumerate(prompts, n + 1)] or ["  (no prompts)"]
        for name, numbers in self.undone.items():
            if numbers:
                which = ", ".join(str(n) for n in numbers)
                lines += ["", f"{name}'s undone prompt{'s' if len(numbers) > 1 else ''} {which}: left out, "
                          "as an undo put their changes back."]
        lines += ["", "Outputs of the code each branch kept after the fork point (≠: they differ):"]
        if not self.pairs:
            lines.append("  (neither branch ran code after the fork point)")
        for pair in self.pairs:
            left, right = _block(pair.a, redactor), _block(pair.b, redactor)
            mark = "≠" if pair.differs else "="
            for i, (x, y) in enumerate(zip_longest(left, right, fillvalue="")):
                lines.append(f"{mark if i == 0 else ' '} {x:<{COLUMN}} | {y}".rstrip())
        return redactor.text("\n".join(lines))


def _block(step: Step | None, redactor: Redactor) -> list[str]:
    """A step's output in lines of the column's width, redacted before it is wrapped (a wrap
    would cut a secret in two)."""
    if step is None:
        return ["(no call)"]
    head = f"[prompt {step.prompt}] {step.summary or step.kind}"
    body = redactor.text(step.recorded) or "(no output)"
    if step.images:
        body += f"\n[{counted(len(step.images), 'image')}]"
    out = [head]
    for line in body.splitlines()[:12]:
        out += textwrap.wrap(line, COLUMN) or [""]
    return out


def _message_ids(path: os.PathLike[str]) -> list[str]:
    entries = load_entries(path).entries
    state = replay(entries)
    return [entries[i].id or "" for i in state.entry_indexes]


def _prompt_count(path: os.PathLike[str], messages: int) -> int:
    state = replay(load_entries(path).entries)
    return sum(1 for index in state.prompt_positions if index < messages)


def diff_branches(a: str | os.PathLike[str], b: str | os.PathLike[str], *, cwd: str | os.PathLike[str] | None = None,
                  rtol: float = 1e-6) -> BranchDiff:
    """Compare sessions `a` and `b` (ids, looked up in `cwd`'s folder first, or files)."""
    path_a, path_b = catalog.resolve(a, cwd), catalog.resolve(b, cwd)
    ids_a, ids_b = _message_ids(path_a), _message_ids(path_b)
    shared = 0
    for id_a, id_b in zip(ids_a, ids_b, strict=False):
        if not id_a or id_a != id_b:
            break
        shared += 1
    fork = min(_prompt_count(path_a, shared), _prompt_count(path_b, shared))
    branch_a, branch_b = read_branch(path_a), read_branch(path_b)
    common = [first_line(s.text) for s in branch_a.steps if s.kind == "prompt" and s.prompt <= fork]
    result = BranchDiff(branch_a.session_id, branch_b.session_id, common, cwd=branch_a.cwd,
                        undone={"A": branch_a.undone, "B": branch_b.undone})
    result.a_prompts = [first_line(s.text) for s in branch_a.steps if s.kind == "prompt" and s.prompt > fork]
    result.b_prompts = [first_line(s.text) for s in branch_b.steps if s.kind == "prompt" and s.prompt > fork]
    outputs_a = [s for s in branch_a.steps if s.kind == "code" and s.prompt > fork]
    outputs_b = [s for s in branch_b.steps if s.kind == "code" and s.prompt > fork]
    for x, y in zip_longest(outputs_a, outputs_b):
        differs = x is None or y is None or bool(
            text_diff(x.recorded, y.recorded, rtol)
            or image_diff([block_bytes(i) for i in x.images], [block_bytes(i) for i in y.images])
        )
        result.pairs.append(OutputPair(x, y, differs))
    return result
