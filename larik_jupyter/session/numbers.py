"""Numbers in the agent's replies traced to the outputs of the same turn.

Each number a reply states (integers of two or more digits, decimals, percentages, with
thousands separators; not list ordinals, cell or prompt numbers, years and times in dates,
version numbers, or anything inside code, links or identifiers) is looked up among the numbers
of that turn's tool results and of the notebook context its prompt carried, allowing the
rounding the reply shows (`12.3` matches 12.345; `45%` matches 45 and 0.4512). Numbers found
nowhere are "unfound". Everything is derived from the transcript when it is rendered, so the
live view, `/history`, the export and the terminal agree.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from larik_jupyter.llm.messages import Message, TextBlock, is_context_text

HINT = "not found in any output of this turn"
_STYLE = "text-decoration: underline dotted"

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
# Spans whose digits are never claims: code, links, dates, times, versions.
_MASKS = re.compile(
    r"```.*?(?:```|$)|`[^`\n]*`"  # fenced and inline code
    r"|https?://\S+|\]\([^)]*\)"  # links
    r"|\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b"  # numeric dates
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"  # March 5, 2024
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}\b"  # 5 March 2024
    rf"|\b{_MONTH},?\s+\d{{4}}\b"  # March 2024
    r"|\b(?:in|since|until|by|from|of|year)\s+(?:19|20)\d{2}\b"  # in 2023
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # times
    r"|\bv?\d+(?:\.\d+){2,}\b",  # versions
    re.DOTALL | re.IGNORECASE,
)
# A number as a reply states it: not glued to a word, a dot or a hyphenated word before it.
_CLAIM = re.compile(
    r"(?<![\w.,/#$\[])(?<!\w-)"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?P<pct>\s?%)?"
    r"(?![\w]|\.\d|,\d)"
)
_ORDINAL = re.compile(r"(?:^|\n)[ \t]*(?:[-*+][ \t]+)?$")
_POINTER = re.compile(
    r"(?:\b(?:cells?|prompts?|turns?|steps?|lines?|rows? index|index|In|Out|execution count|#)\s*\[?\s*)$",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
# Numbers in outputs: plain, with thousands separators, or in scientific notation.
_VALUE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Claim:
    """One number of a reply: where it is (`start`, `end` in the text) and what it says."""

    start: int
    end: int
    text: str
    value: float
    decimals: int
    percent: bool


def claims(text: str) -> list[Claim]:
    """The numbers `text` states (see the module docstring for what is left out)."""
    if not _DIGIT.search(text):
        return []  # most replies: nothing to mask or look for
    masked = _MASKS.sub(lambda m: " " * len(m.group()), text)
    found = []
    for m in _CLAIM.finditer(masked):
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        percent = bool(m.group("pct"))
        if len(digits) < 2 and not frac and not percent:
            continue
        before = masked[: m.start()]
        after = masked[m.end("frac") if frac else m.end("int"):]
        if not frac and not percent and after[:1] in (".", ")") and _ORDINAL.search(before):
            continue  # a list ordinal: "12. item"
        if _POINTER.search(before):
            continue  # cell 12, prompt 3, In [14]
        found.append(Claim(m.start(), m.end(), m.group().strip(), float(digits + frac), max(len(frac) - 1, 0), percent))
    return found


def output_values(text: str) -> list[float]:
    """Every number in an output, as absolute values (a grouped `1,234` also as 1 and 234)."""
    values = []
    for m in _VALUE.finditer(text):
        token = m.group()
        try:
            values.append(float(token.replace(",", "")))
        except ValueError:
            continue
        if "," in token:
            values += [float(part) for part in token.split(",") if part.replace(".", "", 1).isdigit()]
    return values


class _Values:
    """The sorted numbers of a turn's outputs, to look claims up in."""

    def __init__(self, sources: Sequence[str]) -> None:
        self.sorted = sorted(v for text in sources for v in output_values(text))

    def near(self, value: float, tolerance: float) -> bool:
        i = bisect.bisect_left(self.sorted, value - tolerance)
        return i < len(self.sorted) and self.sorted[i] <= value + tolerance

    def supports(self, claim: Claim) -> bool:
        tolerance = 0.5 * 10 ** -claim.decimals * (1 + 1e-9) + 1e-12
        if self.near(claim.value, tolerance):
            return True
        return claim.percent and self.near(claim.value / 100, tolerance / 100)


@dataclass
class TurnNumbers:
    """What tracing one turn found: per reply text (in the order given), its unfound claims."""

    unfound: list[list[Claim]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(c) for c in self.unfound)

    def texts(self) -> list[str]:
        return [c.text for claims_ in self.unfound for c in claims_]


def trace(replies: Sequence[str], sources: Sequence[str]) -> TurnNumbers:
    """The claims of `replies` that no number of `sources` supports."""
    stated = [claims(text) for text in replies]
    if not any(stated):
        return TurnNumbers(stated)  # nothing to look up: the outputs are not even read
    values = _Values(sources)
    return TurnNumbers([[c for c in found if not values.supports(c)] for found in stated])


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


def split_turns(messages: Sequence[Message]) -> list[list[int]]:
    """The indexes of `messages` by turn: each prompt with the messages up to the next one
    (messages before the first prompt form a turn of their own)."""
    turns: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.is_prompt() or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns


def trace_messages(messages: Sequence[Message]) -> tuple[dict[tuple[int, int], list[Claim]], TurnNumbers]:
    """One turn's messages traced: the unfound claims of each assistant text block by
    (message index, block index), and the turn's total."""
    replies: list[str] = []
    keys: list[tuple[int, int]] = []
    sources: list[str] = []
    for i, message in enumerate(messages):
        for j, block in enumerate(message.content):
            if message.role == "assistant" and isinstance(block, TextBlock):
                replies.append(block.text)
                keys.append((i, j))
            elif message.role == "user" and isinstance(block, TextBlock) and is_context_text(block.text):
                if not block.text.startswith("<system-note>"):
                    sources.append(block.text)
        sources += [result.text() for result in message.tool_results()]
    numbers = trace(replies, sources)
    return {key: found for key, found in zip(keys, numbers.unfound, strict=True) if found}, numbers


def trace_turns(
    messages: Sequence[tuple[int, Message]],
) -> tuple[dict[int, dict[int, list[Claim]]], dict[int, TurnNumbers]]:
    """Messages keyed by their entry index (in file order) traced turn by turn: the unfound
    claims by entry index and block index, and each turn with any by its last message's index."""
    unfound: dict[int, dict[int, list[Claim]]] = {}
    turns: dict[int, TurnNumbers] = {}
    for turn in split_turns([message for _, message in messages]):
        found, traced = trace_messages([messages[k][1] for k in turn])
        for (k, block), claims_ in found.items():
            unfound.setdefault(messages[turn[k]][0], {})[block] = claims_
        if traced.count:
            turns[messages[turn[-1]][0]] = traced
    return unfound, turns
