"""What a `python` call compares (issue 52, point 5), through `Agent` with a `KernelHost` and a
scripted model: a large frame the code only reads is not hashed and not reported (a 2.1M-row
Arrow string column used to be "may have changed" on every call), while a change the code's
text does not show — through a function defined earlier, `globals()`, a numpy array sharing the
frame's memory, `ctypes` — is still reported as a change. Each fact with its twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.kernel.fingerprint import MAX_OBJECT_ITEMS
from tests.agent_helpers import done, results_of, scripted, tool

ROWS = MAX_OBJECT_ITEMS + 100_000  # over what a fingerprint would hash item by item
SETUP = """
def touch():
    df.loc[0, 's'] = 'touched'
def peek():
    return len(df)
class Holder:
    def poke(self):
        df.loc[0, 'n'] = -4.0
"""


@pytest.fixture(scope="module")
def frames() -> dict[str, Any]:
    """One set of large values for the module (each test works on copies of what it changes)."""
    numbers = np.arange(ROWS, dtype="float64")
    return {
        "strings": pd.array(numbers.astype("int64").astype(str), dtype="string[pyarrow]"),
        "numbers": numbers,
        "pl_df": pl.DataFrame({"n": numbers, "s": pl.Series(numbers.astype("int64").astype(str))}),
    }


def namespace(frames: dict[str, Any]) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(SETUP, ns)
    base = frames["numbers"].copy()  # the frame's `n` column shares this array's memory
    ns.update(
        df=pd.DataFrame({"s": frames["strings"], "n": base}, copy=False),
        base=base,
        pl_df=frames["pl_df"],
        small=[1],
        holder=ns["Holder"](),
    )
    ns["frames"] = {"main": ns["df"]}
    assert np.shares_memory(ns["df"]["n"].array._ndarray, base)
    return ns


def run(project: Path, tmp_path: Path, ns: dict[str, Any], *codes: str) -> list[Any]:
    model = scripted(tmp_path, *[[tool("python", code=code)] for code in codes], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("go")
    results = results_of(agent)
    agent.close()
    return results


def lines(result: Any) -> list[str]:
    return [VariableChange.model_validate(v).text() for v in result.variables or []]


def test_reading_large_frames_reports_nothing(project: Path, tmp_path: Path, frames: dict[str, Any]) -> None:
    ns = namespace(frames)
    codes = ["df.head()", "df['s'].str.upper().head(3)", "print(len(df), df.shape)", "pl_df.head()",
             "m = df['n'].mean()", "peek()"]
    for result in run(project, tmp_path, ns, *codes):
        assert not [line for line in lines(result) if not line.startswith("m: created")], result.text()
        assert "not compared" not in result.text()


@pytest.mark.parametrize(("code", "line"), [
    ("df.loc[0, 's'] = 'x'", "df: DataFrame {rows}×2, changed in place"),
    ("touch()", "df: DataFrame {rows}×2, changed in place through touch()"),
    ("globals()['df'].loc[1, 'n'] = -1.0", "df: DataFrame {rows}×2, changed in place through globals()"),
    ("base[2] = -2.0\ndf.head()", "df: DataFrame {rows}×2, changed in place"),
    ("import ctypes\nctypes.memset(base.ctypes.data, 255, 8)", "df: DataFrame {rows}×2, changed in place"),
    ("v = base[:5]\nv[0] = -3.0", "df: DataFrame {rows}×2, changed in place"),
    ("frames['main'].loc[0, 's'] = 'y'", "df: DataFrame {rows}×2, changed in place"),
    ("holder.poke()", "df: DataFrame {rows}×2, changed in place"),
    ("h = df.head()\nx = df['n'].to_numpy().copy()\nx[0] = 5.0", None),
])
def test_a_change_by_a_route_the_text_does_not_show_is_reported(
    project: Path, tmp_path: Path, frames: dict[str, Any], code: str, line: str | None
) -> None:
    ns = namespace(frames)
    (result,) = run(project, tmp_path, ns, code)
    changed = [text for text in lines(result) if text.startswith("df:")]
    if line is None:  # the twin: code that reads the frame and changes only its own copy
        assert changed == []
        return
    assert line.format(rows=ROWS) in changed


def test_a_polars_frame_changed_in_place_is_reported_and_one_only_read_is_not(
    project: Path, tmp_path: Path, frames: dict[str, Any]
) -> None:
    ns = namespace(frames)
    ns["pl_df"] = frames["pl_df"].clone()
    read, changed = run(project, tmp_path, ns, "pl_df.head()", "pl_df.insert_column(0, pl_df['n'].alias('z'))")
    assert lines(read) == []
    assert [text for text in lines(changed) if text.startswith("pl_df:")]
    assert ns["pl_df"].columns == ["z", "n", "s"]


def test_notebook_run_of_a_cell_that_only_reads_a_large_frame_reports_nothing(tmp_path: Path) -> None:
    import json
    import os

    import nbformat

    from tests.test_notebook_fallback import run_turns
    from tests.test_variable_changes import stored_results

    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("df.head()", id="read"), nbformat.v4.new_code_cell("touch()", id="poke")]
    nbformat.write(work, tmp_path / "work.ipynb")
    run = [{"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": cell}}
           for cell in ("read", "poke")]
    script = {"responses": [{"content": run}, {"content": [{"type": "text", "text": "Ran them."}]}]}
    setup = (
        "import numpy as np, pandas as pd, pyarrow as pa\n"
        f"df = pd.DataFrame({{'s': pd.array(pa.array(np.arange({ROWS})).cast(pa.string()), dtype='string[pyarrow]')}})\n"
        "def touch():\n    df.loc[0, 's'] = 'touched'"
    )
    run_turns(tmp_path, script, setup, "%larik --yes --model scripted:script.json run them")
    [path] = Path(os.environ["LARIK_DATA_DIR"]).glob("sessions/*/*.jsonl")
    read, poked = stored_results(path)
    assert "variables" not in read, json.dumps(read)[:300]
    # The twin: a cell that changes the frame through a function defined earlier is reported.
    assert [(v["name"], v["change"], v.get("route")) for v in poked["variables"]] == [("df", "changed", "touch()")]
