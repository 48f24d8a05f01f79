"""Random-number generators and iterators as data: a digest of where they stand, so a call that
draws from the user's generator or takes items from their iterator is a change like any other.

A `random.Random`, a numpy `Generator`, `RandomState` or bit generator is compared by its whole
state (`rng: Generator, state advanced`): a copy of it puts the state back, so protect mode and
undo restore it. A generator is compared by where its frame stands (the instruction it is
suspended at and its local variables, by value for scalars and by identity otherwise), a
builtin iterator (`iter(list)`, `zip`, `map`, `enumerate`, `range`'s) by what is left of it, as
Python's pickling reads it (`gen: generator, consumed`); a generator cannot be copied, so a
consumed one is reported and not restorable. The global state of the `random` and `np.random`
modules is no variable (every library in the kernel draws from it, so protect mode does not ask
and undo does not put it back), but where the user's own cells seeded it (`np.random.seed(0)`
in IPython's `In`), a call that advances it says so in its result (`GlobalStates`). Nothing here
imports numpy.
"""

from __future__ import annotations

import ast
import random
import re
import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

import xxhash

from larik_jupyter.tools.kernel.touched_names import root_name

ADVANCED, CONSUMED = "state advanced", "consumed"
# How deep the parts of an iterator's state (`zip` of `map` of a list iterator) are followed.
_MAX_DEPTH = 8
_SCALARS = (int, float, complex, bool, str, bytes, type(None), range, slice)
# Methods of a generator that read its state without drawing from it.
_READS = frozenset({"getstate", "get_state", "__getstate__", "__reduce__", "__repr__", "bit_generator"})


def _numpy_kinds() -> tuple[type, ...]:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return ()
    rnd = numpy.random
    return (rnd.Generator, rnd.RandomState, rnd.BitGenerator)


def is_rng(value: object) -> bool:
    """Whether `value` is a random-number generator whose state is data."""
    cls = type(value)
    if issubclass(cls, random.Random):
        return not issubclass(cls, random.SystemRandom)  # the OS's randomness has no state
    return issubclass(cls, _numpy_kinds())


def _is_iterator(value: object) -> bool:
    cls = type(value)
    if issubclass(cls, types.GeneratorType):
        return True
    # Builtin iterators only: a class of the user's defines its own `__next__`.
    try:
        return cls.__module__ in ("builtins", "itertools") and hasattr(cls, "__next__")
    except Exception:  # a class whose attributes raise
        return False


def change_word(value: object) -> str | None:
    """How the variable report says `value` changed: `state advanced`, `consumed`, or None for
    any other value (`changed in place`)."""
    if is_rng(value):
        return ADVANCED
    return CONSUMED if _is_iterator(value) else None


def state_digest(value: object) -> int | None:
    """A digest of where `value` stands if it is a generator of random numbers or of items (an
    iterator), else None. May raise (a hostile object): the caller treats that as no digest."""
    if is_rng(value):
        state: Any = value.getstate() if isinstance(value, random.Random) else _numpy_state(value)
    elif _is_iterator(value):
        state = _iterator_state(value, 0)
    else:
        return None
    return _digest_of(state) >> 1  # non-negative, never `IMMUTABLE`


def _numpy_state(value: Any) -> object:
    numpy = sys.modules["numpy"]
    if isinstance(value, numpy.random.RandomState):
        return value.get_state(legacy=False)
    if isinstance(value, numpy.random.Generator):
        return value.bit_generator.state
    return value.state


def _iterator_state(value: Any, depth: int) -> object:
    if isinstance(value, types.GeneratorType):
        frame = value.gi_frame
        if frame is None:
            return "finished"
        local = frame.f_locals
        return (frame.f_lasti, [(k, _part(v, depth)) for k, v in local.items()])
    with warnings.catch_warnings():  # pickling itertools objects is deprecated from Python 3.12
        warnings.simplefilter("ignore", DeprecationWarning)
        reduced = value.__reduce__()
    return [_part(item, depth) for item in reduced[1:]] if isinstance(reduced, tuple) else repr(reduced)


