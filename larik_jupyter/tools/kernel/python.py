"""The python tool: code run in the live kernel's namespace, its output and last value returned."""

from __future__ import annotations

import ast
import contextlib
import itertools
import linecache
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import CodeType
from typing import TYPE_CHECKING, Any

from larik_jupyter.config.rules import CallSubject
from larik_jupyter.egress.tags import files_tag, variable_tag
from larik_jupyter.errors import ToolError, exception_text
from larik_jupyter.plural import counted
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import Displayed
from larik_jupyter.tools.images import ImageCollector
from larik_jupyter.tools.kernel import code_stop
from larik_jupyter.tools.kernel.change_routes import names_reached
from larik_jupyter.tools.kernel.code_stop import TIMEOUT_INPUT, stoppable, timeout_of
from larik_jupyter.tools.kernel.figures import (
    close_shown,
    drawn_figures,
    figure_of,
    has_svg_only,
    image_in,
    image_of,
    is_figure,
    open_figures,
)
from larik_jupyter.tools.kernel.live_output import LiveOutput
from larik_jupyter.tools.kernel.protect import changes_in, effects_sentence
from larik_jupyter.tools.kernel.reach import reach_of
from larik_jupyter.tools.kernel.receipts import receipts_found, watch_receipts
from larik_jupyter.tools.kernel.rng_state import GlobalStates, draws
from larik_jupyter.tools.kernel.sources import files_named, variables_read
from larik_jupyter.tools.kernel.touched_names import names_it_may_change
from larik_jupyter.tools.kernel.undo import call_snapshots
from larik_jupyter.tools.kernel.value_copy import array_or_frame
from larik_jupyter.tools.kernel.variable_watch import VariableWatch

if TYPE_CHECKING:
    from larik_jupyter.session.call_summary import CellPosition

MAX_OUTPUT = 30_000
MAX_TRACEBACK_FRAMES = 8
_RICH_REPRS = (
    "_repr_mimebundle_",
    "_repr_html_",
    "_repr_png_",
    "_repr_jpeg_",
    "_repr_svg_",
    "_repr_markdown_",
    "_repr_latex_",
    "_repr_json_",
)
_cells = itertools.count(1)
UNSCANNED_NOTE = (
    "[undo: this code is nested too deeply to scan for the variables it changes, so /undo cannot "
    "put back the kernel variables this call changed]"
)
# The pseudo file name of each code the tool runs (tracebacks start at its first frame).
CODE_FILENAME_PREFIX = "<larik-python-"


def is_rich(value: object) -> bool:
    """Whether Jupyter would show `value` as more than text."""
    return any(callable(getattr(type(value), name, None)) for name in _RICH_REPRS)


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    half = MAX_OUTPUT // 2
    return f"{text[:half]}\n[… {len(text) - MAX_OUTPUT} characters cut …]\n{text[-half:]}"


def _short_traceback(exc: BaseException, filename: str) -> str:
    """The traceback from the model's own code down, without this tool's frames."""
    tb = traceback.TracebackException.from_exception(exc)
    frames = list(tb.stack)
    start = next((i for i, f in enumerate(frames) if f.filename == filename), 0)
    kept = frames[start:]
    while len(kept) > 1 and kept[-1].filename == code_stop.__file__:
        kept.pop()  # the stop's handler raising the KeyboardInterrupt
    if len(kept) > MAX_TRACEBACK_FRAMES:
        kept = kept[:2] + kept[-(MAX_TRACEBACK_FRAMES - 2) :]
    tb.stack = traceback.StackSummary.from_list(kept)
    return "".join(tb.format()).rstrip("\n")


