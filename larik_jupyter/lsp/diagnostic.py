"""Diagnostics as the model and the user read them: errors first, capped, with line numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Every language-server block in a tool result starts with this, so front ends can find it.
HEADING = "Diagnostics ("
MAX_SHOWN = 20
_SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


@dataclass(frozen=True)
class Diagnostic:
    """One problem a server reported; `line` and `column` count from 1."""

    line: int
    column: int
    severity: int
    message: str
    source: str = ""
    code: str = ""

    @property
    def severity_name(self) -> str:
        return _SEVERITIES.get(self.severity, "error")

    def describe(self) -> str:
        """`line 3, col 5: error: message (source code)`."""
        origin = " ".join(part for part in (self.source, self.code) if part)
        message = " ".join(self.message.split())
        return (
            f"line {self.line}, col {self.column}: {self.severity_name}: {message}"
            + (f" ({origin})" if origin else "")
        )


def parse_diagnostics(raw: Any) -> list[Diagnostic]:
    """The LSP `Diagnostic[]` of a publish, skipping entries without a usable range."""
    found: list[Diagnostic] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            start = item["range"]["start"]
            code = item.get("code")
            found.append(
                Diagnostic(
                    line=int(start["line"]) + 1,
                    column=int(start["character"]) + 1,
                    severity=int(item.get("severity") or 1),
                    message=str(item.get("message", "")),
                    source=str(item.get("source") or ""),
                    code="" if code is None else str(code),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return found


def ordered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Errors first, then warnings, information and hints; by position within each."""
    return sorted(diagnostics, key=lambda d: (d.severity, d.line, d.column))


def counts(diagnostics: list[Diagnostic]) -> str:
    """`2 errors, 1 warning`: the non-zero counts by severity, most severe first."""
    parts = []
    for severity, name in _SEVERITIES.items():
        n = sum(1 for d in diagnostics if d.severity == severity)
        if n:
            parts.append(f"{n} {name}" + ("" if n == 1 or name == "info" else "s"))
    return ", ".join(parts)


def format_block(server: str, rel: str, diagnostics: list[Diagnostic], *, limit: int = MAX_SHOWN) -> str:
    """The block for one file: a heading naming server and file, then one line per problem."""
    if not diagnostics:
        return f"{HEADING}{server}): no problems in {rel}."
    shown = ordered(diagnostics)
    lines = [f"{HEADING}{server}): {counts(diagnostics)} in {rel}:"]
    lines += [f"  {d.describe()}" for d in shown[:limit]]
    if len(shown) > limit:
        lines.append(f"  … and {len(shown) - limit} more")
    return "\n".join(lines)


def format_notice(server: str, text: str) -> str:
    """A block saying why there are no diagnostics from `server` this time."""
    return f"{HEADING}{server}): unavailable — {text}"
