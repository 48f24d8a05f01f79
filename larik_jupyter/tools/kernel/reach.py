"""Which of the user's variables a `python` call's code could change, read before it runs, so
the variable watch fingerprints those and no others: a call that only reads a 4 GB frame
(`df.head()`) costs no hashing of it, and stays exact for what it could change.

A variable is reachable when the code could change it by any route: a use that is not a read
(assigning, deleting, `+=`, item or attribute assignment, a method outside `READ_METHODS`,
`inplace=True`, `**kwargs`, passing it to any function but the builtins of `READ_FUNCTIONS`
and the read methods of a frame, storing it in another object, returning or yielding it);
another name bound to something made from it (`h = df.head()`, `for row in arr`) that the
code changes in turn; a global a function, class or object of the namespace that the code
mentions uses (their code's names, closures and defaults, transitively); a variable held by a
reachable container or object; an array or frame whose memory a reachable array shares (a
numpy view made earlier). Code that names a route to any global (`globals()`, `exec`,
`ctypes`, `sys.modules`, `gc`, frames …) or cannot be scanned reaches everything. Reads are
trusted only of frames and arrays (pandas, numpy, polars, pyarrow), whose listed methods do not
change them; an attribute, item or method of another value is a possible change.
"""

from __future__ import annotations

import ast
import functools
import gc
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# Words that let code reach any variable, whatever it names.
REACH_ANY = frozenset({
    "globals", "locals", "vars", "exec", "eval", "compile", "setattr", "delattr", "__import__",
    "modules", "run_cell", "run_line_magic", "run_cell_magic", "user_ns", "user_global_ns",
    "__dict__", "__globals__", "__builtins__", "__main__", "builtins", "importlib", "ctypes",
    "ctypeslib", "gc", "inspect", "_getframe", "f_globals", "f_locals", "f_back", "tb_frame",
    "gi_frame", "cr_frame", "get_referrers", "get_referents", "as_strided", "from_address",
    "frombuffer", "__array_interface__", "memmove", "memset", "pythonapi",
})
# Builtins that only read their arguments.
READ_FUNCTIONS = frozenset({
    "print", "len", "repr", "str", "type", "isinstance", "display", "id", "hash", "bool", "int",
    "float", "round", "abs", "min", "max", "sum", "any", "all", "sorted", "list", "tuple", "set",
    "format", "callable", "dir", "hasattr", "enumerate", "zip", "range",
})
# Methods of frames, series and arrays that do not change their object (without `inplace=True`).
READ_METHODS = frozenset({
    "head", "tail", "describe", "info", "sum", "mean", "median", "mode", "min", "max", "std",
    "var", "sem", "count", "nunique", "n_unique", "unique", "value_counts", "to_string", "to_list",
    "tolist", "to_dict", "to_dicts", "to_numpy", "to_pandas", "to_arrow", "to_frame", "copy",
    "clone", "astype", "cast", "round", "abs", "isna", "notna", "isnull", "notnull", "is_null",
    "is_not_null", "null_count", "dropna", "drop_nulls", "fillna", "fill_null", "drop", "rename",
    "reset_index", "set_index", "sort_values", "sort_index", "groupby", "group_by", "agg",
    "aggregate", "filter", "select", "with_columns", "where", "query", "join", "merge", "pivot",
    "pivot_table", "melt", "unpivot", "explode", "nlargest", "nsmallest", "idxmax", "idxmin",
    "arg_max", "arg_min", "argmax", "argmin", "argsort", "cumsum", "cumprod", "cum_sum", "diff",
    "pct_change", "rolling", "resample", "any", "all", "equals", "equals_exact", "memory_usage",
    "estimated_size", "nbytes", "item", "items", "iterrows", "itertuples", "iter_rows", "rows",
    "row", "get_column", "get_columns", "column", "get", "lazy", "collect", "schema",
    "collect_schema", "is_empty", "glimpse", "corr", "cov", "quantile", "plot", "hist", "boxplot",
    "transpose", "ravel", "flatten", "reshape", "nonzero", "searchsorted", "squeeze", "take",
    "clip", "prod", "dot", "isin", "is_in", "between", "duplicated", "is_duplicated",
    "drop_duplicates", "unique_counts", "len", "shape", "to_csv", "to_parquet",
    "write_csv", "write_parquet", "to_json", "to_markdown", "to_html", "to_latex", "slice",
    "column_names", "num_rows", "num_columns", "chunk", "combine_chunks", "to_pylist",
    "to_pydict", "any_null", "has_nulls", "keys", "values", "first", "last", "size",
})
# Accessors whose methods all return new values (`df["a"].str.upper()`).
READ_ACCESSORS = frozenset({"str", "dt", "cat", "list", "arr", "struct", "bin", "name", "plot", "sparse"})
_READ_LIBRARIES = ("pandas", "numpy", "polars", "pyarrow")
# Objects followed from a reachable value to the variables it holds, before giving up (then
# every variable is reachable).
MAX_WALK = 20_000
_METHODS = (types.FunctionType, staticmethod, classmethod, property)
# Comprehensions: the values they build hold what their element expression is made from.
_BUILT = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True)
class Reach:
    """The variables a call could change: `everything`, or `names`; `why` names the route to
    everything (`globals()`), for the docs and tests."""

    everything: bool
    names: frozenset[str] = frozenset()
    why: str = ""

    def __contains__(self, name: object) -> bool:
        return self.everything or name in self.names

    def including(self, names: Iterable[str]) -> Reach:
        """This reach and `names` too."""
        return self if self.everything else Reach(False, self.names | frozenset(names), self.why)


