"""The shape every tool has: a name, a JSON input schema, and a run that returns a result.

Tools are synchronous underneath (`execute`). Callers use `run` (sync) or `await arun`
(async); both validate the input and turn any failure into an error result (`failure_result`),
so a bad call never crashes the turn loop: a `LarikError` is its own message, an `OSError`
names the file, anything else is one sentence with the exception's type and message (its
traceback rides on the result for the debug trace, never into the model's text). `arun` runs the tool in a
worker thread so the event loop stays responsive and a kernel interrupt can land; kernel
tools (`inline = True`) run on the caller's thread instead (or where `env.call.run_inline` puts
them), because the kernel's namespace, display machinery and interrupts belong to it. To interrupt a running tool, set `env.call.stop_event`.
"""

from __future__ import annotations

import asyncio
import json
import traceback
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from larik_jupyter.config.rules import CallSubject
from larik_jupyter.errors import LarikError, ToolError, exception_text
from larik_jupyter.session.call_summary import MAX_SUMMARY, CellPosition, first_line, input_summary
from larik_jupyter.tools.planned import Planned

if TYPE_CHECKING:
    from larik_jupyter.egress.tags import Tag
    from larik_jupyter.frames.receipt import Receipt
    from larik_jupyter.llm.messages import ImageBlock
    from larik_jupyter.session.plan import Todo
    from larik_jupyter.session.variable_changes import VariableChange
    from larik_jupyter.tools.env import Env


# The `path` input of the tools that act on one file.
FILE_PATH: dict[str, Any] = {
    "type": "string",
    "description": "File path, relative to the working directory.",
}


@dataclass(frozen=True)
class Answer:
    """The variable a turn handed back (the `answer` tool): its name and the very object it held."""

    name: str
    value: Any


@dataclass
class ToolResult:
    """What a tool call produced.

    `content` is what the model reads. `diff` is a unified diff (a/ b/ paths relative to
    the project root) of the files it changed. `uncaptured`
    lists `(path, change)` pairs, change being created/changed/deleted, that a shell
    command made outside the checkpoints (not undoable). `display` is a rich object for
    the user, `displays` the mime bundles (other than images) the call's code displayed. `images` are image blocks the model sees with the text; `notices` are
    sentences the turn view shows the user (e.g. to reload a notebook the call rewrote);
    `source` is the code a call ran that its input does not hold (`notebook_run`'s cell);
    `answer` is the kernel variable the `answer` tool handed back as the turn's value;
    `variables` what a kernel call did to the user's variables. `egress` is what the content
    was made from and what each source's policy lets out of it (`egress/tags.py`): the
    sources and views the result block is tagged with.
    """

    content: str
    is_error: bool = False
    diff: str | None = None
    uncaptured: list[tuple[str, str]] = field(default_factory=list)
    display: object | None = None
    displays: list[dict[str, Any]] = field(default_factory=list)
    images: list[ImageBlock] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # The traceback of an unexpected exception the call ended with: for the debug trace only.
    traceback: str | None = None
    source: str | None = None
    answer: Answer | None = None
    variables: list[VariableChange] = field(default_factory=list)
    receipts: list[Receipt] = field(default_factory=list)
    egress: Tag | None = None


# What a call decides when no rule matches: run, ask the user first, or refuse.
Permission = Literal["allow", "ask", "deny"]
# What a tool may change: files in the project, notebooks (file or open notebook), the
# kernel's variables, or anything a shell command or a subagent reaches.
Writes = Literal["files", "notebooks", "kernel", "anything"]


# How long a stopped tool's thread may take to wind down before the turn ends without it.
STOP_GRACE_SECONDS = 0.5


