"""Egress policies: how much of a variable or file may leave the machine, and which applies.

A policy is one of `never`, `schema` (names, types, shape), `stats` (schema plus per-column
summaries that carry no row), `sample N [mask COL,COL]` (N rows, the named columns masked)
and `full`, from strictest to loosest. A target is a variable name (an identifier) or a file
path or glob pattern relative to the project root (`data/*.csv`; `*` also crosses folders).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

Kind = Literal["never", "schema", "stats", "sample", "full"]
_RANK: dict[str, int] = {"never": 0, "schema": 1, "stats": 2, "sample": 3, "full": 4}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
POLICY_SYNTAX = "never | schema | stats | sample N [mask COL,COL…] | full"
# Files the default policy covers: data, not code or prose (a rule names any other file).
DATA_SUFFIXES = frozenset(
    {
        ".csv", ".tsv", ".txt.gz", ".csv.gz", ".parquet", ".feather", ".arrow", ".xlsx", ".xls",
        ".json", ".jsonl", ".ndjson", ".h5", ".hdf5", ".sqlite", ".db", ".pkl", ".pickle",
        ".npy", ".npz", ".sav", ".dta", ".sas7bdat", ".orc", ".avro",
    }
)


class PolicyError(ValueError):
    """A policy or target that cannot be parsed; the message says what to write instead."""


@dataclass(frozen=True)
class Policy:
    """One egress policy; `rows` and `mask` only for `sample`."""

    kind: Kind
    rows: int = 0
    mask: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind != "sample":
            return self.kind
        masked = f" mask {','.join(self.mask)}" if self.mask else ""
        return f"sample {self.rows}{masked}"

    @property
    def restricted(self) -> bool:
        """Whether anything of the source is held back (every policy but `full`)."""
        return self.kind != "full"

    def looser_than(self, other: Policy) -> bool:
        """Whether this policy lets out more than `other`."""
        return stricter(self, other) != self


# The origin of a rule lineage made (a variable made from restricted sources).
LINEAGE = "lineage"
FULL = Policy("full")
NEVER = Policy("never")


def parse_policy(text: str) -> Policy:
    """`text` as a policy; a PolicyError names the syntax."""
    words = text.split()
    if not words or words[0] not in _RANK:
        raise PolicyError(f"Unknown egress policy {text!r}; write {POLICY_SYNTAX}.")
    kind = words[0]
    if kind != "sample":
        if len(words) > 1:
            raise PolicyError(f"The policy {kind} takes no arguments; write {POLICY_SYNTAX}.")
        return Policy(kind)  # type: ignore[arg-type]
    if len(words) < 2 or not words[1].isdigit():
        raise PolicyError(f"sample needs a number of rows (sample 5); write {POLICY_SYNTAX}.")
    mask: tuple[str, ...] = ()
    if len(words) > 2:
        if words[2] != "mask" or len(words) != 4:
            raise PolicyError(f"After sample N only `mask COL,COL` may follow; write {POLICY_SYNTAX}.")
        mask = tuple(c for c in words[3].split(",") if c)
    return Policy("sample", int(words[1]), mask)


def stricter(a: Policy, b: Policy) -> Policy:
    """The policy that lets out less: two samples give the fewer rows and both masks."""
    if a.kind == "sample" and b.kind == "sample":
        return Policy("sample", min(a.rows, b.rows), tuple(dict.fromkeys(a.mask + b.mask)))
    return a if _RANK[a.kind] <= _RANK[b.kind] else b


def is_variable_target(target: str) -> bool:
    """A variable name, as against a file path or pattern."""
    return bool(_IDENTIFIER.match(target))


def check_target(target: str) -> str:
    """`target` as stored (a file path in POSIX form, no leading `./`); a PolicyError when it
    is empty or leaves the project (`..`, an absolute path)."""
    target = target.strip()
    if not target:
        raise PolicyError("An egress target is a variable name or a file path or pattern; it was empty.")
    if is_variable_target(target):
        return target
    path = PurePosixPath(target.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise PolicyError(
            f"{target}: an egress file target is a path or pattern inside the project, relative to its root."
        )
    return str(path)


def _file_matches(target: str, rel: str) -> bool:
    return target == rel or fnmatch.fnmatchcase(rel, target)


@dataclass(frozen=True)
class Resolved:
    """The policy a source gets and where it was set (`notebook`, `personal config`,
    `repository config`, `default`, `lineage`: the variable was made from `sources`)."""

    policy: Policy
    origin: str
    sources: tuple[str, ...] = ()  # a derived rule's: what the variable was made from


@dataclass
class PolicySet:
    """Every rule in force. `rules` (target -> policy, origin) come from the personal config
    and the notebook (a later one replaces an earlier one); `floor` and `floor_default` from
    the repository's config, which may only tighten; `default` covers every variable and
    every data file no rule names."""

    default: Policy = FULL
    default_origin: str = "default"
    rules: dict[str, Resolved] = field(default_factory=dict)
    floor: dict[str, Policy] = field(default_factory=dict)
    floor_default: Policy = FULL
    local_only: bool = False
    floor_local_only: bool = False
    notebook_local_only: bool | None = None
    version: int = 0  # counts changes, so caches of decisions know when to drop

    def is_local_only(self) -> bool:
        """Whether restricted data may go only to local servers: the repository's config can
        require it; else the notebook's setting, else the personal config's."""
        if self.floor_local_only:
            return True
        return self.local_only if self.notebook_local_only is None else self.notebook_local_only

    def set(self, target: str, policy: Policy, origin: str, sources: tuple[str, ...] = ()) -> None:
        self.rules[check_target(target)] = Resolved(policy, origin, sources)
        self.version += 1

    def derive(self, name: str, policy: Policy, sources: tuple[str, ...]) -> None:
        """Restrict variable `name`, made from `sources`, by `policy` (lineage)."""
        if self.rules.get(name) != Resolved(policy, LINEAGE, sources):
            self.set(name, policy, LINEAGE, sources)

    def _pick(self, matching: list[tuple[str, Resolved]], exact: str) -> Resolved | None:
        for target, resolved in matching:
            if target == exact:
                return resolved
        if not matching:
            return None
        best = matching[0][1]
        for _, resolved in matching[1:]:
            if stricter(resolved.policy, best.policy) == resolved.policy:
                best = resolved
        return best

    def _floored(self, resolved: Resolved, floors: list[Policy], default_applies: bool) -> Resolved:
        policy = resolved.policy
        for floor in floors + ([self.floor_default] if default_applies else []):
            tighter = stricter(policy, floor)
            if tighter != policy:
                policy, resolved = tighter, Resolved(tighter, "repository config")
        return resolved

    def for_variable(self, name: str) -> Resolved:
        """The policy of variable `name`."""
        rule = self.rules.get(name) or Resolved(self.default, self.default_origin)
        floors = [p for t, p in self.floor.items() if t == name]
        return self._floored(rule, floors, True)

    def for_file(self, rel: str) -> Resolved:
        """The policy of the file at `rel` (POSIX, relative to the project root)."""
        matching = [(t, r) for t, r in self.rules.items() if not is_variable_target(t) and _file_matches(t, rel)]
        is_data = any(rel.lower().endswith(s) for s in DATA_SUFFIXES)
        default = Resolved(self.default, self.default_origin) if is_data else Resolved(FULL, "default")
        rule = self._pick(matching, rel) or default
        floors = [p for t, p in self.floor.items() if not is_variable_target(t) and _file_matches(t, rel)]
        return self._floored(rule, floors, is_data)

    def restricts_files(self) -> bool:
        """Whether some file may be restricted: by the default (data files) or a rule or floor
        on a file target."""
        return (
            self.default.restricted
            or self.floor_default.restricted
            or any(r.policy.restricted for t, r in self.rules.items() if not is_variable_target(t))
            or any(p.restricted for t, p in self.floor.items() if not is_variable_target(t))
        )

    def restricts_anything(self) -> bool:
        """Whether any rule, default or floor holds something back."""
        return (
            self.default.restricted
            or self.floor_default.restricted
            or any(r.policy.restricted for r in self.rules.values())
            or any(p.restricted for p in self.floor.values())
        )
