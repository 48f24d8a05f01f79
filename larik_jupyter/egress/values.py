"""The index of restricted sources' distinctive values (`value_forms.py` says which they are)
and where they occur in text: each value found by its token, as a whole token, by one compiled
multi-pattern search over the text's bytes; a large batch searched on two cores. This index
is the net under the tags, which mark content where it is made.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import ahocorasick_rs


class Found(NamedTuple):
    """One distinctive value of a source: the text, the source (`variable:df`, `file:x.csv`)
    and the part of it (`df.email`) the marker names."""

    text: str
    source: str
    label: str
    key: bytes | None = None  # the token, when the value is that one token (no check needed)


# Token characters: ASCII letters, digits and `_@.+-`, and every byte of a non-ASCII
# character; anything else separates tokens. ASCII letters are made lower case in the same
# pass: values are found whatever their case (`CUST@EX.COM`, `1.55E+04`). Bytes, so that
# splitting 400 KB takes a few ms.
_KEEP = frozenset(b"_@.+-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_SPLIT = bytes((c | 32 if 65 <= c <= 90 else c) if c in _KEEP or c >= 128 else 32 for c in range(256))
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Digits in groups (`1234 5678`, `555-123-4567`): found as the digits they hold, joined.
DIGIT_RUN = re.compile(r"\d+(?:[ -]\d+)+")
MIN_DIGITS = 6  # digits a grouped number needs to be looked at joined


def lower(text: str) -> str:
    """`text` with its ASCII letters in lower case (offsets unchanged)."""
    return text.translate(_LOWER)


def tokens(text: str) -> list[bytes]:
    """`text`'s tokens as UTF-8 bytes, ASCII letters in lower case."""
    return text.encode("utf-8", "surrogatepass").translate(_SPLIT).split()


def joined_digits(text: str) -> str:
    """The digits of `text` when it is a number written in groups (`555-123-4567`: `5551234567`),
    else ""."""
    if " " not in text and "-" not in text:
        return ""  # no groups (most values: plain numbers, words, emails)
    digits = re.sub(r"[^0-9]", "", text)
    if len(digits) < MIN_DIGITS or digits == text or re.fullmatch(r"[0-9 ()+./-]+", text) is None:
        return ""
    # A date (`2024-03-15`) is a date, found as such; a number with a decimal point, a number.
    if re.match(r"\d{4}-\d{2}-\d{2}", text) or re.fullmatch(r"-?[0-9]+\.[0-9]+", text):
        return ""
    return digits


def _grouped(text: str) -> bytes:
    """The digit groups of `text`, each joined (` 12345678 5551234567`), to be searched too."""
    runs = [m.group() for m in DIGIT_RUN.finditer(text)]
    joined = [d for run in runs if len(d := re.sub(r"[ -]", "", run)) >= MIN_DIGITS]
    return (" " + " ".join(joined) + " ").encode() if joined else b""


def _key(text: str) -> bytes:
    """The token a value is found by: its longest token (the text itself for one token)."""
    found = tokens(text)
    return max(found, key=len) if found else lower(text).encode("utf-8", "surrogatepass")


# A `Found`'s fields as a plain tuple of strings, which the garbage collector stops looking at
# after its first pass (it would walk an index's hundreds of thousands of objects every time).
_Item = tuple[str, str, str, bytes | None]


class _Matcher:
    """A compiled search for some keys, each found only as a whole token: the text's
    separators are made single spaces (`_SPLIT`) and each key is looked for with a space on
    either side, overlapping matches included, in one pass over the bytes."""

    def __init__(self, keys: Iterable[bytes]) -> None:
        self.keys = list(keys)
        self._search = ahocorasick_rs.BytesAhoCorasick(
            [b" " + key + b" " for key in self.keys], implementation=ahocorasick_rs.Implementation.ContiguousNFA
        )

    def find(self, spaced: bytes) -> set[bytes]:
        keys = self.keys
        return {keys[i] for i, _, _ in self._search.find_matches_as_indexes(spaced, overlapping=True)}