class Tool(ABC):
    """One tool offered to the model, with its traits: everything that decides how a call is
    treated (asked for, run, previewed, recorded) reads them here, never a list of names.

    - `writes`: what a call may change; empty for a tool that only looks.
    - `concurrent`: neighbouring calls of this tool in one reply run together.
    - `default_permission`: what a call decides when no rule matches; by default a tool that
      writes nothing is allowed and any other asks.
    - `needs_kernel`: the tool works only in a Jupyter kernel (`Env.host`); an agent
      without one (CLI, server) does not offer it and a call of it is refused in one sentence.
    - `inline`: run on the caller's thread (the kernel's), not a worker thread.
    - `kernel_tool`: offered to an outside agent over MCP (`larik-jupyter mcp`).
    - `runs_user_code`: runs code in the user's kernel among their variables, so protect mode
      checks what a call did to them after it ran; `kernel_code(args)`: that code when the
      input holds it (protect mode reads it before the call, the views show it).
    - `preview_is_call`: the approval preview is the call's own text (the command, the code),
      so the views name a pending call by the tool alone and the text appears once.
    - `path_input`, `rule_names`: what permission rules read of a call
      (`rule_subject`): the input naming the one path a call acts on (left out: the working
      directory), and other names a rule may call the tool by. One answer for the configured rules,
      an "always allow" answer and scoping (`scoped_input`).
    - `preview(env, args)`: what an approval shows of the call; `approval_question`: what the
      approval asks, in the same words in every front end; `plan(env, args)`: the change a call
      would make, worked out once for the approval and made by the run as approved, worked out
      again only when what it was worked out from changed (`tools/planned.py`).
    - `summary(args, position)`: the call in one line for every view of a session, from its
      input alone (a stored call's too, with no agent at hand: a class method); `cells_named`:
      the ids of the cells it names (the summary's hover); `plan_set`, `skill_loaded`: what a
      view shows of a done call in place of its output (the checklist, the skill's name).
    - `shell_command(args)`: the shell command a call runs (a branch's steps and replay read it;
      a tool that writes one file's text says what it leaves there, `files.TextTool.new_text`).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    writes: ClassVar[frozenset[Writes]] = frozenset({"anything"})
    concurrent: ClassVar[bool] = False
    default_permission: ClassVar[Permission] = "ask"
    needs_kernel: ClassVar[bool] = False
    inline: ClassVar[bool] = False
    kernel_tool: ClassVar[bool] = False
    runs_user_code: ClassVar[bool] = False
    preview_is_call: ClassVar[bool] = False
    path_input: ClassVar[str | None] = None
    rule_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "default_permission" not in cls.__dict__:
            cls.default_permission = "ask" if cls.writes else "allow"

    @classmethod
    def read_only(cls) -> bool:
        """Whether a call changes nothing (it may still read outside what it was given)."""
        return not cls.writes

    def plan(self, env: Env, args: dict[str, Any]) -> Planned[Any] | None:
        """The change a call would make, worked out without making it: what its approval shows,
        carried to the run (`env.call.planned`), which makes it unless what it was worked out
        from changed; None for a tool that works out no change ahead. May raise, as the call would."""
        return None

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        """What an approval of this call shows the user; may raise (the caller says why
        there is no preview). By default the planned change's, else the input as JSON."""
        planned = self.plan(env, args)
        return planned.preview if planned is not None else json.dumps(args, indent=2, ensure_ascii=False)

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        """What an approval of this call asks, as a full question, and the detail shown under
        it (`preview`, less a question it opens with); `namespace`: the kernel's variables,
        `position`: where a cell stands in the open notebook."""
        return f"Run the {self.name} tool with these arguments?", preview

    def scoped_input(self, env: Env, args: Mapping[str, Any]) -> dict[str, Any]:
        """The call's input as rules see it; a tool whose path, left out, means a particular
        file (the kernel's own notebook) fills it in, so a rule names that file and no other."""
        return dict(args)

    def rule_subject(self, args: Mapping[str, Any]) -> CallSubject:
        """What permission rules read of a call of this tool (on its `scoped_input`): by default
        its names and the path it acts on, when it acts on one."""
        return CallSubject((self.name, *self.rule_names), path=self.call_path(args))

    def call_path(self, args: Mapping[str, Any]) -> str | None:
        """The path a call acts on: its `path_input`, else the working directory (`.`); None
        for a tool that acts on no one path."""
        if self.path_input is None:
            return None
        path = args.get(self.path_input)
        return path if isinstance(path, str) and path else "."

    @classmethod
    def kernel_code(cls, args: Mapping[str, Any]) -> str | None:
        """The code a call runs in the user's kernel, when its input holds it; else None."""
        return None

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        """The call in one line (`python: df.describe()…`, `bash: pytest -q`): by default the
        first line of the code it runs in the kernel, else `input_summary`; `position` numbers
        notebook cells as they stand in the open notebook."""
        code = cls.kernel_code(args)
        if code is not None and code.strip():
            return f"{cls.name}: {first_line(code, MAX_SUMMARY)}"
        return input_summary(cls.name, args)

    @classmethod
    def cells_named(cls, args: Mapping[str, Any]) -> str | None:
        """The ids of the cells a call names (`cell id calc`), for its summary's hover: a
        summary names cells by position, which moves; the id does not. None: it names none."""
        return None

    @classmethod
    def cell_run(cls, args: Mapping[str, Any]) -> str | None:
        """The id of the notebook cell a call runs in the kernel (what `/check` compares its
        receipts on); None: it runs none."""
        return None

    @classmethod
    def plan_set(cls, args: Mapping[str, Any]) -> list[Todo] | None:
        """The plan a call sets, shown as a checklist once it is done; None: it sets none."""
        return None

    @classmethod
    def skill_loaded(cls, args: Mapping[str, Any]) -> str | None:
        """The name of the skill a call loads, shown once it is done; None: it loads none."""
        return None

    @classmethod
    def shell_command(cls, args: Mapping[str, Any]) -> str | None:
        """The shell command a call runs, when it runs one; else None."""
        return None

    @classmethod
    def doer(cls) -> str:
        """Who made a file change the checkpoints did not capture, in words."""
        return f"the tool `{cls.name}`"

    def unavailable(self, env: Env) -> str | None:
        """Why this tool cannot run in `env`, in one sentence; None when it can."""
        if self.needs_kernel and env.host is None:
            return (
                f"The {self.name} tool needs a live kernel: it runs only inside Jupyter (`%larik` "
                "in a notebook), and this agent has none (the CLI, the server or a plain Python "
                "script); use bash or the file tools instead."
            )
        return None

    @abstractmethod
    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        """Do the work on validated input; raise `ToolError` for a call that cannot be done."""

    async def aexecute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        """`execute` from async code: in a worker thread, or on this thread for kernel tools.
        A tool that must await the kernel's loop (e.g. to hear the browser) overrides this."""
        if self.inline:
            if env.call.run_inline is None:
                return self.execute(env, args)
            result: ToolResult = await env.call.run_inline(lambda: self.execute(env, args))
            return result
        worker = asyncio.ensure_future(asyncio.to_thread(self.execute, env, args))
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            # A cancelled call is told to stop, and gets a moment to clean up (a shell command
            # kills its process group) before the turn is over.
            env.call.stop_event.set()
            await asyncio.wait([worker], timeout=STOP_GRACE_SECONDS)
            raise

    def run(self, env: Env, args: dict[str, Any]) -> ToolResult:
        """Validate `args` and execute; any failure comes back as an error result."""
        try:
            self._check(env, args)
            return self.execute(env, args)
        except Exception as exc:
            return failure_result(self.name, exc)

    async def arun(self, env: Env, args: dict[str, Any]) -> ToolResult:
        """`run` from async code (see `aexecute`)."""
        try:
            self._check(env, args)
            return await self.aexecute(env, args)
        except Exception as exc:
            return failure_result(self.name, exc)

    def _check(self, env: Env, args: dict[str, Any]) -> None:
        why = self.unavailable(env)
        if why is not None:
            raise ToolError(why)
        check_input(self.input_schema, args, self.name)