EVERYTHING = Reach(True, why="the code could not be scanned")


def _read_only_value(value: object) -> bool:
    """A frame or array of a library whose listed methods are reads (not a subclass defined
    elsewhere, whose methods could do anything)."""
    module = type(value).__module__ or ""
    return module.partition(".")[0] in _READ_LIBRARIES and module.partition(".")[0] in sys.modules


def reach_of(module: ast.Module | None, namespace: dict[str, Any]) -> Reach:
    """What `module`'s code could change of `namespace` (see the module docstring); never
    raises (a value that fails to be looked at makes it everything)."""
    try:
        return _reach(module, namespace)
    except Exception as exc:
        return Reach(True, why=f"a value could not be looked at ({type(exc).__name__})")


def _reach(module: ast.Module | None, namespace: dict[str, Any]) -> Reach:
    if module is None:
        return EVERYTHING
    for node in ast.walk(module):
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if word in REACH_ANY:
            return Reach(True, why=f"it uses {word}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            hit = next((n for n in names for part in n.split(".") if part in REACH_ANY), None)
            if hit is not None:
                return Reach(True, why=f"it imports {hit}")
    parents = {child: parent for parent in ast.walk(module) for child in ast.iter_child_nodes(parent)}
    changed: set[str] = set()
    aliases: dict[str, set[str]] = {}
    mentioned: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            mentioned.add(node.id)
            use = _use(node, parents, namespace)
            if use is None:
                changed.add(node.id)
            else:
                for alias in use:
                    aliases.setdefault(alias, set()).add(node.id)
        elif isinstance(node, ast.Global):
            changed.update(node.names)
    grown = True
    while grown:  # a name made from another that the code changes changes the other too
        grown = False
        for alias, sources in aliases.items():
            if alias in changed and not sources <= changed:
                changed |= sources
                grown = True
    try:
        return _closed(changed, mentioned, namespace)
    except _TooFar:
        return Reach(True, why=f"the values it reaches hold over {MAX_WALK:,} objects")


class _TooFar(Exception):
    pass


def _use(node: ast.Name, parents: dict[ast.AST, ast.AST], namespace: dict[str, Any]) -> set[str] | None:
    """A read of `node`'s variable: the names the expression made from it is bound to (an empty
    set where it is not bound); None where the use could change it."""
    if not isinstance(node.ctx, ast.Load):
        return None
    trusted = _read_only_value(namespace.get(node.id))
    current: ast.AST = node
    while True:
        parent = parents.get(current)
        if isinstance(parent, ast.Attribute) and parent.value is current:
            if not isinstance(parent.ctx, ast.Load) or not trusted:  # a property can change its object
                return None
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                accessor = isinstance(current, ast.Attribute) and current.attr in READ_ACCESSORS
                if not trusted or not (parent.attr in READ_METHODS or accessor) or _may_change(call):
                    return None
                current = call
            else:
                current = parent
        elif isinstance(parent, ast.Subscript) and parent.value is current:
            if not isinstance(parent.ctx, ast.Load) or not trusted:
                return None
            current = parent
        elif isinstance(parent, ast.Call) and parent.func is not current:
            return set() if _reads_arguments(parent) else None
        elif isinstance(parent, ast.keyword):
            call = parents.get(parent)
            return set() if isinstance(call, ast.Call) and _reads_arguments(call) else None
        elif isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred, ast.BoolOp, ast.IfExp, *_BUILT)):
            if isinstance(parent, ast.IfExp) and parent.test is current:
                return set()
            if isinstance(parent, (ast.List, ast.Tuple, ast.Starred)) and not isinstance(parent.ctx, ast.Load):
                return None
            current = parent  # the value itself, held by what is built around it
        elif isinstance(parent, ast.Subscript) or isinstance(parent, ast.Slice):
            return set()  # an index into something else
        elif isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr, ast.FormattedValue)):
            return set()  # a new value
        elif isinstance(parent, (ast.Expr, ast.If, ast.While, ast.Assert)):
            return set()
        elif isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)):
            targets = _targets(parent)
            return targets if targets is not None else None
        else:
            return None


