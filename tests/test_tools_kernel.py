"""python and inspect_variables against a plain dict namespace, as a kernel's user namespace."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from larik_jupyter.tools import Env, ToolResult, default_tools
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel.python import PythonTool


def kernel_env(tmp_path: Path, namespace: dict[str, Any], shown: list[object] | None = None) -> Env:
    return Env(
        cwd=tmp_path,
        root=tmp_path,
        host=KernelHost(namespace, display=shown.append if shown is not None else None),
    )


def run_python(env: Env, code: str) -> ToolResult:
    return default_tools(env)["python"].run(env, {"code": code})


def test_stdout_stderr_and_last_expression(tmp_path: Path) -> None:
    ns: dict[str, Any] = {"x": 20}
    env = kernel_env(tmp_path, ns)
    result = run_python(
        env, "import sys\nprint('hi')\nprint('warn', file=sys.stderr)\ny = x + 1\n{'y': y}"
    )
    assert result.content == "hi\n[stderr]\nwarn\n{'y': 21}"
    assert not result.is_error and ns["y"] == 21
    assert run_python(env, "y * 2").content == "42"
    assert run_python(env, "z = 1").content == "(no output)"


def test_exception_gives_a_short_traceback_of_the_models_code(tmp_path: Path) -> None:
    env = kernel_env(tmp_path, {})
    result = run_python(env, "def f(n):\n    return 1 / n\n\nprint('before')\nf(0)")
    assert result.is_error
    lines = result.content.splitlines()
    assert lines[0] == "before"
    assert lines[1] == "Traceback (most recent call last):"
    assert "    return 1 / n" in lines
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert "kernel.py" not in result.content


def test_syntax_error_is_an_error_result(tmp_path: Path) -> None:
    result = run_python(kernel_env(tmp_path, {}), "x = (1,\n")
    assert result.is_error and "SyntaxError" in result.content


class Chart:
    def _repr_html_(self) -> str:
        return "<b>chart</b>"

    def __repr__(self) -> str:
        return "Chart()"


def test_rich_results_are_shown_to_the_user_once_with_their_call(tmp_path: Path) -> None:
    from larik_jupyter.agent import events as ae
    from larik_jupyter.frontends.notebook.view import TranscriptView

    shown: list[object] = []
    env = kernel_env(tmp_path, {"Chart": Chart}, shown)
    result = run_python(env, "Chart()")
    assert shown == [] and isinstance(result.display, Chart)  # not displayed apart from its call
    assert result.content == "Chart()\n[shown to the user as rich output]"
    assert run_python(env, "'plain'").display is None
    view = TranscriptView()
    view.handle(ae.ToolRequested("t1", "python", {"code": "Chart()"}, "python: Chart()"))
    view.handle(ae.ToolFinished(id="t1", name="python", summary="", content=result.content, is_error=False,
                                seconds=0.1, display=result.display))
    assert view.markdown().count("<b>chart</b>") == 1 and "shown to the user" not in view.markdown()


def test_kernel_tools_run_on_the_calling_thread(tmp_path: Path) -> None:
    ns: dict[str, Any] = {"threading": threading}
    env = kernel_env(tmp_path, ns)
    tool = default_tools(env)["python"]
    asyncio.run(tool.arun(env, {"code": "ident = threading.get_ident()"}))
    assert ns["ident"] == threading.get_ident()


def test_python_without_a_kernel_is_refused(tmp_path: Path) -> None:
    env = Env(cwd=tmp_path, root=tmp_path)
    assert "python" not in default_tools(env)
    result = PythonTool().run(env, {"code": "1"})
    assert result.is_error and "needs a live kernel" in result.content


def test_inspect_variables_lists_user_data_only(tmp_path: Path) -> None:
    import json

    import numpy as np
    import pandas as pd

    ns: dict[str, Any] = {
        "df": pd.DataFrame({"name": ["a", "b", "c"], "age": [1, 2, 3]}),
        "arr": np.zeros((2, 3)),
        "items": [1, 2, 3],
        "name": "a" * 100,
        "n": 7,
        "json": json,
        "helper": lambda: 1,
        "Chart": Chart,
        "_hidden": 1,
        "In": [],
        "Out": {},
        "exit": object(),
        "quit": object(),
        "get_ipython": object(),
    }
    env = kernel_env(tmp_path, ns)
    result = default_tools(env)["inspect_variables"].run(env, {})
    assert result.content.splitlines() == [
        "arr: numpy.ndarray, shape 2×3, dtype float64",
        f"df: pandas.DataFrame, shape 3×2, columns [name: {pd.DataFrame({'s': ['x']}).dtypes['s']}, age: int64]",
        "items: list, len 3",
        "n: int, = 7",
        "name: str, = '" + "a" * 79 + "…",
    ]


def test_inspect_variables_survives_objects_that_raise(tmp_path: Path) -> None:
    class Broken:
        @property
        def shape(self) -> tuple[int, ...]:
            raise RuntimeError("lazy frame not loaded")

    env = kernel_env(tmp_path, {"b": Broken()})
    content = default_tools(env)["inspect_variables"].run(env, {}).content
    assert (
        content
        == f"b: {__name__}.Broken, its size unknown (RuntimeError (lazy frame not loaded))"
    )
    empty = kernel_env(tmp_path, {"_x": 1})
    assert default_tools(empty)["inspect_variables"].run(empty, {}).content == (
        "No user variables are defined in the kernel."
    )


def test_exit_in_model_code_does_not_end_the_kernel(tmp_path: Path) -> None:
    result = run_python(kernel_env(tmp_path, {}), "import sys\nsys.exit(3)")
    assert result.is_error and result.content.splitlines()[-1] == "SystemExit: 3"


def test_the_names_code_may_change_come_from_its_syntax(tmp_path: Path) -> None:
    import ast

    from larik_jupyter.tools.kernel.touched_names import names_it_may_change

    code = (
        "df.drop(columns=['a'], inplace=True)\n"
        "data.append(4)\n"
        "cfg['k'] = 1\n"
        "obj.attr.inner = 2\n"
        "del table['row']\n"
        "total += 1\n"
        "import numpy as np, os.path\n"
        "from math import pi as PI\n"
        "squares = [i * i for i in range(3)]\n"
        "def bump():\n    global counter\n    local = 1\n    counter = local\n"
        "class Thing:\n    field = 1\n"
        "if (n := 3):\n    pass\n"
        "for row in rows:\n    pass\n"
        "del gone\n"
        "print(untouched, len(also_untouched))\n"
        "frame['a'].fillna(0, inplace=True)"
    )
    assert names_it_may_change(ast.parse(code)) == [
        "df", "data", "cfg", "obj", "table", "total", "np", "os", "PI", "squares", "bump",
        "counter", "Thing", "n", "row", "gone", "frame",
    ]


def test_python_with_snapshots_restores_and_removes_exactly_what_the_code_did(tmp_path: Path) -> None:
    from larik_jupyter.tools.kernel.undo import kernel_snapshots

    ns: dict[str, Any] = {"data": [1, [2]], "cfg": {"k": 0}, "keep": [9], "gone": "here"}
    env = kernel_env(tmp_path, ns)
    env.keeps_variables = True
    snapshots = kernel_snapshots(env.call.session_id)
    snapshots.open_turn(1)
    run_python(env, "data[1].append(3)\ncfg['k'] = 1\ndel gone\nnew = keep")
    run_python(env, "data.append(5)\nnew.append(1)\nlater = 2")  # a second call in the same turn
    # `keep` changed through its alias `new`: copied when the alias was made, so put back too.
    assert snapshots.recorded(1) == [
        ("data", True), ("cfg", True), ("gone", True), ("keep", True), ("new", False), ("later", False)
    ]
    undone = snapshots.restore(1, [name for name, _ in snapshots.recorded(1)], keep=False)
    assert undone.restored == ["data", "cfg", "gone", "keep"] and undone.removed == ["new", "later"]
    assert ns == {"data": [1, [2]], "cfg": {"k": 0}, "keep": [9], "gone": "here", "__builtins__": ns["__builtins__"]}
    assert snapshots.restore(1, ["data"], keep=False).gone == ["data"]  # a snapshot is used once


def test_value_sizes_and_copies_by_type() -> None:
    import numpy as np
    import pandas as pd

    from larik_jupyter.tools.kernel.value_copy import (
        NotCopyable,
        copy_value,
        human_size,
        value_size,
    )

    # An object column (pandas 3 with pyarrow installed stores plain strings in Arrow buffers).
    frame = pd.DataFrame({"a": np.arange(1000, dtype="int64"), "s": pd.Series(["text"] * 1000, dtype=object)})
    # What the copy takes: the buffers, not the strings that a copy of the frame shares.
    assert value_size(frame) == frame.memory_usage(deep=False).sum() < frame.memory_usage(deep=True).sum()
    copied = copy_value(frame)
    assert copied is not frame and copied.equals(frame)
    assert value_size(np.zeros(1000)) == 8000
    nested = {"k": [1, 2, {"deep": "x" * 1000}]}
    assert 1000 < value_size(nested) < 2000 and copy_value(nested) == nested
    for shared in (np, len, int):
        try:
            copy_value(shared)
        except NotCopyable as exc:
            assert str(exc) in ("a module", "a function", "a class")
        else:
            raise AssertionError(f"{shared!r} was copied")
    assert (human_size(512 << 20), human_size(int(1.2 * (1 << 30))), human_size(12)) == ("512 MB", "1.2 GB", "12 bytes")


def test_a_timeout_stops_the_code_on_the_main_thread_and_on_a_worker_thread(tmp_path: Path) -> None:
    """On the main thread a SIGINT breaks even a sleep; elsewhere (the `Agent` API driven from a
    worker thread) the KeyboardInterrupt lands at the loop's next bytecode."""
    ns: dict[str, Any] = {}
    env = kernel_env(tmp_path, ns)
    python = default_tools(env)["python"]
    started = time.monotonic()
    slept = python.run(env, {"code": "import time\nprint('zzz')\ntime.sleep(60)\nwoke = True", "timeout": 1})
    assert time.monotonic() - started < 30  # stopped: not the 60 s sleep's natural end
    assert slept.is_error and slept.content.startswith("The code timed out after 1 s and was stopped; its output so far:\nzzz")
    assert slept.content.endswith("KeyboardInterrupt\n[stopped after 1 s (timeout)]") and "woke" not in ns
    found: list[ToolResult] = []
    worker = threading.Thread(target=lambda: found.append(python.run(env, {"code": "while True:\n    n = 1", "timeout": 1})))
    started = time.monotonic()
    worker.start()
    worker.join(30)
    assert not worker.is_alive() and time.monotonic() - started < 30  # stopped: the loop never ends
    assert found[0].is_error and "timed out after 1 s" in found[0].content
    assert python.run(env, {"code": "1 + 1"}).content == "2"  # nothing pending lands later
