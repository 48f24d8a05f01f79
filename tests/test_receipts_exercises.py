"""Joins, filters and groups from real public exercises (guipsamora/pandas_exercises, BSD-3-Clause;
`tests/corpus/receipts/SOURCES.json` names the repository, files, commit and licence), each code
cell run as the agent's code through the `python` tool, each receipt checked against the frames'
true row counts. The notebooks are read from the `fetch` tool's snapshot of the repository at
that commit; where it is not on this machine the test says so and is skipped."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from larik_jupyter.frames.receipt import Receipt
from tests.test_receipts import problems, truth
from tests.test_tools_kernel import kernel_env, run_python

SOURCES = json.loads((Path(__file__).parent / "corpus" / "receipts" / "SOURCES.json").read_text())


def _cells(path: str) -> list[str]:
    mirror = Path(SOURCES["mirror"])
    if not mirror.exists():
        pytest.skip(f"the snapshot of {SOURCES['repository']} is not at {mirror}: run the fetch tool for it")
    text = subprocess.run(["git", "--git-dir", str(mirror), "show", f"{SOURCES['commit']}:{path}"],
                          capture_output=True, text=True, check=True).stdout
    return ["".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "code"]


def _bound(source: str) -> str:
    """The cell with its last expression bound to `cell_value`, so its rows can be counted."""
    module = ast.parse(source)
    last = module.body[-1] if module.body else None
    if not isinstance(last, ast.Expr) or isinstance(last.value, ast.Call) and getattr(last.value.func, "id", "") == "print":
        return source
    lines = source.splitlines()
    head = "\n".join(lines[: last.lineno - 1])
    return f"{head}\ncell_value = ({ast.get_source_segment(source, last)})"


def _check(receipt: Receipt, ns: dict[str, Any], before: dict[str, int]) -> None:
    for name, rows in zip(receipt.inputs, receipt.rows_in, strict=True):
        if name in before:
            assert rows == before[name], (receipt, name)
    if receipt.variable is not None:
        assert receipt.rows_out == len(ns[receipt.variable])
    if receipt.kind == "join":
        left, right = (ns[n] for n in receipt.inputs)
        key = receipt.keys[0]
        true = truth(list(left[key]), list(right[key]), receipt.how or "inner", nulls_match=True)
        assert problems(receipt, true) == [], receipt
    if receipt.kind == "groupby":
        assert receipt.groups == receipt.rows_out


@pytest.mark.parametrize("path", SOURCES["files"])
def test_exercise_receipts_match_the_true_row_counts(tmp_path: Path, path: str) -> None:
    ns: dict[str, Any] = {}
    env = kernel_env(tmp_path, ns)
    seen: list[Receipt] = []
    for source in _cells(path):
        before = {n: len(v) for n, v in ns.items() if isinstance(v, pd.DataFrame)}
        result = run_python(env, _bound(source))
        for receipt in result.receipts:
            _check(receipt, ns, before)
        seen += result.receipts
    assert seen, f"no receipt in {path}"
    assert {r.kind for r in seen} <= {"join", "filter", "groupby", "concat", "dropna", "drop_duplicates"}


def test_the_fictitious_names_merges_say_what_matched() -> None:
    lines = []
    ns: dict[str, Any] = {}
    env = kernel_env(Path("."), ns)
    for source in _cells(SOURCES["files"][0]):
        lines += [line for line in run_python(env, _bound(source)).content.splitlines() if "⋈" in line]
    assert lines == [
        "  cell_value = all_data ⋈ data3 on subject_id (inner join): 10 → 9 rows; 1 row of all_data matched no "
        "row of data3; 3 rows of data3 matched no row of all_data",
        "  cell_value = data1 ⋈ data2 on subject_id (inner join): 5 → 2 rows; 3 rows of data1 matched no row of "
        "data2; 3 rows of data2 matched no row of data1",
        "  cell_value = data1 ⋈ data2 on subject_id (outer join): 5 → 8 rows; 3 rows of data1 matched no row of "
        "data2; 3 rows of data2 matched no row of data1",
    ]
