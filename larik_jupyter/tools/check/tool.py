"""notebook_check (and `%larik /check`): does the kernel's notebook still run top to bottom?

The notebook (the open notebook when a browser shows it, else the file) runs cell by cell in a
scratch kernel of its kernelspec, in a scratch copy of its project (`scratch.copy`), confined
by the operating system (`scratch.confine`: Landlock, where the machine has it) and guarded so
that nothing it runs changes a file outside the copy, starts a shell command or (unless
`network`) connects to another machine (`scratch.guard`: each refusal is that cell's error and
is reported, with what the operating system alone refused); the report's first line says what
did not hold and its last line names the confinement; the report names the cells that fail there,
the hidden state (names cells use that only the live kernel has), the cells the live kernel
ran out of order, and the values of names the notebook defines that differ between the live
and the scratch kernel. Cells tagged `larik-skip` and cells holding a `%larik` prompt are not
run. The live kernel, the notebook and the project are only read; the scratch kernel is always
shut down and the copy removed.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.errors import LarikError, ToolError
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.paths import project_root
from larik_jupyter.scratch.copy import make_copy
from larik_jupyter.scratch.kernel import Confinement, ScratchKernel
from larik_jupyter.scratch.receipts import last_receipts, watch_receipts
from larik_jupyter.session.receipts import Receipt, receipt_changes
from larik_jupyter.tools.base import ToolResult
from larik_jupyter.tools.check.report import (
    CellRef,
    ChangedReceipt,
    CheckReport,
    Difference,
    Failure,
    Hidden,
    OutOfOrder,
    Refusal,
    Skipped,
)
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.kernel import differs, is_user_name, python_source, shown, summaries
from larik_jupyter.tools.notebook import (
    NOTEBOOK_PATH,
    NotebookDocument,
    NotebookTool,
    notebook_path,
    open_notebook,
)

if TYPE_CHECKING:
    from larik_jupyter.session.call_summary import CellPosition

DEFAULT_TIMEOUT = 600
MAX_TIMEOUT = 7200
CELL_TIMEOUT = 300
SKIP_TAG = "larik-skip"
# `-o NAME` on a `%larik` / `%%larik` line: the turn's answer bound to NAME.
_OUTPUT = re.compile(r"^\s*%%?larik\b[^\n]*?\s-o\s*([A-Za-z_]\w*)", re.MULTILINE)
_MARKER = "<larik-check>"
_BUILTINS = frozenset(dir(builtins)) | {"get_ipython", "display", "In", "Out", "exit", "quit"}
# Run last in the scratch kernel: its names, and the summaries of those the check compares.
_PROBE = """
def _larik_probe(wanted):
    import json
    names = [k for k in globals() if not k.startswith('_')]
    try:
        from larik_jupyter.tools.kernel import summaries
        values = summaries(globals(), wanted)
    except Exception as exc:
        values = {"__error__": repr(exc)}
    print(%r + json.dumps({"names": names, "values": values}))