class PythonTool(Tool):
    name = "python"
    needs_kernel = True
    kernel_tool = True
    preview_is_call = True
    runs_user_code = True
    description = (
        "Run Python code in the user's live Jupyter kernel, sharing its variables. Returns "
        "stdout, stderr and the repr of the last expression (or a short traceback); rich "
        "values (plots, tables) are also shown to the user. Every variable the code could change "
        "is compared before and after the call, and what changed is reported (a frame it only "
        "reads costs nothing to watch). /undo can revert what the code does "
        "to the kernel's variables: existing variables it assigns, deletes, changes through "
        "attributes, items or mutating methods, or changes through functions it calls or "
        "aliases it makes are copied first (within a per-turn memory budget) and put back; "
        "variables rebound any other way get their old object back, and variables it creates "
        "are deleted. Not undoable: values that cannot be copied or are over the budget, objects "
        "changed in place through function arguments (`random.shuffle(data)`), and effects "
        "outside the kernel (files written from Python, network calls). The code is stopped "
        "(KeyboardInterrupt) after `timeout` seconds."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "Python code; the last expression is returned.",
            },
            "timeout": TIMEOUT_INPUT,
        },
        "required": ["code"],
    }
    inline = True

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return str(args.get("code", ""))

    @classmethod
    def kernel_code(cls, args: Mapping[str, Any]) -> str | None:
        code = args.get("code")
        return code if isinstance(code, str) else None

    def rule_subject(self, args: Mapping[str, Any]) -> CallSubject:
        """Rules match the code (`python(PATTERN)`, a glob over it)."""
        return CallSubject((self.name, *self.rule_names), code=str(args.get("code", "")))

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        """What the code may do to which of the kernel's variables, as read from its text."""
        code = str(args.get("code") or "")
        return f"Run this Python in your kernel? {effects_sentence(code, namespace or {})}", preview

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        if env.host is None:
            raise ToolError(
                "The python tool needs a live kernel; run the agent inside Jupyter to use it."
            )
        host = env.host
        code: str = args["code"]
        timeout = timeout_of(args, self.name)
        filename = f"{CODE_FILENAME_PREFIX}{next(_cells)}>"
        try:
            module = ast.parse(code, filename, "exec")
            names = names_it_may_change(module)
            body, last = _compiled(code, module, filename)
        except SyntaxError as exc:
            return ToolResult(
                "".join(traceback.format_exception_only(exc)).rstrip("\n"), is_error=True
            )
        except (RecursionError, MemoryError) as exc:
            return ToolResult(
                f"python: the code is nested too deeply for Python to compile ({exception_text(exc)}); "
                "nothing ran. Split it into smaller expressions.",
                is_error=True,
            )
        snapshots = call_snapshots(env)
        reach = reach_of(module if names is not None else None, host.namespace)
        if snapshots is not None:  # the agent's own variables: whether the user touched them
            reach = reach.including(snapshots.own_names(host.namespace))
        watch = VariableWatch(host.namespace, names, module=module, cache=host.fingerprints, reach=reach)
        seeded = GlobalStates(host.namespace)
        if snapshots is not None:
            copies = _to_copy(module, names, host.namespace)
            snapshots.before_run(host.namespace, copies and [n for n in copies if n in reach], watch)
        # Keep the source so tracebacks can quote the model's own lines.
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        live = LiveOutput(env.call.on_output)
        figures_before = open_figures()
        value: object = None
        error: str | None = None
        with (
            host.displays() if host.displays is not None else contextlib.nullcontext([]) as displayed,
            live,
            stoppable(timeout, env.call.stop_event) as stop,
            watch_receipts(host.namespace) as counting,
            contextlib.redirect_stdout(live.stdout),
            contextlib.redirect_stderr(live.stderr),
        ):
            try:
                with stop.code():
                    exec(body, host.namespace)
                    if last is not None:
                        value = eval(last, host.namespace)
            # Anything the model's code raises is its own error: SystemExit (`exit()` must not
            # end the user's kernel), KeyboardInterrupt (a timeout, Stop or Jupyter's interrupt stopping it), a
            # GeneratorExit or BaseException subclass it raises itself.
            except BaseException as exc:
                error = _short_traceback(exc, filename)
            finally:
                variables = watch.changes(host.namespace)
                if snapshots is not None:
                    snapshots.after_run(host.namespace, variables)
        parts = []
        if stop.reason == "timeout":
            parts.append(f"The code timed out after {timeout} s and was stopped; its output so far:")
        if printed := live.stdout.getvalue():
            parts.append(printed.rstrip("\n"))
        if printed := live.stderr.getvalue():
            parts.append("[stderr]\n" + printed.rstrip("\n"))
        images = _images(displayed, figures_before, value if error is None else None)
        parts += [text for bundle in images.displays if (text := _plain(bundle))]
        shown: object | None = None
        if error is not None:
            parts.append(error)
            if stop.note:
                parts.append(stop.note)
        elif value is not None:
            broken = _broken_repr(value) if is_rich(value) else None
            if is_rich(value) and broken is None:
                shown = value  # the front end shows it with the call (`ToolResult.display`)
            parts.append(_value_text(value, shown is not None and host.display is not None))
            if broken is not None:
                parts.append(f"[not shown to the user as rich output: {broken}]")
        if snapshots is not None and names is None:
            parts.append(UNSCANNED_NOTE)
        receipts, note = receipts_found(counting, host.namespace)
        if note:
            parts.append(note)
        if note := watch.note():
            parts.append(note)
        if note := seeded.note():
            parts.append(note)
        tag = variable_tag(env.egress, variables_read(module, host.namespace))
        tag = tag | files_tag(env.egress, env.root, files_named(module, env.cwd, env.root))
        return ToolResult(
            images.text(_cap("\n".join(parts)) or "(no output)"),
            is_error=error is not None or bool(stop.reason),
            display=shown,
            displays=images.displays,
            images=images.images,
            variables=variables,
            receipts=receipts,
            egress=tag,
        )


def _to_copy(module: ast.Module, names: list[str] | None, namespace: dict[str, Any]) -> list[str] | None:
    """The names undo copies before the code runs: those it may change, but not an array or
    frame whose methods it only calls and whose known mutations it does not make (`df.head()`:
    copying a large frame costs more than the call; should it change after all, the namespace
    comparison says so and that it could not be restored); and what the functions the code
    calls and its aliases may change, and the generators and iterators it draws from."""
    if names is None:
        return None
    changed = changes_in(module)
    kept = [n for n in names if n in changed or array_or_frame(namespace.get(n)) is None]
    return [*kept, *names_reached(module, namespace), *draws(module, namespace)]