def _may_change(call: ast.Call) -> bool:
    """`inplace=`, `in_place=`, `out=` or `**kwargs` (which may pass them)."""
    return any(
        k.arg is None
        or (k.arg in ("inplace", "in_place", "out") and not (isinstance(k.value, ast.Constant) and k.value.value in (False, None)))
        for k in call.keywords
    )


def _reads_arguments(call: ast.Call) -> bool:
    """Whether `call` only reads what it is given: a builtin of `READ_FUNCTIONS`, or a read
    method of a frame (`df.merge(other)`, `pd.concat`-like functions are not trusted)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in READ_FUNCTIONS
    return isinstance(func, ast.Attribute) and func.attr in READ_METHODS and not _may_change(call)


def _targets(node: ast.AST) -> set[str] | None:
    """The plain names an assignment or loop binds; None when it stores into anything else."""
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)):
        targets = [node.target]
    else:
        return None
    names: set[str] = set()
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Name):
                names.add(part.id)
            elif isinstance(part, (ast.Attribute, ast.Subscript)):
                return None
    return names


def _closed(changed: set[str], mentioned: set[str], namespace: dict[str, Any]) -> Reach:
    """`changed` grown by what the functions and objects the code mentions use, by the
    variables reachable values hold and by the arrays whose memory theirs shares."""
    reached = {n for n in changed if n in namespace}
    todo = [n for n in mentioned if n in namespace]
    seen_code: set[int] = set()
    while todo:  # the globals of the code the call may run
        name = todo.pop()
        for code in _code_of(namespace.get(name), namespace, seen_code):
            for used in code.co_names:
                if used in namespace and used not in reached:
                    reached.add(used)
                    todo.append(used)
            if word := next((w for w in code.co_names if w in REACH_ANY), None):
                return Reach(True, why=f"{name} uses {word}")
    by_id: dict[int, list[str]] = {}  # several names may hold one object (`new = keep`)
    for name, value in namespace.items():
        if isinstance(name, str):
            by_id.setdefault(id(value), []).append(name)
    held = _held(reached, namespace, by_id)
    while held - reached:
        reached |= held
        held = _held(reached, namespace, by_id)
    reached |= _sharing_memory(reached, namespace)
    return Reach(False, frozenset(reached))


def _code_of(value: object, namespace: dict[str, Any], seen: set[int]) -> Iterator[types.CodeType]:
    """The code objects of the namespace's own (functions whose globals are the namespace) that
    a value may run when the code uses it: a function's (and what it nests), the methods of a
    class and of an object's class (along its MRO), a bound method's or partial's function."""
    todo: list[Any] = [value]
    if not issubclass(type(value), (type, types.FunctionType, types.MethodType, types.ModuleType)) and not _read_only_value(value):
        todo.append(type(value))
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if issubclass(type(item), (types.MethodType, staticmethod, classmethod)):
            todo.append(item.__func__)
        elif issubclass(type(item), functools.partial):
            todo.append(item.func)
        elif issubclass(type(item), property):
            todo += [item.fget, item.fset, item.fdel]
        elif issubclass(type(item), type):
            todo += [member for klass in item.__mro__ for member in vars(klass).values() if isinstance(member, _METHODS)]
        elif issubclass(type(item), types.FunctionType) and item.__globals__ is namespace:
            codes = [item.__code__]
            while codes:
                code = codes.pop()
                yield code
                codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]


