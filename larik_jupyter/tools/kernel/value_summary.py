"""Comparable summaries of kernel values, taken the same way in the live kernel and in the
scratch kernel of a notebook check (which imports this module), then compared.

A number keeps its value (compared within a relative tolerance), a small builtin value its
canonical repr (compared for equality), a frame of any library or a numpy array its
fingerprint (type, shape, dtypes and content digest, see `fingerprint.py` and
`larik_jupyter/frames/`; a lazy frame's digest is its plan); anything else only its type. Bounded:
at most `MAX_NAMES` names, reprs up to `MAX_REPR` characters, the fingerprint's byte budget.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from larik_jupyter.tools.fingerprint_cache import IMMUTABLE
from larik_jupyter.tools.kernel.fingerprint import fingerprint, type_name

MAX_NAMES = 200
MAX_REPR = 2000
REL_TOLERANCE = 1e-6
_BUILTINS = (str, bytes, list, tuple, dict, set, frozenset, type(None))


def _canonical(value: object) -> str:
    if isinstance(value, (set, frozenset)):
        try:
            return f"{type(value).__name__}({sorted(value)!r})"
        except TypeError:
            return repr(value)
    return repr(value)


def summary(value: object) -> dict[str, Any]:
    """One value's summary (JSON-ready); never raises."""
    out: dict[str, Any] = {"type": type_name(value)}
    try:
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            number = complex(value)  # type: ignore[call-overload]
            out["number"] = [number.real, number.imag]
        elif isinstance(value, (*_BUILTINS, bool)):
            text = _canonical(value)
            if len(text) <= MAX_REPR:
                out["repr"] = text
            else:
                found = fingerprint(value)
                out["shape"] = found.shape
                if found.digest not in (None, IMMUTABLE):
                    out["digest"] = found.digest
        else:
            found = fingerprint(value)
            out["shape"] = found.shape
            if found.digest is not None:
                out["digest"] = found.digest
    except Exception:  # a value whose repr or number fails keeps only its type
        pass
    return out


def summaries(namespace: dict[str, Any], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The summaries of those `names` that `namespace` holds."""
    wanted = [name for name in names if isinstance(name, str) and name in namespace][:MAX_NAMES]
    return {name: summary(namespace[name]) for name in wanted}


def shown(found: dict[str, Any]) -> str:
    """A summary as the report shows it: `DataFrame 100×3`, `int 6`, `list [1, 2]`."""
    if "number" in found:
        real, imag = found["number"]
        value = f"{real:g}" if not imag else f"{complex(real, imag)}"
        return f"{found['type']} {value}"
    if "repr" in found:
        text = found["repr"]
        return f"{found['type']} {text[:60] + '…' if len(text) > 60 else text}"
    return f"{found['type']} {found.get('shape', '')}".rstrip()


def differs(kernel: dict[str, Any], scratch: dict[str, Any]) -> bool | None:
    """Whether two summaries of one name (the user's kernel's and the scratch kernel's)
    differ; None when they cannot be compared (a type without content summary on either side)."""
    if kernel.get("type") != scratch.get("type"):
        return True
    if "number" in kernel and "number" in scratch:
        return not all(
            math.isclose(a, b, rel_tol=REL_TOLERANCE, abs_tol=1e-12)
            for a, b in zip(kernel["number"], scratch["number"], strict=True)
        )
    if "repr" in kernel and "repr" in scratch:
        return bool(kernel["repr"] != scratch["repr"])
    if kernel.get("shape") != scratch.get("shape"):
        return True
    if "digest" in kernel and "digest" in scratch:
        return bool(kernel["digest"] != scratch["digest"])
    return None
