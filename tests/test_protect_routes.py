"""Protect mode and the variable report by every route code can take to the user's variables,
through `Agent` with a `KernelHost` (headless, and with an approver standing for a front end):
the namespace is compared before and after each call, so a change the scan cannot see is still
reported with its route, and in protect mode kept only if the user says so."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from larik_jupyter import Agent, KernelHost, PermissionAnswer, PermissionRequest
from larik_jupyter.session.variable_changes import VariableChange
from tests.agent_helpers import Hostile, done, results_of, scripted, tool

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")

SETUP = """
import random
import numpy as np
def f():
    df.drop(columns=['a'], inplace=True)
def g():
    global x
    x = 99
"""

# Each route, the variable it changes, its route as reported, and a check that it is unchanged.
ROUTES = [
    ("f()", "df", "df: DataFrame 2×2 → 2×1, changed in place through f()"),
    ("g()", "x", "x: int, rebound through g()"),
    ("globals()['x'] = 2", "x", "x: int, rebound through globals()"),
    ("exec('x = 3')", "x", "x: int, rebound through exec"),
    ("d = data\nd.append(4)", "data", "data: list len 3 → len 4, changed in place through the alias d"),
    ("df.drop(**{'columns': ['a'], 'inplace': True})", "df", "df: DataFrame 2×2 → 2×1, changed in place"),
    ("random.shuffle(data)", "data", "data: list len 3, changed in place through random.shuffle(…)"),
    ("np.add(arr, 1, out=arr)", "arr", "arr: ndarray 3, changed in place through np.add(…)"),
]


def namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(SETUP, ns)
    # Shuffled by a fixed seed so `random.shuffle` surely changes the order.
    random.seed(1)
    ns.update(df=pd.DataFrame({"a": [1, 2], "b": [3, 4]}), x=1, data=[1, 2, 3], arr=np.zeros(3))
    return ns


def state(ns: dict[str, Any]) -> tuple[Any, ...]:
    return list(ns["df"].columns), ns["x"], list(ns["data"]), list(ns["arr"])


BEFORE = (["a", "b"], 1, [1, 2, 3], [0.0, 0.0, 0.0])


@pytest.mark.parametrize(("code", "name", "line"), ROUTES)
def test_without_protect_the_report_names_the_change_and_its_route(
    project: Path, tmp_path: Path, code: str, name: str, line: str
) -> None:
    ns = namespace()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True, host=KernelHost(ns))
    agent.run("change it")
    (result,) = results_of(agent)
    assert line in [_text(v) for v in result.variables or []]
    assert state(ns) != BEFORE
    agent.close()


def _text(stored: dict[str, Any]) -> str:
    return VariableChange.model_validate(stored).text()


@pytest.mark.parametrize(("code", "name", "line"), ROUTES)
def test_protect_headless_rolls_back_every_route_and_tells_the_model(
    project: Path, tmp_path: Path, code: str, name: str, line: str
) -> None:
    ns = namespace()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()),
                  yes=True, host=KernelHost(ns), protect=True)
    agent.run("change it")
    (result,) = results_of(agent)
    assert state(ns) == BEFORE, code
    assert result.is_error
    if "**" in code:  # the scan sees that `**` may pass inplace=True: denied before it runs
        assert result.text().startswith("Permission denied") and "this code changes df" in result.text()
        return
    assert "the user's variables are protected" in result.text() and "Work on a copy" in result.text()
    assert f"so {name} is back as before the call" in result.text()
    changed = [_text(v) for v in result.variables or []]
    assert f"{line}, rolled back" in changed
    agent.close()


def test_protect_with_a_front_end_asks_keep_or_roll_back_naming_the_route(project: Path, tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []
    answers = iter(["allow", "deny"])

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer(next(answers))  # type: ignore[arg-type]

    ns = namespace()
    model = scripted(tmp_path, [tool("python", code="f()")], [tool("python", code="globals()['x'] = 2; g()")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), approver=approver, protect=True)
    agent.run("change it")
    assert [(r.ask, r.summary) for r in asked] == [
        ("keep", "the code changed df through f()"),
        ("keep", "the code changed x through g()"),
    ]
    assert "#   df: DataFrame 2×2 → 2×1, changed in place through f()" in asked[0].detail
    assert list(ns["df"].columns) == ["b"]  # kept
    assert ns["x"] == 1  # rolled back
    kept, rolled = results_of(agent)
    assert not kept.is_error and "rolled_back" not in kept.variables[0]
    assert rolled.is_error and "the user chose to roll them back" in rolled.text()
    agent.close()


def test_the_agents_own_variables_are_not_asked_about_until_someone_touches_them(
    project: Path, tmp_path: Path
) -> None:
    ns = namespace()
    model = scripted(
        tmp_path,
        [tool("python", code="mine = [1]")], done(),
        [tool("python", code="globals()['mine'].append(2); mine.append(3)")], done(),
        [tool("python", code="globals()['mine'].append(4)")], done(),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), protect=True)
    agent.run("make it")
    agent.run("change yours")
    assert ns["mine"] == [1, 2, 3]  # no ask, no rollback: the agent made it
    ns["mine"].append(10)  # the user touches it between turns: now it is the user's data
    agent.run("change it again")
    assert ns["mine"] == [1, 2, 3, 10]
    assert results_of(agent)[-1].is_error
    agent.close()


def test_undo_after_globals_and_a_function_restores_both(project: Path, tmp_path: Path) -> None:
    ns = namespace()
    model = scripted(tmp_path, [tool("python", code="globals()['x'] = 2; f(); g()")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("change it")
    assert ns["x"] == 99 and list(ns["df"].columns) == ["b"]
    report = agent.undo()
    assert state(ns) == BEFORE
    assert "Undid prompt 1." in report.plain() and "restored variables: df, x" in report.plain()
    agent.close()


def test_undo_says_plainly_what_it_could_not_restore(project: Path, tmp_path: Path) -> None:
    ns = namespace()
    model = scripted(tmp_path, [tool("python", code="random.shuffle(data); globals()['x'] = 2")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("shuffle it")
    report = agent.undo()
    text = report.plain()
    assert "Undid prompt 1." not in text and "Prompt 1 was only partly undone:" in text
    assert "restored variables: x" in text
    assert "could not restore: data (changed in place through random.shuffle(…)" in text
    assert ns["x"] == 1 and ns["data"] != [1, 2, 3]
    agent.close()


@pytest.mark.parametrize("protect", [False, True])
def test_a_hostile_variable_never_stops_a_call_that_names_it(project: Path, tmp_path: Path, protect: bool) -> None:
    ns: dict[str, Any] = {"h": Hostile(), "n": 1}
    model = scripted(tmp_path, [tool("python", code="k = type(h).__name__\nh")],
                     [tool("python", code="h = 5")], done())
    approver = None
    if protect:
        async def allow(request: PermissionRequest) -> PermissionAnswer:
            return PermissionAnswer("allow")
        approver = allow
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), protect=protect, approver=approver)
    agent.run("look at it")
    first, second = results_of(agent)
    assert ns["k"] == "Hostile" and "repr failed" in first.text()
    assert not second.is_error and ns["h"] == 5
    agent.close()


def test_a_variable_over_the_fingerprint_budget_is_said_not_compared_once_a_turn(project: Path, tmp_path: Path) -> None:
    # `globals()` lets the code reach every variable, `big` included; code that cannot reach
    # `big` (the last call) has nothing to compare it for.
    ns: dict[str, Any] = {"big": list(range(200_000)), "small": [1]}
    model = scripted(tmp_path, [tool("python", code="globals()['small'].append(2)")],
                     [tool("python", code="globals()['small'].append(3)")], done(),
                     [tool("python", code="globals(); 1")], done(), [tool("python", code="small.append(4)")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("twice")
    agent.run("again")
    agent.run("without reaching big")
    first, second, third, fourth = (r.text() for r in results_of(agent))
    note = "[not compared, so changes to them are not seen: big (over the 100,000 items a fingerprint hashes)]"
    assert note in first and note not in second and note in third
    assert note not in fourth and ns["small"] == [1, 2, 3, 4]
    agent.close()


KERNEL_ROUTES = [
    ("import sys\nsetattr(sys.modules['__main__'], 'x', 5)", "x: int, rebound through setattr"),
    ("__import__('__main__').x = 6", "x: int, rebound through __import__('__main__')"),
    ("get_ipython().run_cell('data.append(4)')", "data: list len 3 → len 4, changed in place through get_ipython().run_cell"),
    ("f()", "df: DataFrame 2×2 → 2×1, changed in place through f()"),
]


@pytest.mark.timeout(300)
def test_in_a_kernel_every_route_is_reported_and_protect_rolls_it_back_headless(project: Path, tmp_path: Path) -> None:
    import json

    import nbformat

    from tests.test_notebook_kernel_undo import client, run_cells

    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("data.append(7)", id="calc")]
    nbformat.write(work, project / "work.ipynb")
    calls = [tool("python", code=code) for code, _ in KERNEL_ROUTES]
    calls.append(tool("notebook_run", path="work.ipynb", cell_id="calc"))
    model = scripted(tmp_path, calls, done("Tried."), calls, done("Changed."))
    magics = "get_ipython().magics_manager.registry['LarikMagics']"
    show = "print(json.dumps([list(df.columns), x, data]))"
    nbc = client(project, [
        "%load_ext larik_jupyter",
        "import json, warnings\nwarnings.simplefilter('ignore')\nimport pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})\nx = 1\ndata = [1, 2, 3]\n"
        "def f():\n    df.drop(columns=['a'], inplace=True)",
        f"{magics}.protect = True",
        f"%larik --model {model} --yes change the data",
        show,
        f"{magics}.protect = False",
        "%larik --yes change it now",
        show,
        "%larik /undo",
        show,
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert json.loads(texts[4].strip()) == [["a", "b"], 1, [1, 2, 3]]  # every change rolled back
    assert "Work on a copy" in texts[3]
    for _, line in KERNEL_ROUTES:
        assert f"{line}, rolled back" in texts[3]
        assert line in texts[6]
    assert "data: list len 4 → len 5, changed in place through cell calc" in texts[6]
    assert json.loads(texts[7].strip()) == [["b"], 6, [1, 2, 3, 4, 7]]
    # `run_cell` changed data before anything named it, so undo had no copy, and says so.
    assert "Prompt 2 was only partly undone:" in texts[8] and "restored variables: x, df" in texts[8]
    assert "could not restore: data (changed in place through get_ipython().run_cell" in texts[8]
    assert json.loads(texts[9].strip()) == [["a", "b"], 1, [1, 2, 3, 4, 7]]


def test_routes_through_the_main_module_are_asked_about_with_a_front_end(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(x=1, data=[1, 2, 3])
    monkeypatch.setitem(sys.modules, "__main__", main)  # the kernel's namespace is __main__'s
    asked: list[str] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request.summary)
        return PermissionAnswer("deny")

    model = scripted(
        tmp_path,
        [tool("python", code="import sys\nsetattr(sys.modules['__main__'], 'x', 5)")],
        [tool("python", code="__import__('__main__').data.append(4)")], done(),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(main.__dict__), approver=approver, protect=True)
    agent.run("change it")
    assert asked == [
        "the code changed x through setattr",
        "the code changed data through __import__('__main__')",
    ]
    assert main.x == 1 and main.data == [1, 2, 3]
    agent.close()