def _held(reached: set[str], namespace: dict[str, Any], by_id: dict[int, list[str]]) -> set[str]:
    """Variables holding the reached values or held by them: items of containers, attributes
    of objects, closures and defaults of functions (frames and arrays are not walked into)."""
    found: set[str] = set()
    todo = [namespace[n] for n in reached if n in namespace]
    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if len(seen) > MAX_WALK:
            raise _TooFar
        found.update(by_id.get(id(item), ()))
        if _read_only_value(item) or issubclass(type(item), (str, bytes, int, float, type, types.ModuleType)):
            continue
        if issubclass(type(item), types.FunctionType):
            parts = [c.cell_contents for c in item.__closure__ or () if _filled(c)]
            parts += list(item.__defaults__ or ()) + list((item.__kwdefaults__ or {}).values())
        elif gc.is_tracked(item):
            parts = gc.get_referents(item)
        else:
            continue
        # Untracked parts (numbers, strings, arrays) hold nothing: looked up, not walked into.
        for ident in set(map(id, parts)) & by_id.keys():
            found.update(by_id[ident])
        todo += filter(gc.is_tracked, parts)
    return found - reached


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _sharing_memory(reached: set[str], namespace: dict[str, Any]) -> set[str]:
    """Unreached arrays and pandas objects whose numpy memory overlaps a reached one's."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return set()
    spans = [span for n in reached for span in _spans(namespace.get(n), numpy)]
    if not spans:
        return set()
    found = set()
    for name, value in namespace.items():
        if name in reached or not isinstance(name, str):
            continue
        for low, high in _spans(value, numpy):
            if any(low < other_high and other_low < high for other_low, other_high in spans):
                found.add(name)
                break
    return found


def _spans(value: object, numpy: Any) -> Iterator[tuple[int, int]]:
    """The address ranges of the numpy memory behind `value` (an array, or a pandas object's
    blocks and index)."""
    arrays: list[Any] = []
    if issubclass(type(value), numpy.ndarray):
        arrays.append(value)
    elif (pandas := sys.modules.get("pandas")) is not None and issubclass(type(value), (pandas.DataFrame, pandas.Series)):
        manager = getattr(value, "_mgr", None)
        for block in getattr(manager, "blocks", ()):
            values = block.values
            arrays += [values] if isinstance(values, numpy.ndarray) else [
                part for part in (getattr(values, "_ndarray", None), getattr(values, "_data", None), getattr(values, "_mask", None))
                if isinstance(part, numpy.ndarray)
            ]
    for array in arrays:
        if array.size:
            low, high = numpy.lib.array_utils.byte_bounds(array)
            yield low, high