def _compiled(code: str, module: ast.Module, filename: str) -> tuple[CodeType, CodeType | None]:
    """The code compiled, and its last expression apart (None when it ends in a statement) so
    its value can be returned. From the syntax tree; from the source text when the tree is too
    deep for the tree-to-code step, which takes less nesting than Python's own compiler."""
    last = module.body[-1].value if module.body and isinstance(module.body[-1], ast.Expr) else None
    head = ast.Module(body=module.body[:-1] if last is not None else module.body, type_ignores=[])
    try:
        body = compile(head, filename, "exec")
        return body, compile(ast.Expression(last), filename, "eval") if last is not None else None
    except RecursionError:
        pass
    if last is None:
        return compile(code, filename, "exec"), None
    lines = code.splitlines(keepends=True)
    before = lines[last.lineno - 1].encode("utf-8")[: last.col_offset].decode("utf-8")
    segment = ast.get_source_segment(code, last) or ""
    # Padded with the lines before it, so a traceback names the model's own line numbers.
    tail = "\n" * (last.lineno - 1) + segment
    return compile("".join(lines[: last.lineno - 1]) + before, filename, "exec"), compile(tail, filename, "eval")


@dataclass
class _Shown(ImageCollector):
    """The images of a call, and what else its code displayed (mime bundles)."""

    displays: list[dict[str, Any]] = field(default_factory=list)


def _images(displayed: list[Displayed], figures_before: list[object], value: object) -> _Shown:
    """The images the code displayed, the figures it drew and left open, and the image its
    value renders as: each figure once, as it looks at the end."""
    collected = _Shown()
    pictured: list[object] = []  # figures whose picture as they are now is in the result
    kept: list[bytes] = []
    for number, item in enumerate(displayed, 1):
        found = image_in(item.data)
        if found is None:
            collected.displays.append(item.data)
            continue
        if item.figure is not None:
            item.figure.stale = False  # type: ignore[attr-defined]  # drawn into later: sent again
            pictured.append(item.figure)
        if found[0] in kept:
            continue  # the same picture shown again is one picture (as replay counts them)
        kept.append(found[0])
        _add(collected, found, f"displayed {number}")
    figures = [f for f in drawn_figures(figures_before) if not _pictured(f, pictured)]
    if is_figure(value) and not _among(value, figures) and not _pictured(value, pictured):
        figures.append(value)
    for number, figure in enumerate(figures, 1):
        found = _image(collected, figure, f"figure {number}")
        if found is not None:
            _add(collected, found, f"figure {number}")
            # Seen as it is now: a later call sends it again only if it draws into it.
            figure.stale = False  # type: ignore[attr-defined]
            pictured.append(figure)
    close_shown(pictured)
    # A value that draws into a figure pictured above (the Axes `df.plot()` returns) is that picture.
    if value is not None and not is_figure(value) and not _among(figure_of(value), pictured):
        notes = len(collected.notes)
        found = _image(collected, value, "of the value")
        if found is not None:
            _add(collected, found, "of the value")
        elif len(collected.notes) == notes and has_svg_only(value):
            collected.notes.append("[the value renders only as SVG; SVG images are not sent]")
    if collected.images:
        collected.notes.insert(0, f"[{counted(len(collected.images), 'image')} attached to this result]")
    return collected


def _add(collected: ImageCollector, found: tuple[bytes, str], label: str) -> None:
    """Keep the image `found`, or note in the result why it is not one (`invalid PNG data`)."""
    why = collected.add(*found, label)
    if why is not None:
        collected.notes.append(f"[image {label} not sent: {why}]")


def _among(item: object, items: list[object]) -> bool:
    return item is not None and any(item is other for other in items)


def _pictured(figure: object, pictured: list[object]) -> bool:
    """Whether the result already holds `figure` as it looks now (not drawn into since)."""
    return _among(figure, pictured) and not getattr(figure, "stale", False)


def _plain(bundle: dict[str, Any]) -> str:
    """What a display shows as text (the model reads it; the user sees the bundle)."""
    text = bundle.get("text/plain")
    return text.rstrip("\n") if isinstance(text, str) else ""


def _image(collected: ImageCollector, value: object, label: str) -> tuple[bytes, str] | None:
    """`image_of(value)`; a failure to draw it is a note in the result, not the call's end."""
    try:
        return image_of(value)
    except Exception as exc:
        collected.notes.append(f"[the image {label} could not be made: {exception_text(exc)}]")
        return None


def _broken_repr(value: object) -> str | None:
    """Which rich display method of `value` raises (IPython would print its traceback into the
    user's cell), or None when they all return."""
    for name in _RICH_REPRS:
        if callable(getattr(type(value), name, None)):
            # Called as IPython's formatters call them.
            kwargs = {"include": None, "exclude": None} if name == "_repr_mimebundle_" else {}
            try:
                getattr(value, name)(**kwargs)
            except Exception as exc:
                return f"its {name} raised {exception_text(exc)}"
    return None


def _value_text(value: object, displayed: bool) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__} whose repr failed: {exc!r}>"
    return text + ("\n[shown to the user as rich output]" if displayed else "")
