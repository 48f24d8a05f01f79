"""Numbers in the agent's replies traced to what the model was shown or given.

A number a reply states counts as found when the same number appears in the turn's outputs
(tool results, the notebook context and data its prompt carried), the prompt the user typed,
the code the turn ran (the tool calls' inputs, the cells `notebook_run` ran), or an output of
an earlier turn the model context still held (no compaction or `/clear` since). "The same"
allows the rounding the reply shows, a percentage for a fraction and back, `k`/`M`/`million`/
`billion` and scientific notation, and any currency sign; it never takes a piece of a longer
number, a printed table's row or column label, or an object's address, and a stated sign must
agree (see `docs/format.md`, "Numbers in replies"). Numbers found nowhere are "unfound".
Everything is derived from the transcript when it is rendered, so the live view, `/history`,
the export, the terminal and the server's transcript pages agree.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from larik_jupyter.llm.messages import Message, TextBlock, is_context_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.state import State

HINT = "not found in any output of this turn"
_STYLE = "text-decoration: underline dotted"

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
# Spans whose digits are never claims: code and links (anywhere in a reply) ...
_CODE = re.compile(
    r"(?=[`\]hH])(?:```.*?(?:```|$)|`[^`\n]*`"  # fenced and inline code
    r"|https?://\S+|\]\([^)]*\))",  # links
    re.DOTALL | re.IGNORECASE,
)
# ... and dates, periods, times and versions, each within a few words of a digit, so looked
# for only around digits (`_NEAR`): most of a reply's text is never scanned for them.
_DATES = re.compile(
    r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b"  # numeric dates
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"  # March 5, 2024
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}\b"  # 5 March 2024
    rf"|\b{_MONTH},?\s+\d{{4}}\b"  # March 2024
    r"|\b(?:in|since|until|by|from|of|year|during|through)\s+(?:19|20)\d{2}\b"  # in 2023
    r"|\b(?:[QH][1-4]|FY|CY)\s?[-/'’]?\s?(?:FY\s?)?(?:19|20)?\d{2}(?:/\d{2,4})?\b"  # Q3 2024, FY24
    r"|\b(?:19|20)\d{2}\s?[-/]?\s?[QH][1-4]\b"  # 2024 Q3, 2024-H1
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # times
    r"|\bv?\d+(?:\.\d+){2,}\b",  # versions
    re.IGNORECASE,
)
_NEAR = (40, 25)  # characters before and after a digit run that a `_DATES` match can reach
_DIGITS = re.compile(r"\d+")
_CURRENCY = "$€£¥"
# A number as a reply states it: a sign, a currency sign, the digits (grouped by `,`), a
# fraction, an exponent, a multiplier and `%`; not glued to a word, a dot or a hyphenated word.
_CLAIM = re.compile(
    rf"(?=[-−+{_CURRENCY}\d])(?<![\w.,/#\[])(?<!\w-)"
    rf"(?P<sign>[-−+](?=[{_CURRENCY}\d]))?(?P<cur>[{_CURRENCY}]\s?)?(?P<sign2>[-−](?=\d))?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][-+]?\d+|\s?[×x]\s?10\^[-−+]?\d+)?"
    r"(?P<mult>\s?(?:thousand|million|billion|trillion|mn|bn)\b|[kKMB]\b)?"
    r"(?P<pct>\s?%)?"
    r"(?![\w]|\.\d|,\d)"
)
_MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "mn": 1e6,
    "b": 1e9, "billion": 1e9, "bn": 1e9, "trillion": 1e12,
}
_ORDINAL = re.compile(r"[ \t]*(?:[-*+][ \t]+)?")
_POINTER = re.compile(
    r"(?:\b(?:cells?|prompts?|turns?|steps?|lines?|rows?|columns?|index|In|Out|execution count|#)\s*\[?\s*)$",
    re.IGNORECASE,
)
# Words before a number (within its clause) that make it approximate: `about 12,000` is
# stated to its last non-zero digit.
_APPROXIMATE = re.compile(
    r"(?:\b(?:about|around|roughly|approximately|approx\.|nearly|almost|circa|some)|~|≈)\s*$", re.IGNORECASE
)
# Words of a fall: the number is a decrease, so the output may show it negative or as a size.
_DOWN = re.compile(
    r"\b(?:f[ae]ll(?:s|ing)?|drop(?:s|ped|ping)?|decreas\w*|declin\w*|down|lower|less|fewer|lost|loss(?:es)?|"
    r"los(?:e|es|ing)|shr[aiu]nk\w*|reduc\w*|cut|dipped|sli[dp]\w*|plunge\w*|plummet\w*|sank|sunk|negative|minus|"
    r"below|under)\b",
    re.IGNORECASE,
)
# Words of a size without a direction: the output may show it with either sign.
_EITHER = re.compile(
    r"(?:\b(?:differ\w*|gap|apart|chang\w*|swing|moved?|magnitude|absolute|deviat\w*)\b|±)", re.IGNORECASE
)
_CLAUSE = re.compile(r"[.;:!?\n(]|,\s|\d")
_DIGIT = re.compile(r"\d")
_YEAR = re.compile(r"(?:19|20)\d{2}")

Sign = Literal["+", "-", "down", "either"]


@dataclass(frozen=True)
class Claim:
    """One number of a reply: where it is (`start`, `end` in the text), what it says (`value`,
    its size in plain units, a percentage as written: 45 for `45%`), the rounding it shows
    (`step`, the unit of its last digit) and the sign it states (`+` unless written `-`; `down`
    after words of a fall, `either` after words of a size such as "difference")."""

    start: int
    end: int
    text: str
    value: float
    step: float
    percent: bool
    sign: Sign = "+"


def _sign_of(masked: str, m: re.Match[str]) -> Sign:
    if m.group("sign") in ("-", "−") or m.group("sign2"):
        return "-"
    before = masked[max(m.start() - 60, 0): m.start()]
    clause = before[max((c.end() for c in _CLAUSE.finditer(before)), default=0):]
    after = masked[m.end(): m.end() + 20].split()[:1]
    words = clause + " " + " ".join(after)
    if _DOWN.search(words):
        return "down"
    if _EITHER.search(words):
        return "either"
    return "+"


def claims(text: str) -> list[Claim]:
    """The numbers `text` states (see `docs/format.md` for what is left out)."""
    if not _DIGIT.search(text):
        return []  # most replies: nothing to mask or look for
    masked = _masked(text)
    found = []
    for m in _CLAIM.finditer(masked):
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        percent = bool(m.group("pct"))
        scaled = bool(m.group("exp") or m.group("mult"))
        plain = not (frac or percent or scaled or m.group("cur"))
        if plain and len(digits) < 2:
            continue  # a single digit
        if plain and not (m.group("sign") or m.group("sign2")) and _YEAR.fullmatch(m.group("int")):
            continue  # a year is a period (and often a table's row label)
        before = masked[max(m.start() - _NEAR[0], 0): m.start()]  # what the word checks need
        at = m.end("frac") if frac else m.end("int")
        after = masked[at: at + 1]
        line = masked[masked.rfind("\n", 0, m.start()) + 1: m.start()]
        if plain and after in (".", ")") and _ORDINAL.fullmatch(line):
            continue  # a list ordinal: "12. item"
        if _POINTER.search(before):
            continue  # cell 12, prompt 3, In [14], row 42
        exponent = _exponent(m.group("exp"))
        multiplier = _MULTIPLIERS[m.group("mult").strip().lower()] if m.group("mult") else 1.0
        try:  # past what a float holds (`1e400`, 400 digits): not a number anyone reads
            unit = 10.0 ** -(len(frac) - 1) if frac else 1.0
            if not frac and _APPROXIMATE.search(before):
                unit = 10.0 ** (len(digits) - len(digits.rstrip("0")))
            scale = 10.0 ** exponent * multiplier
        except OverflowError:
            continue
        found.append(
            Claim(
                m.start(), m.end(), m.group().strip(), float(digits + frac) * scale, unit * scale, percent,
                _sign_of(masked, m),
            )
        )
    return found


def _masked(text: str) -> str:
    """`text` with code, links, dates, periods, times and versions blanked out."""
    masked = _CODE.sub(lambda m: " " * len(m.group()), text)
    spans: list[tuple[int, int]] = []
    start = end = -1
    for m in _DIGITS.finditer(masked):
        low, high = max(m.start() - _NEAR[0], 0), min(m.end() + _NEAR[1], len(masked))
        if low > end:
            if end > start:
                spans += [d.span() for d in _DATES.finditer(masked, start, end)]
            start = low
        end = high
    if end > start:
        spans += [d.span() for d in _DATES.finditer(masked, start, end)]
    return _blank(masked, spans) if spans else masked


def _exponent(text: str | None) -> int:
    if not text:
        return 0
    digits = re.search(r"[-−+]?\d+$", text)
    return int(digits.group().replace("−", "-")) if digits else 0


def _scaled(digits: str, exponent: int) -> float | None:
    """`digits` × 10^`exponent`, or None past what a float holds (`00e419` in an id)."""
    try:
        value = float(digits) * 10.0 ** exponent
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


# -- numbers in outputs, prompts and code ------------------------------------------------------

_ADDRESS = re.compile(r"\b0[xX][0-9a-fA-F]+\b")
# A number in what the model was shown: signed, with a currency sign, grouped by `,` (not
# followed by more digits: `1,234,5` is three numbers) or `_`, a fraction, an exponent, `%`.
_VALUE = re.compile(
    rf"(?=[-−+{_CURRENCY}\d])(?P<sign>[-−+])?(?P<cur>[{_CURRENCY}])?(?P<sign2>[-−])?"
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


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


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
    if not _DIGIT.search(text):
        return []
    masked = _ADDRESS.sub(lambda m: " " * len(m.group()), text)
    values = []
    if "  " in masked or "|" in masked:  # only then can there be a table
        labels = _labels(masked)
        for start, end in labels:
            values += [Value(float(m.group(1)), "", level=True) for m in _LEVEL.finditer(masked, start, end)]
        masked = _blank(masked, labels)
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
        size = _scaled(digits, _exponent(m.group("exp")))
        if size is None:
            continue
        values.append(Value(size, sign))
        if m.group("mult"):
            values.append(Value(size * _MULTIPLIERS[m.group("mult").strip().lower()], sign))
        if m.group("pct"):
            values.append(Value(size / 100, sign))
    return values


class _Values:
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
        if not claim.percent:
            return False
        return self._has(claim.sign, claim.value / 100, tolerance / 100) or self._near(self.levels, claim.value, tolerance)


@dataclass
class TurnNumbers:
    """What tracing one turn found: its reply texts (its assistant text blocks, in order) and
    the unfound claims of each."""

    replies: list[str] = field(default_factory=list)
    unfound: list[list[Claim]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(c) for c in self.unfound)

    def texts(self) -> list[str]:
        return [c.text for claims_ in self.unfound for c in claims_]


def _unfound(stated: list[list[Claim]], values: _Values) -> list[list[Claim]]:
    return [[c for c in found if not values.supports(c)] for found in stated]


def _trace(replies: Sequence[str], sources: Sequence[str], earlier: Iterable[_Values]) -> TurnNumbers:
    stated = [claims(text) for text in replies]
    if not any(stated):
        return TurnNumbers(list(replies), stated)  # nothing to look up: the sources are not even read
    left = _unfound(stated, _Values(sources))
    for values in earlier:
        if not any(left):
            break
        left = _unfound(left, values)
    return TurnNumbers(list(replies), left)


def trace(replies: Sequence[str], sources: Sequence[str], earlier: Iterable[Sequence[str]] = ()) -> TurnNumbers:
    """The claims of `replies` that no number of `sources` supports, nor of `earlier` (groups
    of earlier outputs, newest first, read only while some claim is still unfound)."""
    return _trace(replies, sources, (_Values(group) for group in earlier))


def mark(text: str, unfound: Sequence[Claim]) -> str:
    """`text` with each unfound claim wrapped in a dotted underline carrying the hint."""
    out, at = [], 0
    for claim in unfound:
        out.append(text[at:claim.start])
        shown = text[claim.start:claim.end]
        out.append(f'<span class="larik-unfound" style="{_STYLE}" title="{HINT}">{shown}</span>')
        at = claim.end
    out.append(text[at:])
    return "".join(out)


def footer(n: int) -> str:
    """`2 numbers not found in this turn's outputs` ("" when every number was found)."""
    if not n:
        return ""
    return f"{n} number{'s' if n != 1 else ''} not found in this turn's outputs"


def spread(parts: Sequence[str], traced: TurnNumbers) -> list[list[Claim]]:
    """The unfound claims of each of `parts`: texts that each join one or more consecutive
    replies of `traced`, in order, as a live view gathers streamed text (a part that starts
    with no reply left gets none)."""
    out: list[list[Claim]] = []
    replies, r = traced.replies, 0
    for text in parts:
        found: list[Claim] = []
        first = next((k for k in range(r, len(replies)) if replies[k] and text.startswith(replies[k])), None)
        at, r = (0, first) if first is not None else (len(text), r)
        while r < len(replies) and at < len(text) and text.startswith(replies[r], at):
            found += [replace(c, start=at + c.start, end=at + c.end) for c in traced.unfound[r]]
            at += len(replies[r])
            r += 1
        out.append(found)
    return out


# -- the sources of a turn ---------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    """The strings and numbers of a tool call's input, however nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield repr(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def outputs_of(messages: Iterable[Message]) -> list[str]:
    """What `messages` showed the model: tool results, and the notebook context and data a
    prompt carried (an undo's `<system-note>` is larik's, not an output)."""
    out: list[str] = []
    for message in messages:
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock) and is_context_text(block.text) and not block.text.startswith("<system-note>"):
                out.append(block.text)
        out += [result.text() for result in message.tool_results()]
    return out


