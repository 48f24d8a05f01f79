"""Random-number state as data, through `Agent` with a `KernelHost` and a scripted model: a call
that draws from the user's generator is reported (`rng: Generator, state advanced`), protect
mode asks before it or rolls it back, /undo puts the state back; a generator or iterator the
code consumed is reported, and undo says when it cannot put it back. Each fact has its twin: a
call that does not draw (or does not consume) reports nothing."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.session.variable_changes import VariableChange
from tests.agent_helpers import done, results_of, scripted, tool

# Each kind of generator, as the report names it, and how to make one seeded.
KINDS = [
    ("Generator", lambda: np.random.default_rng(7)),
    ("RandomState", lambda: np.random.RandomState(123)),
    ("Random", lambda: random.Random(5)),
]
SETUP = "def draw():\n    return rng.random()\n"


def namespace(make: Any) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(SETUP, ns)
    ns["rng"] = make()
    return ns


def lines(result: Any) -> list[str]:
    return [VariableChange.model_validate(v).text() for v in result.variables or []]


def next_draws(rng: Any) -> list[float]:
    """What the generator gives next, from a copy of it (the generator itself stays as it is)."""
    import copy

    twin = copy.deepcopy(rng)
    return [twin.random() for _ in range(3)]


@pytest.mark.parametrize(("kind", "make"), KINDS)
@pytest.mark.parametrize(("code", "route"), [("rng.random()", ""), ("draw()", " through draw()")])
def test_a_draw_is_reported_as_state_advanced_and_a_read_is_not(
    project: Path, tmp_path: Path, kind: str, make: Any, code: str, route: str
) -> None:
    ns = namespace(make)
    model = scripted(tmp_path, [tool("python", code=code)], [tool("python", code="type(rng).__name__")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("draw")
    drew, looked = results_of(agent)
    assert f"rng: {kind}, state advanced{route}" in lines(drew)
    assert next_draws(ns["rng"]) != next_draws(make())
    assert lines(looked) == []  # the twin: looking at it does not advance it
    agent.close()


@pytest.mark.parametrize(("kind", "make"), KINDS)
def test_undo_puts_the_generators_state_back(project: Path, tmp_path: Path, kind: str, make: Any) -> None:
    ns = namespace(make)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code="x = rng.random()")], done()),
                  yes=True, host=KernelHost(ns))
    agent.run("draw")
    assert next_draws(ns["rng"]) != next_draws(make())
    report = agent.undo()
    assert "restored variables: rng" in report.plain()
    assert next_draws(ns["rng"]) == next_draws(make())
    agent.close()


@pytest.mark.parametrize(("kind", "make"), KINDS)
def test_protect_headless_denies_a_visible_draw_and_rolls_back_a_hidden_one(
    project: Path, tmp_path: Path, kind: str, make: Any
) -> None:
    ns = namespace(make)
    model = scripted(tmp_path, [tool("python", code="rng.random()")], [tool("python", code="draw()")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), protect=True)
    agent.run("draw")
    denied, rolled = results_of(agent)
    assert denied.is_error and "this code changes rng" in denied.text()
    assert "np.random.default_rng(seed)" in denied.text()  # the agent is told to make its own
    assert rolled.is_error and "so rng is back as before the call" in rolled.text()
    assert f"rng: {kind}, state advanced through draw(), rolled back" in lines(rolled)
    assert "one of your own (`np.random.default_rng(seed)`)" in rolled.text()
    assert next_draws(ns["rng"]) == next_draws(make())
    agent.close()
    # The twin: without protect mode the same hidden draw is kept.
    ns = namespace(make)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code="draw()")], done()),
                  yes=True, host=KernelHost(ns))
    agent.run("draw")
    assert next_draws(ns["rng"]) != next_draws(make())
    agent.close()


def test_the_system_prompt_tells_the_agent_to_make_its_own_generator_under_protect(project: Path, tmp_path: Path) -> None:
    from larik_jupyter.agent.prompt import system_prompt

    protected = system_prompt(project, project, "", in_kernel=True, protected=True)
    assert "make a generator of your own (`rng = np.random.default_rng(seed)`)" in protected
    assert "default_rng" not in system_prompt(project, project, "", in_kernel=True, protected=False)


def test_a_consumed_generator_is_reported_and_undo_says_it_cannot_put_it_back(project: Path, tmp_path: Path) -> None:
    ns: dict[str, Any] = {}
    exec("gen = (i * i for i in range(10))\nit = iter([1, 2, 3])\nlate = (i for i in range(3))", ns)
    model = scripted(tmp_path, [tool("python", code="a = next(gen)\nb = next(gen)\nc = next(it)")],
                     [tool("python", code="type(gen).__name__, type(late).__name__")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("take")
    took, looked = results_of(agent)
    changed = lines(took)
    assert "gen: generator, consumed through next(…)" in changed
    assert "it: list_iterator, consumed through next(…)" in changed
    assert lines(looked) == []  # the twin: naming them without taking items changes nothing
    text = agent.undo().plain()
    assert "restored variables: it" in text and "could not restore: gen (cannot be copied" in text
    assert list(ns["it"]) == [1, 2, 3]  # the iterator, copied before the call, is back
    assert next(ns["gen"]) == 4  # the generator is not: it stays consumed, as undo said
    agent.close()


def test_protect_asks_before_code_takes_items_from_the_users_generator(project: Path, tmp_path: Path) -> None:
    ns: dict[str, Any] = {}
    exec("gen = (i for i in range(10))", ns)
    model = scripted(tmp_path, [tool("python", code="for x in gen:\n    break")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), protect=True)
    agent.run("take")
    (denied,) = results_of(agent)
    assert denied.is_error and "this code changes gen" in denied.text()
    assert next(ns["gen"]) == 0
    agent.close()


@pytest.mark.parametrize(("cells", "code", "said"), [
    (["import numpy as np\nnp.random.seed(0)"], "np.random.rand()", "np.random"),
    (["import random\nrandom.seed(3)"], "random.random()", "random"),
    # The twins: the user never seeded it, or the code draws from a generator of its own.
    (["import numpy as np"], "np.random.rand()", None),
    (["import numpy as np\nnp.random.seed(0)"], "np.random.default_rng(1).random()", None),
])
def test_a_global_random_state_the_users_cells_seeded_is_said_when_the_code_advances_it(
    project: Path, tmp_path: Path, cells: list[str], code: str, said: str | None
) -> None:
    ns: dict[str, Any] = {"In": ["", *cells], "np": np, "random": random}
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True, host=KernelHost(ns))
    agent.run("draw")
    (result,) = results_of(agent)
    if said is None:
        assert "global random state" not in result.text()
    else:
        assert f"[global random state: this code advanced {said}, which the user's cells seed" in result.text()
        assert "np.random.default_rng(seed)" in result.text()
    agent.close()