_larik_probe(%s)
del _larik_probe
"""


@dataclass
class _Cell:
    ref: CellRef
    source: str
    count: int | None
    skip: str = ""
    defines: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)


def names_of_cell(source: str) -> tuple[set[str], set[str]]:
    """The global names a cell's code binds, and the names it reads (anywhere in it)."""
    try:
        module = ast.parse(python_source(source))
    except (SyntaxError, ValueError):
        return set(), set()
    defines: set[str] = set()
    for stmt in module.body:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defines.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                defines.update((a.asname or a.name).partition(".")[0] for a in node.names if a.name != "*")
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defines.add(stmt.name)
    uses = {n.id for n in ast.walk(module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return defines, uses - _BUILTINS


def _skip_reason(cell: dict[str, Any], source: str) -> str:
    if SKIP_TAG in (cell.get("metadata", {}).get("tags") or []):
        return f"tagged {SKIP_TAG}"
    lines = [line.strip() for line in source.splitlines()]
    if any(line.startswith(("%larik", "%%larik")) for line in lines):
        return "holds a %larik prompt"
    return ""


def _edited_in(cell: dict[str, Any]) -> int | None:
    """The prompt whose agent call last wrote `cell` (its `larik` metadata), or None."""
    metadata = cell.get("metadata")
    mark = metadata.get("larik") if isinstance(metadata, dict) else None
    prompt = mark.get("prompt") if isinstance(mark, dict) else None
    return prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None


def _cells(nb: NotebookDocument) -> list[_Cell]:
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        source = source_text(cell)
        if not source.strip():
            continue
        count = cell.get("execution_count")
        item = _Cell(CellRef(index, nb.cell_id(index), _edited_in(cell)), source, count if isinstance(count, int) else None)
        item.skip = _skip_reason(cell, source)
        item.defines, item.uses = names_of_cell(source)
        cells.append(item)
    _skip_what_needs_an_answer(cells)
    return cells


def _skip_what_needs_an_answer(cells: list[_Cell]) -> None:
    """Skip the cells that read a name a skipped `%larik -o NAME` cell binds (the turn's
    answer, which only running the prompt gives), and those that read what such a cell
    binds in turn: the check cannot run them, and they are not broken."""
    answers: dict[str, tuple[str, CellRef]] = {}  # a name the check cannot have -> the -o name, its cell
    for cell in cells:
        if cell.skip and (found := _OUTPUT.search(cell.source)):
            answers[found.group(1)] = (found.group(1), cell.ref)
            cell.defines.add(found.group(1))
            continue
        needs = sorted(cell.uses & answers.keys())
        if cell.skip or not needs:
            continue
        name = needs[0]
        origin, where = answers[name]
        via = f", which needs `{origin}`" if origin != name else ""
        cell.skip = f"uses `{name}`{via}, set by the %larik -o prompt in {where.label}, which the check does not run"
        answers.update({defined: answers[name] for defined in cell.defines})


def _out_of_order(cells: list[_Cell]) -> list[OutOfOrder]:
    found = []
    latest: _Cell | None = None  # the cell above with the highest count so far
    for cell in cells:
        if cell.count is None:
            continue
        if latest is not None and latest.count is not None and cell.count < latest.count:
            found.append(OutOfOrder(cell.ref, cell.count, latest.ref, latest.count))
        elif latest is None or latest.count is None or cell.count > latest.count:
            latest = cell
    return found


def _kernel_name(nb: NotebookDocument) -> str:
    spec = nb.data.get("metadata", {}).get("kernelspec") or {}
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else "python3"


def run_check(
    env: Env, raw_path: str, *, timeout: int = DEFAULT_TIMEOUT, stop: threading.Event | None = None,
    network: bool = False, made: dict[str, int] | None = None, receipts: dict[str, list[Receipt]] | None = None,
) -> CheckReport:
    """Check the notebook at `raw_path` (see the module docstring); `stop` ends the run early;
    `network` lets the cells connect to other machines; `made` names the variables the agent
    made with the prompt that made them (from the session's record), which hidden state is
    attributed to; `receipts` the receipts the session recorded per cell id, compared."""
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise ToolError(f"notebook_check: timeout must be between 1 and {MAX_TIMEOUT} seconds, not {timeout}.")
    stop = stop or env.call.stop_event
    nb = open_notebook(env, raw_path, fresh=True)
    cells = _cells(nb)
    report = CheckReport(nb.rel, _kernel_name(nb), str(nb.path), out_of_order=_out_of_order(cells))
    report.skipped = [Skipped(c.ref, c.skip) for c in cells if c.skip]
    started = time.monotonic()
    deadline = started + timeout
    scratch: dict[str, Any] = {}
    defined = {name for c in cells for name in c.defines}
    compared = sorted({name for c in cells if not c.skip for name in c.defines})
    try:
        copy = make_copy(project_root(nb.path.parent))
    except LarikError as exc:
        raise ToolError(str(exc)) from None
    report.copy_of = str(copy.original)
    try:
        confinement = Confinement.in_copy(copy, "checked in a copy", network=network)
        with ScratchKernel(copy.place(nb.path.parent), confinement, kernel_name=report.kernel, stop=stop) as kernel:
            report.opening = kernel.held.opening(confinement.inside)
            report.closing = kernel.held.closing("the cells", confinement.place, confinement.inside)
            report.confined = kernel.held.os_confined
            to_run = [c for c in cells if not c.skip]
            if receipts:
                watch_receipts(kernel, 60)
            for position, cell in enumerate(to_run):
                outcome = kernel.run(cell.source, timeout=min(CELL_TIMEOUT, timeout), deadline=deadline)
                if receipts and cell.ref.id in receipts and (now := last_receipts(kernel, 60)) is not None:
                    report.receipts += [ChangedReceipt(cell.ref, c) for c in receipt_changes(receipts[cell.ref.id], now)]
                report.refused += [Refusal(cell.ref, message) for message in outcome.refused]
                if outcome.died and not outcome.stopped:
                    report.stopped = f"the kernel died at {cell.ref.label}"
                elif outcome.stopped:
                    report.stopped = f"timeout in {cell.ref.label}" if outcome.stopped == "timeout" else outcome.stopped
                if report.stopped:
                    report.failures.append(Failure(cell.ref, f"did not finish ({report.stopped})"))
                    report.not_run = [c.ref for c in to_run[position + 1:]]
                    break
                report.ran += 1
                # A cell whose error is a refusal is reported once, as the refusal.
                if outcome.error and not any(_same(outcome.error, m) for m in outcome.refused):
                    report.failures.append(Failure(cell.ref, outcome.error))
            if not report.stopped:
                probe = kernel.run(_PROBE % (_MARKER, json.dumps(compared)), timeout=60, deadline=time.monotonic() + 60)
                scratch = _probe_result(probe.stdout)
    except LarikError as exc:
        raise ToolError(str(exc)) from None
    finally:
        copy.folder.remove()
    report.seconds = time.monotonic() - started
    if report.stopped:
        report.values_note = "Hidden state and values were not checked: the run ended early."
        return report
    namespace = env.host.namespace if env.host is not None else None
    if namespace is None:
        report.values_note = "Hidden state and values were not checked: there is no live kernel here."
        return report
    names_there = set(scratch.get("names", []))
    users: dict[str, list[CellRef]] = {}
    for cell in cells:
        if cell.skip:
            continue
        for name in sorted(cell.uses):
            if name in namespace and is_user_name(name, namespace[name]) and name not in names_there and name not in defined:
                users.setdefault(name, []).append(cell.ref)
    report.hidden = [Hidden(name, refs, (made or {}).get(name)) for name, refs in users.items()]
    values = scratch.get("values", {})
    if "__error__" in values:
        report.values_note = f"Values were not compared: the scratch kernel could not summarise them ({values['__error__']})."
        return report
    mine = summaries(namespace, compared)
    for name, there in values.items():
        here = mine.get(name)
        if here is not None and differs(here, there):
            report.differing.append(Difference(name, shown(here), shown(there)))
    return report


def _same(error: str, refusal: str) -> bool:
    """Whether a cell's error is the refusal (raised as it is, or wrapped: urllib's URLError)."""
    message, told = error.partition(": ")[2], refusal.partition("; ")[2]
    return bool(message) and (message in refusal or (bool(told) and told in message))


def _probe_result(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith(_MARKER):
            try:
                found = json.loads(line[len(_MARKER):])
            except ValueError:
                break
            return found if isinstance(found, dict) else {}
    return {"names": [], "values": {"__error__": "no summary came back"}}


class NotebookCheckTool(NotebookTool):
    name = "notebook_check"
    needs_kernel = True
    kernel_tool = True
    description = (
        "Check that this kernel's notebook (or the one at `path`) still runs top to bottom: it "
        "runs every code cell in a fresh scratch kernel of the same kind, in a scratch copy of "
        "the notebook's project, and reports cells that fail there, hidden state (names cells use "
        "that only the live kernel has), cells run out of order in the live kernel, values that "
        "differ between the live and the scratch kernel, and changes outside the copy, shell "
        "commands and network connections it refused. Use it to verify your notebook edits. The "
        "live kernel, the notebook and the user's files are not changed; cells tagged "
        "larik-skip are not run. The network is off unless `network` is true."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": NOTEBOOK_PATH,
            "timeout": {
                "type": "integer",
                "description": f"Seconds the whole run may take; default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT}.",
            },
            "network": {
                "type": "boolean",
                "description": "Let the cells connect to other machines (default false: the network is off).",
            },
        },
    }

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        checked = str(args.get("path") or "") or "this notebook"
        return (f"Run {checked} top to bottom in a scratch kernel, on a copy (your kernel, the notebook "
                "and your files stay as they are)?"), preview

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        raw = notebook_path(env, args, self.name)
        report = run_check(env, raw, timeout=int(args.get("timeout") or DEFAULT_TIMEOUT), network=args.get("network") is True)
        return ToolResult(report.text(full=True), is_error=bool(report.stopped))


def check_on_thread(
    env: Env, raw_path: str, *, timeout: int, stop: threading.Event, network: bool = False,
    made: dict[str, int] | None = None, receipts: dict[str, list[Receipt]] | None = None,
) -> CheckReport:
    """`run_check` on a thread of its own, so that setting `stop`, or an interrupt of the
    calling thread (Jupyter's, in a `/check` cell), ends it; the scratch kernel is shut down
    either way, and a report stopped by the interrupt says so."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["report"] = run_check(env, raw_path, timeout=timeout, stop=stop, network=network, made=made,
                                         receipts=receipts)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            result["error"] = exc

    thread = threading.Thread(target=work, name="larik-check", daemon=True)
    thread.start()
    interrupted = False
    while thread.is_alive():
        try:
            thread.join(0.1)
        except KeyboardInterrupt:
            stop.set()
            interrupted = True
    if "error" in result:
        raise result["error"]
    report: CheckReport = result["report"]
    if interrupted and not report.stopped:
        report.stopped = "stopped"
    return report


def check_path(env: Env, path: str | None) -> str:
    """The notebook a check runs on: `path`, else the kernel's own."""
    return notebook_path(env, {"path": path} if path else {}, "check")


def check_notebook(
    env: Env, path: str | None, *, timeout: int, stop: threading.Event, notebook: Path | None = None,
    network: bool = False, made: dict[str, int] | None = None, receipts: dict[str, list[Receipt]] | None = None,
) -> CheckReport:
    """`check_on_thread` on `path`, else the kernel's own notebook: `notebook` when the caller
    knows it, else the one `env` names (`made`, `receipts`: see `run_check`)."""
    if notebook is not None:
        env = dataclasses.replace(env, call=dataclasses.replace(env.call, notebook_path=notebook))
    return check_on_thread(env, check_path(env, path), timeout=timeout, stop=stop, network=network, made=made,
                           receipts=receipts)