def given_in(messages: Iterable[Message]) -> list[str]:
    """What a turn's `messages` gave the model besides outputs: the prompt the user typed and
    the code it ran (every tool call's input, the cell source a `notebook_run` ran)."""
    out: list[str] = []
    for message in messages:
        if message.is_prompt():
            out.append(message.prompt_text())
        out += [text for call in message.tool_uses() for text in _strings(call.input)]
        out += [result.source for result in message.tool_results() if result.source]
    return out


def _replies(turn: Sequence[Message]) -> tuple[list[str], list[tuple[int, int]]]:
    """The texts of a turn's assistant text blocks, and where each is (message, block)."""
    replies: list[str] = []
    keys: list[tuple[int, int]] = []
    for i, message in enumerate(turn):
        if message.role == "assistant":
            for j, block in enumerate(message.content):
                if isinstance(block, TextBlock):
                    replies.append(block.text)
                    keys.append((i, j))
    return replies, keys


def _trace_turn(
    turn: Sequence[Message], earlier: Iterable[_Values]
) -> tuple[dict[tuple[int, int], list[Claim]], TurnNumbers]:
    replies, keys = _replies(turn)
    numbers = _trace(replies, [*outputs_of(turn), *given_in(turn)], earlier)
    return {key: found for key, found in zip(keys, numbers.unfound, strict=True) if found}, numbers