def failure_result(tool: str, exc: Exception) -> ToolResult:
    """The error result of a call of `tool` that raised `exc`: the one place a tool's failure
    becomes what the model reads. A `LarikError` says what to do itself; an `OSError` is named
    with its file; anything else is one sentence naming the exception's type and message. The
    traceback of an unexpected exception (raised, or wrapped by a `LarikError`) is kept on the
    result for the debug trace, never in its text."""
    if isinstance(exc, LarikError):
        # A refusal that wraps an unexpected exception keeps that one's traceback for the trace.
        cause = exc.__cause__
        if cause is None or isinstance(cause, (LarikError, OSError)):
            return ToolResult(str(exc), is_error=True)
        return ToolResult(str(exc), is_error=True, traceback=_traceback(cause))
    if isinstance(exc, OSError):
        return ToolResult(f"{tool} failed: {os_error_text(exc)}.", is_error=True)
    return ToolResult(
        f"{tool} failed with {exception_text(exc)}, an error inside the tool; try another way "
        "or tell the user.",
        is_error=True,
        traceback=_traceback(exc),
    )


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def os_error_text(exc: OSError) -> str:
    """An OSError as a short phrase naming the file."""
    reason = exc.strerror or str(exc)
    return f"{reason}: {exc.filename}" if exc.filename else reason


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def input_problem(tool: Tool, args: dict[str, Any]) -> str | None:
    """Why `args` do not match `tool`'s input schema (one sentence), or None. Asked before any
    permission decision: a malformed call is told what to fix, never asked about or denied. A
    schema beyond the subset `check_input` knows (an MCP server's own) is left to its tool."""
    try:
        check_input(tool.input_schema, args, tool.name)
    except ToolError as exc:
        return str(exc)
    except (KeyError, TypeError):
        return None
    return None


def check_input(schema: dict[str, Any], value: Any, where: str) -> None:
    """Check `value` against the small JSON-schema subset our tools use; raise `ToolError`."""
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _JSON_TYPES[kind]) and not (
            kind in ("integer", "number") and isinstance(value, bool)
        )
        if not ok:
            raise ToolError(
                f"{where} must be of type {kind}, got {type(value).__name__}; fix the tool input."
            )
    if kind == "object":
        for key in schema.get("required", []):
            if key not in value:
                raise ToolError(
                    f"{where} is missing the required input {key!r}; add it and call again."
                )
        for key, sub in schema.get("properties", {}).items():
            if key in value and value[key] is not None:
                check_input(sub, value[key], f"{where}.{key}")
    elif kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            check_input(schema["items"], item, f"{where}[{i}]")
