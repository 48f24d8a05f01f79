"""The same egress scenario for every frame library: frames holding canary values under each
policy, a turn that prints them, derives a list and a frame from them and draws a plot, run
in a shell with `%larik` against a wire fake; what each library needs written its own way."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-frames-test"
NEVER = ["nev.canary.7741@ex.com", "98765.4321"]
SCHEMA = ["sch.canary.5521@ex.com", "55443.2211"]
STATS = ["sta.canary.3391@ex.com", "66554.3312"]
SAMPLE_IDS = [f"SAMROW{i}Q7" for i in range(6)]
SAMPLE_EMAILS = [f"sam{i}.canary@ex.com" for i in range(6)]
HIDDEN = NEVER + SCHEMA + STATS + SAMPLE_EMAILS
# The list derived from nev, as Python prints it: found only where `print(vals)` went.
LISTED = f"['{NEVER[0]}', 'other1.x@ex.com']"
# The list the person's own cell derived from sch (no lineage: only the value index finds it).
USER_LISTED = f"['{SCHEMA[0]}', 'other2.x@ex.com']"
RULES = {"nev": "never", "sch": "schema", "sta": "stats", "sam": "sample 2 mask email"}


@dataclass(frozen=True)
class Library:
    """How one library makes a frame of columns (`make`, a format of `{data}`: a dict of
    lists), shows it (`show`, of `{df}`), gives one column as a list (`listed`, of `{df}` and
    `{col}`) and as a frame of its own (`select`, the same)."""

    name: str
    setup: str
    make: str
    show: str
    listed: str
    select: str = "{df}.select('{col}')"
    lazy: bool = False


LIBRARIES = {
    "pandas": Library("pandas", "import pandas as pd", "pd.DataFrame({data})", "print({df})",
                      "{df}['{col}'].to_list()", "{df}[['{col}']]"),
    "polars": Library("polars", "import polars as pl", "pl.DataFrame({data})", "print({df})",
                      "{df}['{col}'].to_list()"),
    "pyarrow": Library("pyarrow", "import pyarrow as pa", "pa.table({data})", "print({df})",
                       "{df}['{col}'].to_pylist()", "{df}.select(['{col}'])"),
    "duckdb": Library("duckdb", "import duckdb\ncon = duckdb.connect()",
                      "con.sql('select * from (values ' + ', '.join(str(r) for r in zip(*{data}.values())) + ') t(' + ', '.join({data}) + ')')",
                      "print({df})", "[r[0] for r in {df}.select('{col}').fetchall()]", lazy=True),
    "dask": Library("dask", "import pandas as pd\nimport dask.dataframe as dd",
                    "dd.from_pandas(pd.DataFrame({data}), npartitions=1)", "print({df}.compute())",
                    "{df}['{col}'].compute().to_list()", "{df}[['{col}']]", lazy=True),
    "spark": Library("spark", "", "spark.createDataFrame(list(zip(*{data}.values())), list({data}))",
                     "{df}.show(truncate=False)", "[r['{col}'] for r in {df}.select('{col}').collect()]", lazy=True),
}


def setup_code(lib: Library) -> str:
    """The cell that makes nev, sch, sta and sam with their canaries."""
    frames = {
        "nev": {"email": [NEVER[0], "other1.x@ex.com"], "amount": [float(NEVER[1]), 1.5]},
        "sch": {"email": [SCHEMA[0], "other2.x@ex.com"], "amount": [float(SCHEMA[1]), 2.5]},
        "sta": {"email": [STATS[0], "other3.x@ex.com"], "amount": [float(STATS[1]), 3.5]},
        "sam": {"id": SAMPLE_IDS, "email": SAMPLE_EMAILS},
    }
    lines = [lib.setup] + [f"{name} = {lib.make.format(data=repr(data))}" for name, data in frames.items()]
    if not lib.lazy:  # a lazy frame's rows are never read, so no index holds them
        lines.append(f"uvals = {lib.listed.format(df='sch', col='email')}")
    return "\n".join(lines)


def script(lib: Library) -> list[dict[str, Any]]:
    """One turn over every route: each frame shown, a list derived in one call and printed in
    the next, a plot drawn from a frame derived in an earlier call, the variables inspected."""
    show = "; ".join(lib.show.format(df=name) for name in RULES)
    steps: list[Any] = [
        [tool("python", code=show)],
        [tool("python", code=f"vals = {lib.listed.format(df='nev', col='email')}")],
        [tool("python", code="print(vals)")],
        [tool("python", code="print(uvals)" if not lib.lazy else "print('no list of the person')")],
        [tool("python", code=f"small = {lib.select.format(df='sta', col='amount')}")],
        [tool("python", code=(
            "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            f"fig, ax = plt.subplots(figsize=(2, 2)); ax.plot({lib.listed.format(df='small', col='amount')}); fig"
        ))],
        [tool("inspect_variables")],
        done("Done."),
    ]
    return [{"content": s} for s in steps]


def run(lib: Library, kind: str, project: Path, monkeypatch: pytest.MonkeyPatch, *, rules: bool,
        names: dict[str, Any] | None = None) -> str:
    """Every byte the turn sent, as JSON text (`names`: put in the namespace first)."""
    with ScriptedHTTPServer(script(lib), api_key=KEY) as server:
        model = wire_model(kind, server, KEY, monkeypatch)
        shell, _ = shell_with_magics(project, model)
        shell.user_ns.update(names or {})
        try:
            result = shell.run_cell(setup_code(lib))
            assert result.success, result.error_in_exec
            if rules:
                for name, policy in RULES.items():
                    larik(shell, f"/egress {name} {policy}")
            larik(shell, "look at the data")
        finally:
            shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')")
        assert server.remaining == 0, "the script ran to its end"
        return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)


def images(sent: str) -> int:
    return sent.count('"image/png"') + sent.count("data:image/png;base64")


def assert_withheld(lib: Library, sent: str) -> None:
    """No canary in any byte; each frame's policy said; a lazy frame shown by its schema."""
    for canary in HIDDEN:
        assert canary not in sent, canary
    assert sum(i in sent for i in SAMPLE_IDS) <= (0 if lib.lazy else 2)
    assert "[withheld: nev — policy never" in sent
    assert "[withheld: sch — policy schema" in sent
    assert images(sent) == 0, "the plot drawn from a frame derived from sta went as an image"
    if lib.lazy:
        assert "LazyFrame (not computed)" in sent


def assert_leaked(lib: Library, sent: str) -> None:
    """The made-false twin: without the rules the canaries do go, by every route."""
    for canary in [*NEVER, *SCHEMA, *STATS, SAMPLE_EMAILS[0]]:
        assert canary in sent, canary
    assert LISTED in sent, "the list derived from nev, printed in a later call"
    if not lib.lazy:
        assert USER_LISTED in sent, "the list the person's cell derived from sch"
    assert images(sent) >= 1
    assert "[withheld:" not in sent