def trace_turn(
    turn: Sequence[Message], earlier: Iterable[Sequence[Message]] = ()
) -> tuple[dict[tuple[int, int], list[Claim]], TurnNumbers]:
    """One turn's messages traced, with `earlier`: groups of the messages before it that the
    model context held, newest first (read only while a claim is unfound). Returns the unfound
    claims of each assistant text block by (message index, block index), and the turn's total."""
    return _trace_turn(turn, (_Values(outputs_of(group)) for group in earlier))


def split_turns(messages: Sequence[Message]) -> list[list[int]]:
    """The indexes of `messages` by turn: each prompt with the messages up to the next one
    (messages before the first prompt form a turn of their own)."""
    turns: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.is_prompt() or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns


def trace_entries(
    entries: Iterable[tuple[int, Entry]], before: Iterable[Sequence[Message]] = ()
) -> tuple[dict[int, dict[int, list[Claim]]], dict[int, TurnNumbers]]:
    """Entries keyed by their index (in file order) traced turn by turn, each turn with the
    outputs of the turns before it since the latest compaction (or, with none among the
    entries, of `before` too: groups of the messages in context before the first entry, newest
    first, read only when needed). Returns the unfound claims by entry index and block index,
    and each turn with any by its last message's entry index."""
    segments: list[list[tuple[int, Message]]] = [[]]
    for index, entry in entries:
        if entry.type == "compaction":
            segments.append([])
        elif entry.type == "message" and entry.message is not None:
            segments[-1].append((index, entry.message))
    unfound: dict[int, dict[int, list[Claim]]] = {}
    turns: dict[int, TurnNumbers] = {}
    for n, segment in enumerate(segments):
        _trace_segment(segment, _Memo(before) if n == 0 else _Memo(()), unfound, turns)
    return unfound, turns


