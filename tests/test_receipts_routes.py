"""Receipts by every ordinary route to an operation: names a user cell bound before the agent's
call (`from pandas import merge`, `m = pd.merge`, a bound method) give the same receipt as the
library's own attribute, and the user's names are left as they were."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import polars as pl

from tests.test_tools_kernel import kernel_env, run_python

# What a user cell ran before the agent's call (not watched: the user's own code).
USER_CELL = """
from pandas import merge, concat
import polars as p
from polars import concat as pconcat
m = pd.merge
cc = p.concat
joiner = a.merge
"""


def _user_namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {
        "pd": pd, "a": pd.DataFrame({"k": [1, 2, 3]}), "b": pd.DataFrame({"k": [1, 1, 2], "v": [1, 2, 3]}),
        "pa": pl.DataFrame({"k": [1, 2]}), "pb": pl.DataFrame({"k": [3]}),
    }
    exec(USER_CELL, ns)
    return ns


def _unbound(receipts: list[Any]) -> list[bytes]:
    return [msgspec.json.encode(msgspec.structs.replace(r, variable=None)) for r in receipts]


def test_aliases_bound_before_the_call_get_the_same_receipt_as_the_library_attribute(tmp_path: Path) -> None:
    ns = _user_namespace()
    aliases = {name: ns[name] for name in ("merge", "concat", "pconcat", "m", "cc", "joiner")}
    env = kernel_env(tmp_path, ns)
    direct = run_python(env, "j0 = pd.merge(a, b, on='k')\nc0 = pd.concat([a, b])\np0 = p.concat([pa, pb])")
    routed = run_python(env, (
        "j1 = merge(a, b, on='k')\nj2 = m(a, b, on='k')\nj3 = joiner(b, on='k')\n"
        "c1 = concat([a, b])\np1 = cc([pa, pb])\np2 = pconcat([pa, pb])"
    ))
    [join, cat, pcat] = _unbound(direct.receipts)
    assert _unbound(routed.receipts) == [join, join, join, cat, pcat, pcat]
    assert [r.variable for r in routed.receipts] == ["j1", "j2", "j3", "c1", "p1", "p2"]
    assert "j1 = a ⋈ b on k (inner join): 3 → 3 rows (+1: 1 k value twice in b, e.g. 1)" in routed.content
    # The user's names still hold what they held, and no call reported them as changed.
    assert all(ns[name] is value for name, value in aliases.items())
    assert {v.name for v in routed.variables} == {"j1", "j2", "j3", "c1", "p1", "p2"}
    assert pd.merge.__code__.co_filename.endswith("merge.py") and not hasattr(pd.merge, "__wrapped__")
    # While the code runs, what it asks of a function is still the function's own.
    asked = run_python(env, "import inspect\nstr(inspect.signature(merge)), str(inspect.signature(p.concat))")
    assert asked.content == repr((str(inspect.signature(pd.merge)), str(inspect.signature(pl.concat))))
    assert run_python(env, "x = 1").receipts == []

