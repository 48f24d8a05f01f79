"""What the agent did to the user's variables: fingerprints, the change line under each kernel
call in every view (live, terminal, /history, export), the stored `variables` of its result,
and protect mode asking first."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
import pytest

from larik_jupyter import Agent, KernelHost, PermissionAnswer, PermissionRequest
from larik_jupyter.agent.textlog import TextLog
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import parts_from_messages, render_parts
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.frontends.server.page_entries import ShownResult, page_entry
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.tools.kernel.fingerprint import fingerprint
from larik_jupyter.tools.kernel.protect import protected_changes
from larik_jupyter.tools.kernel.variable_watch import VariableWatch
from tests.agent_helpers import as_stored, done, personal, scripted, tool

CHANGE = 'df.drop(columns=["a"], inplace=True); data.append(4); x = 5'
LINES = (
    "df: DataFrame 1000×5 → 1000×4, changed in place",
    "data: list len 3 → len 4, changed in place",
    "x: created int",
)


def frame() -> pd.DataFrame:
    return pd.DataFrame(np.arange(5000).reshape(1000, 5), columns=list("abcde"))


def kernel_ns() -> dict[str, Any]:
    return {"df": frame(), "data": [1, 2, 3]}


def watched(ns: dict[str, Any], names: list[str], code: str) -> list[str]:
    watch = VariableWatch(ns, names)
    exec(code, ns)
    return [c.text() for c in watch.changes(ns)]


def stored_results(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [b for e in lines for b in e.get("message", {}).get("content", []) if b["type"] == "tool_result"]


def test_every_view_shows_the_changes_and_the_transcript_stores_them(project: Path, tmp_path: Path) -> None:
    ns = kernel_ns()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=CHANGE)], done()), yes=True, host=KernelHost(ns))
    view, out = TranscriptView(), io.StringIO()
    agent.subscribe(view.handle)
    agent.subscribe(TextLog(out))
    agent.run("change the data")
    path = agent.session_path
    agent.close()
    live = render_parts(view.parts)
    stored = replay(load_entries(path).entries).all
    assert render_parts(parts_from_messages(list(stored), include_prompts=False)) == as_stored(live)
    exported = render_markdown(path, load_entries(path).entries, redactor=redactor_for(None))
    # The sidebar's transcript page carries the same words (the server says them, not the page).
    shown = [page_entry(e, lambda _notebook, _cell: None) for e in load_entries(path).entries]
    sidebar = " · ".join(line for e in shown if e.message for b in e.message.content
                         if isinstance(b, ShownResult) for line in b.variable_lines or [])
    for line in LINES:
        assert line in live and line in out.getvalue() and line in exported and line in sidebar
    assert stored_results(path)[0]["variables"] == [
        {"name": "df", "change": "changed", "before": "DataFrame 1000×5", "after": "DataFrame 1000×4"},
        {"name": "data", "change": "changed", "before": "list len 3", "after": "list len 4"},
        {"name": "x", "change": "created", "after": "int"},
    ]


def test_rebound_deleted_unchanged_and_unknown() -> None:
    class Model:
        pass

    ns: dict[str, Any] = {"df": frame(), "arr": np.zeros((3, 4)), "y": [1], "m": Model(), "keep": {"k": [1]}}
    code = "df = df.iloc[:10]; arr[0, 0] = 1.0; del y; m.fitted = True; keep.get('k')"
    assert watched(ns, ["df", "arr", "y", "m", "keep"], code) == [
        "df: DataFrame 1000×5 → 10×5",
        "arr: ndarray 3×4, changed in place",
        "y: deleted",
        "m: Model, may have changed (no fingerprint for this type)",
    ]
    # A change inside a nested builtin container, and a string column edited in place.
    ns = {"d": {"k": [1, 2]}, "s": pd.DataFrame({"t": ["a", "b"]})}
    assert watched(ns, ["d", "s"], "d['k'].append(3); s.loc[0, 't'] = 'z'") == [
        "d: dict len 1, changed in place",
        "s: DataFrame 2×1, changed in place",
    ]


def test_calling_a_function_or_class_is_no_change_but_rebinding_one_is(tmp_path: Path) -> None:
    # ipykernel's namespace holds its own `open`; a call of it (or of any function) is not a
    # change to the user's data, so it is not reported as "may have changed".
    def helper() -> int:
        return 1

    ns: dict[str, Any] = {"open": open, "helper": helper, "Model": dict}
    code = f"with open({str(tmp_path / 'f.txt')!r}, 'w') as fh: fh.write('x')\nhelper(); Model()"
    assert watched(ns, ["open", "fh", "helper", "Model"], code) == ["fh: created TextIOWrapper"]
    assert watched(ns, ["helper"], "helper = 5") == ["helper: function → int"]


def test_fingerprints_are_bounded_and_never_raise() -> None:
    big = np.zeros(1 << 20)
    assert fingerprint(big, budget=1 << 10).digest is None
    assert "over the" in fingerprint(big, budget=1 << 10).why
    assert fingerprint(list(range(200_000))).digest is None
    a, b = frame(), frame()
    assert fingerprint(a) == fingerprint(b)
    b.iloc[999, 4] = -1
    assert fingerprint(a).digest != fingerprint(b).digest

    class Broken:
        @property
        def shape(self) -> Any:
            raise RuntimeError("no")

    assert fingerprint(Broken()).summary == "Broken"


def test_object_and_string_columns_are_bounded_and_compared_by_identity_within_a_call() -> None:
    from larik_jupyter.tools.kernel.fingerprint import MAX_OBJECT_ITEMS

    frame = pd.DataFrame({"s": [f"v{i}" for i in range(1000)], "o": [[i] for i in range(1000)]})
    before = fingerprint(frame, identity=True)
    assert before == fingerprint(frame.copy(), identity=True)  # a copy shares the same strings
    frame.loc[999, "s"] = "changed"
    assert fingerprint(frame, identity=True) != before
    frame.loc[999, "s"] = "v999"
    after = fingerprint(frame, identity=True)
    frame.loc[0, "o"].append(5)  # a mutable item among the sampled ones
    assert fingerprint(frame, identity=True) != after
    # Every storage has a digest that a change moves: datetimes, masked integers, categories,
    # and a MultiIndex (a groupby's result).
    typed = pd.DataFrame({
        "t": pd.date_range("2020", periods=3, tz="UTC"), "i": pd.array([1, None, 3], dtype="Int64"),
        "c": pd.Categorical(["a", "b", "a"]),
    })
    grouped = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "v": [1.0, 2.0]}).groupby(["a", "b"]).sum()
    for value, change in ((typed, "typed.loc[1, 'i'] = 5"), (grouped, "grouped.iloc[0, 0] = 9.0")):
        first = fingerprint(value, identity=True)
        assert first.digest is not None and fingerprint(value).digest is not None
        exec(change, {"typed": typed, "grouped": grouped})
        assert fingerprint(value, identity=True) != first
    # By content (compared across processes), object items past the bound are not hashed.
    many = pd.Series(["x"] * (MAX_OBJECT_ITEMS + 1), dtype=object)
    assert fingerprint(many).digest is None and "object items" in fingerprint(many).why
    assert fingerprint(many, identity=True).digest is not None


def test_protected_changes_name_what_the_code_does() -> None:
    ns = {"df": frame(), "data": [1], "m": object(), "n": 1, "other": 2}
    found = protected_changes(
        "df.drop(columns=['a'], inplace=True)\ndata.append(4)\nm.x = 1\nn += 1\ndel other\n"
        "fresh = df.copy(); fresh['b'] = 0; total = df['a'].sum()",
        ns,
    )
    assert found == {
        "df": ["calls .drop(…, inplace=True)"],
        "data": ["calls .append(…), which changes it"],
        "m": ["sets its attribute .x"],
        "n": ["updates it in place or rebinds it (Add assignment)"],
        "other": ["deletes it"],
    }
    assert protected_changes("def f():\n    df = 1\n", ns) == {}
    assert protected_changes("df[", ns) == {}


def test_protect_asks_even_with_yes_and_denies_without_anyone_to_answer(project: Path, tmp_path: Path) -> None:
    ns = kernel_ns()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=CHANGE)], done(),
                                          [tool("python", code="y = df.shape")], done()),
                  yes=True, host=KernelHost(ns), protect=True)
    agent.run("change the data")
    result = agent.loop.session.state.all[-2].tool_results()[0]
    assert result.is_error and "the user's variables are protected" in result.text()
    assert "df, data" in result.text()
    assert list(ns["df"].columns) == list("abcde") and ns["data"] == [1, 2, 3] and "x" not in ns
    assert "The user's variables are protected" in agent.loop._system()
    agent.run("only read")  # a call changing no existing variable runs as --yes allows
    assert ns["y"] == (1000, 5)
    agent.close()


def test_protect_from_personal_config_names_each_variable_in_the_approval(project: Path, tmp_path: Path) -> None:
    personal({"protect_variables": True, "permissions": {"allow": ["python"]}})
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("allow")

    ns = kernel_ns()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=CHANGE)], done()),
                  host=KernelHost(ns), approver=approver)
    agent.run("change the data")
    agent.close()
    assert len(asked) == 1
    assert "#   df: calls .drop(…, inplace=True)" in asked[0].detail
    assert "#   data: calls .append(…), which changes it" in asked[0].detail
    assert list(ns["df"].columns) == list("bcde")


def test_protect_from_a_project_file_is_ignored(project: Path, tmp_path: Path) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"protect_variables": True}))
    agent = Agent(project, model=scripted(tmp_path, done()), host=KernelHost({}))
    assert agent.loop.protecting is False
    agent.close()


@pytest.mark.parametrize("code", ["exec('df = 1')", "globals()['df'] = 1"])
def test_changes_not_seen_by_the_name_scan_still_show_created_names(code: str) -> None:
    ns: dict[str, Any] = {}
    assert watched(ns, [], code) == ["df: created int"]


@pytest.mark.timeout(240)
def test_in_a_kernel_the_cell_shows_the_changes_and_protect_mode_denies_headless(
    project: Path, tmp_path: Path
) -> None:
    from tests.test_notebook_kernel_undo import client, run_cells

    model = scripted(
        tmp_path, [tool("python", code=CHANGE)], done("Tried."), [tool("python", code=CHANGE)], done("Changed."),
    )
    magics = "get_ipython().magics_manager.registry['LarikMagics']"
    show = "print(list(df.columns), data, 'x' in globals())"
    nbc = client(project, [
        "%load_ext larik_jupyter",
        "import warnings\nwarnings.simplefilter('ignore')\nimport numpy as np\nimport pandas as pd\n"
        "df = pd.DataFrame(np.arange(5000).reshape(1000, 5), columns=list('abcde'))\ndata = [1, 2, 3]",
        f"{magics}.protect = True",
        f"%larik --model {model} --yes change the data",
        show,
        f"{magics}.protect = False",
        "%larik --yes change it now",
        show,
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert "variables are protected and this code changes df, data" in texts[3]
    assert "['a', 'b', 'c', 'd', 'e'] [1, 2, 3] False" in texts[4]
    for line in LINES:
        assert line in texts[6]
    assert "['b', 'c', 'd', 'e'] [1, 2, 3, 4] True" in texts[7]
    [path] = Path(os.environ["LARIK_DATA_DIR"]).glob("sessions/*/*.jsonl")
    denied, applied = stored_results(path)
    assert denied["is_error"] and "variables" not in denied
    assert [(v["name"], v["change"]) for v in applied["variables"]] == [
        ("df", "changed"), ("data", "changed"), ("x", "created")
    ]


def test_a_turns_changes_merge_over_its_calls(project: Path, tmp_path: Path) -> None:
    ns = kernel_ns()
    model = scripted(
        tmp_path,
        [tool("python", code="df.drop(columns=['a'], inplace=True); tmp = 1")],
        [tool("python", code="df = df.iloc[:10]; del tmp; z = [1]")], done(),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("twice")
    assert [c.text() for c in agent.history.variable_changes(1)] == [
        "df: DataFrame 1000×5 → 10×4", "z: created list len 1"
    ]
    agent.close()


@pytest.mark.timeout(240)
def test_notebook_run_reports_what_the_cell_did_to_the_variables(tmp_path: Path) -> None:
    from tests.test_notebook_fallback import run_turns

    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("%who_ls\ndata.append(4)\nz = len(data)", id="calc")]
    nbformat.write(work, tmp_path / "work.ipynb")
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": "calc"}}]},
        {"content": [{"type": "text", "text": "Ran it."}]},
    ]}
    driver = run_turns(tmp_path, script, "data = [1, 2, 3]", "%larik --yes --model scripted:script.json run calc")
    shown = "".join(o.get("data", {}).get("text/markdown", "") for o in driver.cells[2].outputs)
    assert "data: list len 3 → len 4, changed in place through cell calc · z: created int" in shown
    [path] = Path(os.environ["LARIK_DATA_DIR"]).glob("sessions/*/*.jsonl")
    (ran,) = stored_results(path)
    assert [(v["name"], v["change"]) for v in ran["variables"]] == [("data", "changed"), ("z", "created")]


def test_keys_that_are_not_strings_and_values_that_raise_never_fail_the_watch() -> None:
    class Hostile:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        __hash__ = object.__hash__

        @property
        def shape(self) -> Any:
            raise RuntimeError("no")

    ns: dict[Any, Any] = {1: "one", "h": Hostile(), ("t",): 2}
    assert watched(ns, ["h"], "ns_key = 3\nglobals()[2] = 'two'\nh.x = 1") == [
        "h: Hostile, may have changed (no fingerprint for this type)", "ns_key: created int"
    ]
