"""Numbers in what the model was shown (`output_values`): outputs, prompts and code, with a
printed table's row and column labels, an object's address and pieces of identifiers left out;
`Values` looks a reply's claims up among them."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from larik_jupyter.session.number_claims import (
    CURRENCY,
    DIGIT,
    MULTIPLIERS,
    Claim,
    Sign,
    blanked,
    exponent_of,
    scaled,
)

# -- numbers in outputs, prompts and code ------------------------------------------------------

_ADDRESS = re.compile(r"\b0[xX][0-9a-fA-F]+\b")
# Execution counts, which count runs, not data: `In [12]`, `Out[12]`, `cell [12]`, and the
# notebook context's `[12] id abc:` / `[12]:` rows.
_COUNT = re.compile(r"(?m)^\[\d+\](?=:| id )|\b(?:In|Out|cell)\s?\[\d+\]")
# A number in what the model was shown: signed, with a currency sign, grouped by `,` (not
# followed by more digits: `1,234,5` is three numbers) or `_`, a fraction, an exponent, `%`.
_VALUE = re.compile(
    rf"(?=[-−+{CURRENCY}\d])(?P<sign>[-−+])?(?P<cur>[{CURRENCY}])?(?P<sign2>[-−])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?!,?\d)|\d{1,3}(?:_\d{3})+(?![\d_])|\d+)(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][-+]?\d+)?"
    r"(?P<mult>\s(?:thousand|million|billion|trillion)\b|[kKMB]\b)?"
    r"(?P<pct>\s?%)?"
)
_LEVEL = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)%")  # a quantile's label: `75%`
_GLUED = re.compile(r"[A-Za-z_]*\d|\.\d")  # after a number: it was a piece of an identifier or version
# Between a printed table's cells: two or more spaces, a tab, or one space before a negative
# number (pandas gives a minus sign the place of the second space).
_GAP = re.compile(r"\s{2,}|\t| (?=[-−]\d)")
_FOOTER = re.compile(r"^(?:Name: .*, )?(?:Length: \d+, )?dtype: \w+$")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


@dataclass(frozen=True)
class _Line:
    start: int  # offset in the text
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @property
    def indented(self) -> bool:
        return self.text[:1].isspace()

    def cells(self) -> list[str]:
        return _GAP.split(self.text.strip())

    def first_cell(self) -> tuple[int, int]:
        """Where the line's first cell is (in the text)."""
        start = len(self.text) - len(self.text.lstrip())
        gap = _GAP.search(self.text, start)
        return self.start + start, self.start + (gap.start() if gap else len(self.text.rstrip()))


def _row(line: _Line) -> bool:
    """A table row: not indented, two or more cells, the first not a `key: value` or `k = v`."""
    if line.blank or line.indented:
        return False
    cells = line.cells()
    return len(cells) >= 2 and not re.search(r": |=", cells[0])


def _lines(text: str) -> list[_Line]:
    out, at = [], 0
    for line in text.split("\n"):
        out.append(_Line(at, line))
        at += len(line) + 1
    return out


def _labels(text: str) -> list[tuple[int, int]]:
    """Where a printed table's labels are: the first cell of each row and every header line of
    a pandas-style table (rows parted into cells by `_GAP`), and the header row and index cells
    of a Markdown pipe table."""
    lines = _lines(text)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if _RULE.match(lines[i].text) and i > 0 and "|" in lines[i - 1].text:
            i = _pipe_table(lines, i, spans)
            continue
        if not _row(lines[i]):
            i += 1
            continue
        width = len(lines[i].cells())
        j = i + 1
        while j < len(lines) and _row(lines[j]) and len(lines[j].cells()) == width:
            j += 1
        header = i
        while header > 0 and not lines[header - 1].blank and lines[header - 1].indented:
            header -= 1
        if header == i and i > 1 and len(lines[i - 1].cells()) == 1 and lines[i - 2].indented:
            header = i - 2  # a header, then the index's name: `      sales` / `year`
        footer = j < len(lines) and bool(_FOOTER.match(lines[j].text.strip()))
        if j - i >= 2 or header < i or footer:
            spans += [(line.start, line.start + len(line.text)) for line in lines[header:i]]
            spans += [line.first_cell() for line in lines[i:j]]
        i = j
    return spans


