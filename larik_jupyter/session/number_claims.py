"""Numbers a reply states (`claims`): each with the rounding it shows, its sign and whether it
is a percentage, and what reads as code, a date or a list marker left out; `numbers.py` traces
them to the turn's outputs."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
# Spans whose digits are never claims: code and links (anywhere in a reply); a fenced block
# with no language or a language of plain text (`text`, `output`, `console`) is what the reply
# says an output was, so its numbers are claims ...
_CODE = re.compile(
    r"(?=[`\]hH])(?:```(?!(?:text|txt|plain|plaintext|output|console|none)?[ \t]*\n)[^\n]*\n.*?(?:```|$)"
    r"|```(?:text|txt|plain|plaintext|output|console|none)?[ \t]*\n"  # its opening line only
    r"|`[^`\n]*`"  # inline code
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
CURRENCY = "$€£¥"
# A number as a reply states it: a sign, a currency sign, the digits (grouped by `,`), a
# fraction, an exponent, a multiplier and `%`; not glued to a word, a dot or a hyphenated word.
_CLAIM = re.compile(
    rf"(?=[-−+{CURRENCY}\d])(?<![\w.,/#\[])(?<!\w-)"
    rf"(?P<sign>[-−+](?=[{CURRENCY}\d]))?(?P<cur>[{CURRENCY}]\s?)?(?P<sign2>[-−](?=\d))?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][-+]?\d+|\s?[×x]\s?10\^[-−+]?\d+)?"
    r"(?P<mult>\s?(?:thousand|million|billion|trillion|mn|bn)\b|[kKMB]\b)?"
    r"(?P<pct>\s?%)?"
    r"(?![\w]|\.\d|,\d)"
)
MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "mn": 1e6,
    "b": 1e9, "billion": 1e9, "bn": 1e9, "trillion": 1e12,
}
_ORDINAL = re.compile(r"[ \t]*(?:[-*+][ \t]+)?")
_POINTER = re.compile(
    r"(?:\b(?:cells?|prompts?|turns?|steps?|lines?|rows?|columns?|In|Out|execution count|#)\s*\[?\s*)$",
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
DIGIT = re.compile(r"\d")
_YEAR = re.compile(r"(?:19|20)\d{2}")

Sign = Literal["+", "-", "down", "either"]


@dataclass(frozen=True)
class Claim:
    """One number of a reply: where it is (`start`, `end` in the text), what it says (`value`,
    its size in plain units, a percentage as written: 45 for `45%`), the rounding it shows
    (`step`, the unit of its last digit) and the sign it states (`+` unless written `-`; `down`
    after words of a fall, `either` after words of a size such as "difference"); `scale` is
    what a multiplier or exponent multiplied it by (1.0: none), so `10 million` is also read
    as the `10` of an output that counts in millions."""

    start: int
    end: int
    text: str
    value: float
    step: float
    percent: bool
    sign: Sign = "+"
    scale: float = 1.0


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
    if not DIGIT.search(text):
        return []  # most replies: nothing to mask or look for
    masked = _masked(text)
    found = []
    for m in _CLAIM.finditer(masked):
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        percent = bool(m.group("pct"))
        scaled = bool(m.group("exp") or m.group("mult"))
        plain = not (frac or percent or scaled or m.group("cur"))
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
        exponent = exponent_of(m.group("exp"))
        multiplier = MULTIPLIERS[m.group("mult").strip().lower()] if m.group("mult") else 1.0
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
                _sign_of(masked, m), scale,
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
    return blanked(masked, spans) if spans else masked


def exponent_of(text: str | None) -> int:
    if not text:
        return 0
    digits = re.search(r"[-−+]?\d+$", text)
    return int(digits.group().replace("−", "-")) if digits else 0


def scaled(digits: str, exponent: int) -> float | None:
    """`digits` × 10^`exponent`, or None past what a float holds (`00e419` in an id)."""
    try:
        value = float(digits) * 10.0 ** exponent
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def blanked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)
