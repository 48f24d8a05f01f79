"""Secrets kept out of what a session writes for people to read: the debug trace and the exports
(the Markdown transcript, a branch as a notebook, replay's report, two branches compared).

A `Redactor` replaces each known secret value, in every form it takes on the way (`secret_forms`),
by `[redacted: NAME]`, NAME being the environment variable or config key that holds it; then
the values no name gives away but whose shape does (provider and service keys, a private key,
bearer tokens: `KEY_SHAPES`, `OTHER_SHAPES`), by `[redacted: <what it is>]`. Which values are
secret is the caller's to say: `environment_secrets` reads the environment,
`config.secrets.redactor_for` adds what the config names.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

# An environment variable or config key whose name says it holds a secret.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTHORIZATION|COOKIE", re.I)
# Shorter values are left alone: they would match ordinary text.
MIN_SECRET = 8
# How views mark a line they cut short (the replay's diff lines, one-line summaries).
CUT = "…"
# Header maps (the trace's HTTP records) always hide these, whatever they hold.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "x-goog-api-key"}
)
# Secrets known by their shape alone, each with the name its marker gives it: keys and tokens
# (never part of a longer token, so none matches inside base64 data such as an image in an
# export), a PEM private key, and the credential after the word `Bearer` whatever its shape.
KEY_SHAPES: tuple[tuple[str, str], ...] = (
    ("Anthropic API key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),
    ("GitLab token", r"glpat-[A-Za-z0-9_-]{20,}"),
    ("Hugging Face token", r"hf_[A-Za-z0-9]{30,}"),
    ("Slack token", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("Google API key", r"AIza[A-Za-z0-9_-]{35}"),
    ("AWS access key", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
)
OTHER_SHAPES: tuple[tuple[str, str], ...] = (
    ("private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("bearer token", r"(?<=\b[Bb][Ee][Aa][Rr][Ee][Rr] )[A-Za-z0-9._~+/=-]{8,}"),
)
_SHAPE_NAMES = [name for name, _ in KEY_SHAPES + OTHER_SHAPES]
# One pass over the text: the token shapes share their boundaries, each shape is a group.
_SHAPES = re.compile(
    r"(?<![A-Za-z0-9+/_-])(?:"
    + "|".join(f"(?P<s{i}>{pattern})" for i, (_, pattern) in enumerate(KEY_SHAPES))
    + r")(?![A-Za-z0-9_-])|"
    + "|".join(f"(?P<s{i}>{pattern})" for i, (_, pattern) in enumerate(OTHER_SHAPES, len(KEY_SHAPES)))
)


def marker(name: str) -> str:
    """What a secret is replaced by: `[redacted: ANTHROPIC_API_KEY]`."""
    return f"[redacted: {name}]"


def environment_secrets(names: Iterable[str] = ()) -> dict[str, str]:
    """The environment's secrets by variable: those whose name says so, and `names` (variables
    the config names as holding a key), each when it holds 8 or more characters."""
    wanted = set(names)
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if (name in wanted or SECRET_NAME.search(name)) and len(value) >= MIN_SECRET
    }


def _json_escaped(forms: set[str]) -> set[str]:
    out = set()
    for form in forms:
        for ascii_only in (False, True):
            escaped = json.dumps(form, ensure_ascii=ascii_only)[1:-1]
            out |= {escaped, escaped.replace("/", "\\/")}  # some servers escape `/` too
    return out


def _url_encoded(secret: str) -> set[str]:
    forms = {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    return forms | {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in forms}


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters that depend on `raw` alone, at each of the three alignments it
    can have inside a longer encoded stream (standard and URL-safe alphabets)."""
    out = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        core = encoded[-(-shift * 8 // 6) : (shift + len(raw)) * 8 // 6]
        out |= {core, core.replace("+", "-").replace("/", "_")}
    return out


def secret_forms(secret: str) -> set[str]:
    """Every spelling of `secret` a trace or export may hold: raw; JSON-escaped once or twice
    (a JSON document inside a JSON string, as in a streamed tool input), with `\\uXXXX` or
    UTF-8 and with `/` escaped or not; URL-encoded; base64 at any alignment."""
    once = _json_escaped({secret})
    forms = {secret} | once | _json_escaped(once) | _url_encoded(secret)
    forms |= _base64_cores(secret.encode("utf-8", "surrogateescape"))
    return {form for form in forms if len(form) >= MIN_SECRET}


class Redactor:
    """Replaces `secrets` (name → value; a value two names hold is named by the first) in all
    their `secret_forms`, then the shapes, in text and JSON-like data, and hides
    `SECRET_HEADERS` in header maps."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self.secrets = dict(secrets)
        self._names: dict[str, str] = {}
        for name, value in self.secrets.items():
            for form in secret_forms(value):
                self._names.setdefault(form, name)
        # Longest first, so a form is never cut by a shorter one it contains.
        ordered = sorted(self._names, key=lambda f: (-len(f), f))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def text(self, value: str) -> str:
        """`value` with every secret replaced by its marker, a secret a view cut short (its
        first characters, then `…`) too."""
        if self._pattern is not None:
            value = self._cut_short(self._pattern.sub(lambda m: marker(self._names[m.group()]), value))
        return _SHAPES.sub(lambda m: marker(_SHAPE_NAMES[int(str(m.lastgroup)[1:])]), value)

    def _cut_short(self, value: str) -> str:
        end = value.rfind(CUT)
        while end >= MIN_SECRET:
            start = end
            for name, secret in self.secrets.items():
                n = next((n for n in range(min(len(secret) - 1, end), MIN_SECRET - 1, -1)
                          if value.startswith(secret[:n], end - n)), 0)
                if n:
                    value, start = value[: end - n] + marker(name) + value[end:], end - n
                    break
            end = value.rfind(CUT, 0, start)
        return value

    def data(self, value: Any) -> Any:
        """JSON-like `value` with every string (keys too) redacted: done before serializing,
        so what serializing escapes never escapes redaction."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value

    def headers(self, headers: Any) -> dict[str, str]:
        """A header map with the secret headers hidden whole, the others redacted."""
        return {
            k: (marker(f"{k.lower()} header") if k.lower() in SECRET_HEADERS else self.text(v))
            for k, v in headers.items()
        }