def _trace_segment(
    segment: list[tuple[int, Message]],
    outside: _Memo,
    unfound: dict[int, dict[int, list[Claim]]],
    turns: dict[int, TurnNumbers],
) -> None:
    """Trace the turns of one model context (`segment`, keyed messages), adding to `unfound`
    and `turns`; `outside` holds the context's messages before the segment."""
    messages = [message for _, message in segment]
    grouped = split_turns(messages)
    made: dict[int, _Values] = {}  # each turn's outputs become numbers once, as later turns look

    def values_of(u: int) -> _Values:
        if u not in made:
            made[u] = _Values(outputs_of(messages[k] for k in grouped[u]))
        return made[u]

    for t, turn in enumerate(grouped):
        earlier = _chain((values_of(u) for u in range(t - 1, -1, -1)), outside.values())
        found, traced = _trace_turn([messages[k] for k in turn], earlier)
        for (k, block), claims_ in found.items():
            unfound.setdefault(segment[turn[k]][0], {})[block] = claims_
        if traced.count:
            turns[segment[turn[-1]][0]] = traced


class _Memo:
    """The numbers of groups of messages, made on first use and kept, as several turns look
    at the same earlier outputs."""

    def __init__(self, groups: Iterable[Sequence[Message]]) -> None:
        self._groups = iter(groups)
        self._made: list[_Values] = []

    def values(self) -> Iterator[_Values]:
        """The groups' numbers, in order."""
        i = 0
        while True:
            while i >= len(self._made):
                group = next(self._groups, None)
                if group is None:
                    return
                self._made.append(_Values(outputs_of(group)))
            yield self._made[i]
            i += 1


def _chain(*parts: Iterator[_Values]) -> Iterator[_Values]:
    for part in parts:
        yield from part


def trace_last_turn(state: State) -> TurnNumbers | None:
    """The newest turn of a session traced with the earlier outputs its context held (None
    before the first prompt)."""
    if not state.prompt_positions:
        return None
    at = state.prompt_positions[-1]
    messages = state.all
    earlier = ([messages[i]] for i in range(at - 1, state.context_start - 1, -1))
    return trace_turn(messages[at:], earlier)[1]
