"""No value crashes a turn (issue 52): a property test over namespaces of generated hostile
objects, whose `__bool__`, `__len__`, `__eq__`, `__hash__`, `__iter__`, `__repr__`, `shape` and
`__getattr__` raise, compute (count their calls), or return odd things (a lazy scalar whose
truth raises, a negative length, an endless iterator, a shape of lazy scalars), some claiming
to come from a frame library's module, some real pandas or polars frames with such hooks. Through `Agent` with a `KernelHost`, each under an
egress policy: a call that changes one, the variables inspected, a call that reads them all
(so their views are made) and the turn's request; no call fails, and the changed one is "may
have changed" with the reason."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from larik_jupyter import Agent, KernelHost
from larik_jupyter.session.variable_changes import VariableChange
from tests.agent_helpers import done, personal, results_of, scripted, tool

pl = pytest.importorskip("polars", reason="polars is a test extra: pip install -e '.[test]'")
POLICIES = ["never", "schema", "stats", "sample 2 mask email"]
MODULES = ["__main__", "polars.dataframe.frame", "dask.dataframe.core", "pandas.core.frame",
           "pyspark.sql.dataframe", "duckdb", "pyarrow.lib", "mylib.proxy"]
CALLS = {"n": 0}  # what "compute" behaviours did: they run, and nothing waits on them


class LazyScalar:
    """What a lazy library returns from a comparison: its truth is a computation it refuses."""

    def __bool__(self) -> bool:
        raise TypeError("Trying to convert LazyScalar to a boolean value")

    def __index__(self) -> int:
        raise TypeError("a lazy scalar has no index")

    __hash__ = object.__hash__


def _compute(result: Any) -> Any:
    CALLS["n"] += 1
    return result


def _raise(*_: Any) -> Any:
    raise RuntimeError("hostile")


# For each hook, what it may do: each a function of the object.
BEHAVIOURS: dict[str, dict[str, Any]] = {
    "__bool__": {"raise": _raise, "odd": lambda self: "yes", "compute": lambda self: _compute(True)},
    "__len__": {"raise": _raise, "odd": lambda self: -1, "huge": lambda self: 10**20, "compute": lambda self: _compute(3)},
    "__eq__": {"raise": _raise, "odd": lambda self, other: LazyScalar(), "compute": lambda self, other: _compute(False)},
    "__hash__": {"raise": _raise, "odd": lambda self: 0},
    "__iter__": {"raise": _raise, "endless": lambda self: itertools.count(), "odd": lambda self: 5},
    "__repr__": {"raise": _raise, "odd": lambda self: "x" * 1_000_000, "compute": lambda self: _compute("Lazy")},
    "shape": {"raise": property(_raise), "odd": property(lambda self: (LazyScalar(), "a")),
              "lazy": property(lambda self: LazyScalar()), "int": property(lambda self: 5)},
    "__getattr__": {"raise": lambda self, name: _raise(), "odd": lambda self, name: LazyScalar(),
                    "self": lambda self, name: self, "compute": lambda self, name: _compute(None)},
}


@st.composite
def hostile_class(draw: st.DrawFn) -> type:
    hooks = {
        hook: draw(st.sampled_from(sorted(options)))
        for hook, options in BEHAVIOURS.items() if draw(st.booleans())
    }
    body = {hook: BEHAVIOURS[hook][how] for hook, how in hooks.items()}
    body["__module__"] = draw(st.sampled_from(MODULES))
    if "__eq__" in body and "__hash__" not in body:
        body["__hash__"] = object.__hash__
    name = draw(st.sampled_from(["DataFrame", "LazyFrame", "Proxy", "Series", "Relation"]))
    # Some are real frames with hostile hooks: the frame layer reads them by their library.
    base = draw(st.sampled_from([object, object, pd.DataFrame, pl.DataFrame]))
    if base is not object:
        body.pop("__module__")
        body.pop("__getattr__", None)  # their libraries' own construction looks attributes up
    return type(name, (base,), body)


def _made(cls: type) -> object:
    """An instance (a frame subclass holds a canary column)."""
    if issubclass(cls, pd.DataFrame | pl.DataFrame):
        return cls({"email": ["hostile.canary@ex.com"], "n": [1]})
    return cls()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(classes=st.lists(hostile_class(), min_size=1, max_size=4))
def test_a_namespace_of_hostile_objects_never_fails_a_call(project: Path, tmp_path: Path, classes: list[type]) -> None:
    names = [f"h{i}" for i in range(len(classes))]
    personal({"egress": {"policies": {n: POLICIES[i % len(POLICIES)] for i, n in enumerate(names)}}})
    ns: dict[str, Any] = {n: _made(cls) for n, cls in zip(names, classes, strict=True)}
    ns["plain"] = [1, 2, 3]
    model = scripted(
        tmp_path,
        [tool("python", code="h0.tag = 1\nplain.append(4)")],
        [tool("inspect_variables")],
        [tool("python", code=f"print([type(v).__name__ for v in ({', '.join(names)},)])")],
        done(),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    try:
        agent.run("look at everything")
        results = results_of(agent)
        assert len(results) == 3, [r.text() for r in results]
        for result in results:
            assert not result.is_error, result.text()
        changes = {c.name: c for c in map(VariableChange.model_validate, results[0].variables or [])}
        # The one the code changed cannot be compared, and the report says why (a class that
        # only claims a frame library's module is no frame of it).
        if not issubclass(classes[0], pd.DataFrame | pl.DataFrame):
            assert changes["h0"].change == "unknown" and changes["h0"].note
            assert changes["h0"].text().startswith("h0: ") and "may have changed (" in changes["h0"].text()
        assert changes["plain"].text().startswith("plain: list len 3 → len 4, changed in place")
    finally:
        agent.close()