def _part(value: object, depth: int) -> object:
    """A piece of an iterator's state: scalars by value, iterators by their own state, any other
    object by identity (a list iterator's list: its items are the list's, not the iterator's)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, list):  # what is left (a dict's or set's iterator): a fresh list each time
        return ("list", len(value))
    if isinstance(value, tuple) and depth < _MAX_DEPTH:
        return tuple(_part(item, depth + 1) for item in value)
    if depth < _MAX_DEPTH and _is_iterator(value):
        return _iterator_state(value, depth + 1)
    return f"@{id(value)}"


def _flat(state: object) -> Iterator[bytes]:
    """The state as bytes: arrays by their buffer, containers item by item, scalars by repr."""
    todo = [state]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            yield f"d{len(item)}".encode()
            for key, val in item.items():
                todo += (key, val)
        elif isinstance(item, (list, tuple)):
            yield f"l{len(item)}".encode()
            todo.extend(item)
        elif hasattr(item, "tobytes") and hasattr(item, "dtype"):
            yield f"a{item.dtype}".encode()
            yield item.tobytes()
        else:
            yield repr(item).encode("utf-8", "surrogatepass")


def draws(module: ast.Module, namespace: dict[str, Any]) -> dict[str, list[str]]:
    """The user's generators `module`'s code visibly draws from (`rng.normal(…)`, `next(gen)`,
    `for x in gen`), each with what it does to them, for protect mode's question."""
    found: dict[str, list[str]] = {}

    def note(name: str | None, what: str) -> None:
        if name is not None and name in namespace and what not in found.setdefault(name, []):
            found[name].append(what)

    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in _READS:
            name = root_name(node.func.value)
            if name is not None and is_rng(namespace.get(name)):
                note(name, f"draws from it (.{node.func.attr}), which advances its state")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next" and node.args:
            name = root_name(node.args[0])
            if name is not None and _is_iterator(namespace.get(name)):
                note(name, "takes items from it with next()")
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name):
            if _is_iterator(namespace.get(node.iter.id)):
                note(node.iter.id, "takes items from it in a loop")
    return {name: what for name, what in found.items() if what}


# A seed of the global state in a cell's source: `random.seed(…)` (not `np.random.seed`), and
# numpy's `np.random.seed(…)`.
_SEEDS = {
    "random": re.compile(r"(?<![\w.])random\.seed\s*\(|from\s+random\s+import\s+[^\n]*\bseed\b"),
    "np.random": re.compile(r"\b(?:np|numpy)\.random\.seed\s*\("),
}


def _global_state(label: str) -> object:
    if label == "random":
        return random.getstate()
    numpy = sys.modules.get("numpy")
    return numpy.random.get_state(legacy=False) if numpy is not None else None


class GlobalStates:
    """The global random states the user's cells seeded, before a call, to say after it whether
    the call advanced them (see the module docstring)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        cells = namespace.get("In")
        text = "\n".join(c for c in cells if isinstance(c, str)) if isinstance(cells, list) else ""
        self.before = {label: _digest_of(_global_state(label)) for label, seed in _SEEDS.items() if seed.search(text)}

    def note(self) -> str:
        """The result's line naming the seeded global states the call advanced, or ""."""
        advanced = [label for label, digest in self.before.items() if _digest_of(_global_state(label)) != digest]
        if not advanced:
            return ""
        names = " and ".join(advanced)
        return (
            f"[global random state: this code advanced {names}, which the user's cells seed, so their "
            "later results that rely on that seed will differ (it is not put back by /undo); draw from "
            "a generator of your own (`np.random.default_rng(seed)`) instead]"
        )


def _digest_of(state: object) -> int:
    hasher = xxhash.xxh3_64()
    for part in _flat(state):
        hasher.update(part)
    return hasher.intdigest()