def _pipe_table(lines: list[_Line], rule: int, spans: list[tuple[int, int]]) -> int:
    """Mark a pipe table's header row and, when its first header cell is empty (an index), each
    row's first cell; return the index of the line after the table."""
    head = lines[rule - 1]
    spans.append((head.start, head.start + len(head.text)))
    indexed = not head.text.strip().strip("|").split("|")[0].strip()
    end = rule + 1
    while end < len(lines) and "|" in lines[end].text:
        line = lines[end]
        if indexed:
            inner = line.text.lstrip()
            offset = len(line.text) - len(inner) + (1 if inner.startswith("|") else 0)
            cell = inner[1:] if inner.startswith("|") else inner
            stop = cell.find("|")
            spans.append((line.start + offset, line.start + offset + (stop if stop >= 0 else len(cell))))
        end += 1
    return end


@dataclass(frozen=True)
class Value:
    """A number found in a source: its size, and how it was signed (`+`, `-`, or "" for none);
    `level` marks a percentage that labels a table's row or column (`describe()`'s `75%`): it
    supports only a reply's percentage (`75% of orders`), never a plain number."""

    size: float
    sign: Literal["+", "-", ""]
    level: bool = False


def output_values(text: str) -> list[Value]:
    """Every number in `text` (an output, a prompt, code), leaving out object addresses, pieces
    of identifiers and versions, and printed tables' labels; a percentage also as its fraction,
    `1.5M` or `2 billion` also in plain units."""
    if not DIGIT.search(text):
        return []
    masked = _COUNT.sub(lambda m: " " * len(m.group()), _ADDRESS.sub(lambda m: " " * len(m.group()), text))
    values = []
    if "  " in masked or "|" in masked:  # only then can there be a table
        labels = _labels(masked)
        for start, end in labels:
            values += [Value(float(m.group(1)), "", level=True) for m in _LEVEL.finditer(masked, start, end)]
        masked = blanked(masked, labels)
    for m in _VALUE.finditer(masked):
        before = masked[m.start() - 1] if m.start() else " "
        signed = bool(m.group("sign")) and not (before.isalnum() or before in "_.)]")
        if not m.group("sign") and (before.isalnum() or before in "_."):
            continue  # a piece of a word or of a longer number: df2, x_3, the 5 of 1.2.5
        if _GLUED.match(masked, m.end("exp") if m.group("exp") else m.end("frac") if m.group("frac") else m.end("num")):
            continue
        sign: Literal["+", "-", ""] = ""
        if m.group("sign2") or (signed and m.group("sign") in "-−"):
            sign = "-"
        elif signed:
            sign = "+"
        digits = m.group("num").replace(",", "").replace("_", "") + (m.group("frac") or "")
        size = scaled(digits, exponent_of(m.group("exp")))
        if size is None:
            continue
        values.append(Value(size, sign))
        if m.group("mult"):
            values.append(Value(size * MULTIPLIERS[m.group("mult").strip().lower()], sign))
        if m.group("pct"):
            values.append(Value(size / 100, sign))
    return values


class Values:
    """The sorted numbers of some sources, by how they were signed, to look claims up in."""

    def __init__(self, sources: Iterable[str]) -> None:
        by_sign: dict[str, list[float]] = {"": [], "+": [], "-": [], "level": []}
        for text in sources:
            for value in output_values(text):
                by_sign["level" if value.level else value.sign].append(value.size)
        self.plain, self.plus, self.minus, self.levels = (sorted(by_sign[s]) for s in ("", "+", "-", "level"))

    @staticmethod
    def _near(values: list[float], size: float, tolerance: float) -> bool:
        i = bisect.bisect_left(values, size - tolerance)
        return i < len(values) and values[i] <= size + tolerance

    def _has(self, sign: Sign, size: float, tolerance: float) -> bool:
        lists = {
            "+": (self.plain, self.plus),
            "-": (self.minus,),
            "down": (self.minus, self.plain),
            "either": (self.plain, self.plus, self.minus),
        }[sign]
        return any(self._near(values, size, tolerance) for values in lists)

    def supports(self, claim: Claim) -> bool:
        tolerance = 0.5 * claim.step * (1 + 1e-9) + 1e-12
        if self._has(claim.sign, claim.value, tolerance) or claim.value == 0 and self._has("either", 0, tolerance):
            return True
        if claim.scale != 1.0 and not claim.percent and self._has(claim.sign, claim.value / claim.scale, tolerance / claim.scale):
            return True  # `10 million` against an output counting in millions: `revenue 10`
        if not claim.percent:
            return False
        return self._has(claim.sign, claim.value / 100, tolerance / 100) or self._near(self.levels, claim.value, tolerance)
