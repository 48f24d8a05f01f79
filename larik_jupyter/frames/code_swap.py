"""Running a wrapper in place of a Python function for a while, by every route that reaches it.

The receipt watch (`receipt_watch.py`) must see `merge(a, b)` after a user cell ran `from pandas
import merge`, `m = pd.merge`, `cc = pl.concat`, a bound method made before (`f = df.merge`), a
`functools.partial`, a helper module's own import, a default argument: every one of them holds
the same function object. So the function object itself is changed, not the attribute it is
reached by: its `__code__` (a writable attribute of every Python function) is swapped for a
trampoline that calls the wrapper, and the wrapper calls a copy of the function made with the
original code, globals, defaults and closure. `restore` puts the code back. A function's
closure cannot be replaced, so the wrapper is a constant of the trampoline's code, and the
trampoline has as many free variables as the function has cells (it never reads them).

Why not the alternatives: rebinding the aliases found in the kernel's namespace misses those
held anywhere else (closures, containers, partials, bound methods, a helper module) and would
change the user's variables under the variable watch, which would then report them as rebound;
wrapping the libraries' internals (pandas' `_MergeOperation`) relies on private names that change
between versions and has nothing to wrap for polars' `concat`, whose work is in Rust.

While swapped, a function that was not already a decorator's wrapper holds the copy as its
`__wrapped__`, so `inspect.signature`, `help` and `inspect.getsource` still say its own."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The placeholder constant of the trampoline's code that the wrapper replaces.
_WRAPPER = "larik_jupyter: the wrapper"
# The file name of the trampoline's code (tracebacks show it with no source line).
FILENAME = f"<{__name__}: trampoline>"


@dataclass(frozen=True)
class Swapped:
    """A function whose calls run a wrapper, and its own code to put back."""

    function: types.FunctionType
    code: types.CodeType
    wrapped: bool  # whether `__wrapped__` was set by the swap (and is deleted by `restore`)


@functools.cache
def _trampoline(cells: int) -> types.CodeType:
    """The code of `def trampoline(*args, **kwargs)` calling the placeholder, with `cells` free
    variables (a function's code must have as many as its closure has cells)."""
    names = [f"_cell{i}" for i in range(cells)]
    lines = ["def outer():", *(f"    {name} = None" for name in names), "    def trampoline(*args, **kwargs):"]
    if names:  # a condition never true keeps the free variables without reading them
        lines.append(f"        if kwargs is None: ({', '.join(names)},)")
    lines += [f"        wrapper = {_WRAPPER!r}", "        return wrapper(*args, **kwargs)", "    return trampoline"]
    space: dict[str, Any] = {}
    exec(compile("\n".join(lines), FILENAME, "exec"), space)
    code: types.CodeType = space["outer"]().__code__
    return code


def _copy(function: types.FunctionType) -> types.FunctionType:
    """A function running `function`'s own code (not a wrapper of it: `__wrapped__` is only
    what `function` itself holds, so a signature of the copy is the function's own)."""
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__dict__.update(function.__dict__)
    copy.__qualname__, copy.__module__, copy.__doc__ = function.__qualname__, function.__module__, function.__doc__
    copy.__annotations__ = function.__annotations__
    return copy


def swap(function: object, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Swapped | None:
    """Make every call of `function` run `wrap(copy of function)` until `restore`; None when it
    is not a Python function (nothing changed)."""
    if not isinstance(function, types.FunctionType):
        return None
    copy = _copy(function)
    wrapper = wrap(copy)
    template = _trampoline(len(function.__closure__ or ()))
    consts = tuple(wrapper if isinstance(c, str) and c == _WRAPPER else c for c in template.co_consts)
    swapped = Swapped(function, function.__code__, "__wrapped__" not in vars(function))
    function.__code__ = template.replace(co_consts=consts)
    if swapped.wrapped:
        function.__wrapped__ = copy  # type: ignore[attr-defined]
    return swapped


def restore(swapped: Swapped) -> None:
    """Put the function's own code back."""
    swapped.function.__code__ = swapped.code
    if swapped.wrapped:
        vars(swapped.function).pop("__wrapped__", None)