class ValueIndex:
    """The distinctive values of some sources, found in text by one compiled search.

    Two searches are kept: one over every key when it was compiled, and one over the keys of
    the sources added since (compiling 240,000 keys takes 400 ms; a changed frame's 12,000, 9
    ms). Both are compiled again when the newer grows past a quarter of the older. A key of a
    source dropped since is still searched for and found in no source."""

    def __init__(self) -> None:
        self._by_key: dict[bytes, tuple[_Item, ...]] = {}
        self._sources: dict[str, tuple[bytes, ...]] = {}
        self._base: _Matcher | None = None
        self._newer: set[str] = set()  # sources added since `_base` was compiled
        self._top: _Matcher | None = None  # their keys, compiled when first searched
        self._long_numbers = 0  # values of `MIN_DIGITS` or more digits and nothing else
        self._long: dict[str, int] = {}  # their count, by source

    def add(self, source: str, forms: Iterable[tuple[str, str]]) -> None:
        """Index `forms` ((text, label) pairs) as values of `source`, replacing earlier ones."""
        self.drop(source)
        added: dict[bytes, list[_Item]] = {}
        for text, label in _with_joined(forms):
            key = _key(text)
            whole = key == lower(text).encode("utf-8", "surrogatepass")
            item = (text, source, label, key if whole else None)
            # A token that ends a sentence keeps its full stop: found under both.
            for variant in (key, key + b"."):
                added.setdefault(variant, []).append(item)
        for variant, items in added.items():
            self._by_key[variant] = (*self._by_key.get(variant, ()), *items)
        self._sources[source] = tuple(added)
        self._long[source] = sum(1 for key in added if key.isdigit() and len(key) >= MIN_DIGITS)
        self._long_numbers += self._long[source]
        self._newer.add(source)
        self._top = None

    def drop(self, source: str) -> None:
        self._long_numbers -= self._long.pop(source, 0)
        for key in self._sources.pop(source, ()):
            kept = tuple(f for f in self._by_key.get(key, ()) if f[1] != source)
            if kept:
                self._by_key[key] = kept
            else:
                self._by_key.pop(key, None)
        if source in self._newer:
            self._newer.discard(source)
            self._top = None

    def sources(self) -> list[str]:
        return list(self._sources)

    def copy(self) -> ValueIndex:
        """A copy to change while this one is searched (their compiled searches are shared:
        they are never changed, only replaced)."""
        other = ValueIndex()
        other._by_key, other._sources = dict(self._by_key), dict(self._sources)
        other._base, other._newer, other._top = self._base, set(self._newer), self._top
        other._long_numbers, other._long = self._long_numbers, dict(self._long)
        return other

    def compile(self) -> None:
        """Compile the search now (else its first use does)."""
        if self._by_key:
            self._matchers()

    def __len__(self) -> int:
        return len(self._by_key)

    def _matchers(self) -> list[_Matcher]:
        newer = sum(len(self._sources[s]) for s in self._newer)
        if self._base is None or newer * 4 > len(self._base.keys):
            self._base, self._newer, self._top = _Matcher(self._by_key), set(), None
        elif self._newer and self._top is None:
            self._top = _Matcher(dict.fromkeys(k for s in self._newer for k in self._sources[s]))
        return [self._base] if self._top is None else [self._base, self._top]

    def find(self, text: str, sources: set[str] | None = None) -> list[Found]:
        """The indexed values `text` holds (of `sources` only, when given), longest first."""
        return self.find_all([text], sources)[0]

    def find_all(self, texts: Sequence[str], sources: set[str] | None = None) -> list[list[Found]]:
        """`find` for each of `texts`. A large batch is searched on two cores where there are
        two: the compiled search lets go of the interpreter while it runs."""
        if not self._by_key or not texts:
            return [[] for _ in texts]
        # Digits in groups are looked for only where some value is a long number (a scan of its own).
        grouped = _grouped if self._long_numbers else (lambda _text: b"")
        spaced = [b" " + t.encode("utf-8", "surrogatepass").translate(_SPLIT) + b" " + grouped(t) for t in texts]
        matchers = self._matchers()

        def hits(part: Sequence[bytes]) -> list[set[bytes]]:
            return [set().union(*(m.find(h) for m in matchers)) for h in part]

        half = _halfway(spaced)
        if half:
            other = _helper().submit(hits, spaced[half:])
            found = hits(spaced[:half]) + other.result()
        else:
            found = hits(spaced)
        return [self._found(text, keys, sources) for text, keys in zip(texts, found, strict=True)]

    def _found(self, text: str, keys: set[bytes], sources: set[str] | None) -> list[Found]:
        found: dict[str, Found] = {}
        lowered: str | None = None
        for key in keys:
            for value, source, label, whole in self._by_key.get(key, ()):
                if sources is not None and source not in sources or value in found:
                    continue
                if whole is None:
                    lowered = lower(text) if lowered is None else lowered
                    if lower(value) not in lowered:
                        continue
                found[value] = Found(value, source, label, whole)
        return sorted(found.values(), key=lambda f: -len(f.text))


def _with_joined(forms: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """`forms`, each number written in groups also as its digits joined (`5551234567`)."""
    for text, label in forms:
        yield text, label
        if digits := joined_digits(text):
            yield digits, label


SHARED_FROM = 128 * 1024  # bytes of text from which a batch's search is shared by two cores
_helpers: list[ThreadPoolExecutor] = []


def _halfway(spaced: Sequence[bytes]) -> int:
    """Where to split a batch into two halves of about equal bytes (0: not worth splitting)."""
    total = sum(map(len, spaced))
    if total < SHARED_FROM or len(spaced) < 2 or _cores() < 2:
        return 0
    size = 0
    for at, text in enumerate(spaced):
        size += len(text)
        if size * 2 >= total:
            return max(1, min(at, len(spaced) - 1))
    return 0


def _cores() -> int:
    """The cores this process may run on (all of the machine's where the system cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _helper() -> ThreadPoolExecutor:
    if not _helpers:
        _helpers.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="larik-egress-search"))
    return _helpers[0]


# A forked child has no helper thread, only its executor's record of one: it makes its own.
os.register_at_fork(after_in_child=_helpers.clear)
