"""How `Agent` moves between sessions: a new one, resuming one, branching (fork, rewind) the open
session or a stored one, undoing turns here or in another session, and writing a session out or
deleting it. A stored session is acted on from its file, so a lazy agent opens none for it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from larik_jupyter.agent.undo import RewindStopped, record_undone, undo_turns
from larik_jupyter.agent.undo_report import UndoReport
from larik_jupyter.errors import LarikError
from larik_jupyter.session import branch, catalog
from larik_jupyter.session.store import SessionLockedError

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop
    from larik_jupyter.agent.options import AgentOptions
    from larik_jupyter.analysis.branch_diff import BranchDiff
    from larik_jupyter.api.outside import OutsideSessions


class Switching:
    """`Agent`'s session switching; the attributes below are `Agent`'s."""

    branched_from: str | None
    last_undo: UndoReport

    if TYPE_CHECKING:
        def __init__(self, *, session: str | None = None, options: AgentOptions | None = None) -> None: ...

        _loop: AgentLoop | None
        outside: OutsideSessions[Switching]

        @property
        def options(self) -> AgentOptions: ...
        @property
        def loop(self) -> AgentLoop: ...
        @property
        def model(self) -> str: ...
        @property
        def session_id(self) -> str: ...
        @property
        def session_path(self) -> Path: ...
        def require_idle(self) -> None: ...
        def sync(self) -> None: ...
        def close(self, *, keep_mcp: bool = False) -> None: ...
        def _open_on(self, session: str | None, continue_latest: bool, *, model: str | None) -> None: ...

    def _resolve(self, session: str) -> Path:
        return catalog.resolve(session, self.options.cwd)

    def _is_open(self, path: Path) -> bool:
        """Whether the session at `path` is the one open here."""
        return self._loop is not None and path == self.session_path

    def new(self, model: str | None = None) -> None:
        """Continue on a new session (with `model`; default: the one in use, or the configured one)."""
        self.require_idle()
        self._open_on(None, False, model=model or (self.model if self._loop is not None else self.options.model))

    def resume(self, session: str | None = None, *, last: bool = False) -> None:
        """Continue a session by id or path, or the directory's latest with `last=True`. An
        outside agent's live session stays that agent's (undo its calls with `undo(session=…)`)."""
        self.require_idle()
        if session is None or last:
            newest = catalog.latest(self.options.cwd)
            target = Path(newest.path) if newest is not None else None
        else:
            target = self._resolve(session)
        if target is not None and (held := self.outside.holding(target)) is not None:
            client = held.model.partition(":")[2] or held.model
            raise LarikError(
                f"Session {held.session_id} is the live session of the outside agent `{client}` "
                "(over MCP), so this notebook keeps its own session. Undo its calls "
                f"with `%larik /undo --session {held.session_id}` (the sidebar lists them)."
            )
        if target is not None and self._is_open(target):
            self.branched_from = None
            return  # already there; reopening would collide with our own writer lock
        self._open_on(session, last or session is None, model=None)

    def fork(self, prompt_number: int | None = None, *, session: str | None = None) -> Path:
        """Branch the session (default: the open one; `session`: another, from its file) after
        the turn of prompt `prompt_number` (1-based; default: at its end), continue on the branch
        and return its path: before the last prompt, exactly the branch `rewind(prompt_number + 1)` makes."""
        self.require_idle()
        if session is not None and not self._is_open(source := self._resolve(session)):
            path = branch.fork_after(source, prompt_number)
            self.resume(str(path))
            return path
        prompts = len(self.loop.session.state.prompt_positions)
        if prompt_number is not None:
            branch.check_prompt(self.session_id, prompt_number, prompts)
        if prompt_number is not None and prompt_number < prompts:
            self.rewind(prompt_number + 1)
            return self.session_path
        self.sync()
        path = branch.fork(self.session_path)
        self._open_on(str(path), False, model=self.model)
        return path

    def rewind(
        self, prompt_number: int, *, session: str | None = None, files: bool = False, force: bool = False,
        skip_changed: bool = False,
    ) -> str:
        """Branch just before prompt `prompt_number` (1-based) of the open session (`session`:
        another, from its file; resumed first with `files`), continue there, return that prompt's
        text. With `files`, first undo the session's turns from the newest down to that prompt
        (files and this kernel's variables; `last_undo` holds what was done; `force` and
        `skip_changed` as for `undo`); when one cannot be fully undone, raise `RewindStopped`
        and make no branch. Without it nothing on disk changes but the new branch. An agent on
        a branch of a session another process holds (`branched_from`) refuses `files`."""
        self.require_idle()
        if session is not None and not self._is_open(source := self._resolve(session)):
            if not files:
                path, text = branch.rewind(source, prompt_number)
                self.resume(str(path))
                return text
            self.resume(session)
        if files and self.branched_from:
            raise LarikError(
                f"Session {self.branched_from} is open in another kernel, so its turns can be undone only there; this "
                f"kernel is now on its branch {self.session_id}. Rewind without files to branch it here."
            )
        self.sync()
        if files:
            self.last_undo = self._undo(prompt_number, nothing_ok=True, record=False, force=force, skip_changed=skip_changed)
            if self.last_undo and not self.last_undo[-1].ok:
                raise RewindStopped(self.last_undo.rewind_stopped(prompt_number), self.last_undo)
        path, text = branch.rewind(self.session_path, prompt_number)
        # The undo's note goes with the branch, where the next prompt is sent; the source
        # transcript is never written to.
        note, self.loop.pending_note = self.loop.pending_note, None
        self._open_on(str(path), False, model=self.model)
        if note:
            self.loop.queue_note(note)
        return text

    def undo(
        self, prompt_number: int | None = None, *, session: str | None = None, force: bool = False,
        skip_changed: bool = False,
    ) -> UndoReport:
        """Revert the newest turn that changed files or kernel variables; the next prompt tells
        the model. With `prompt_number`, every turn from the newest down to that prompt (1-based),
        newest first, stopping after the first one not fully undone. Returns the report: the turns'
        `UndoResult`s, newest first, and what it did in words (`markdown()`, `plain()`, …).
        `session`: undo in another session (an outside agent's, or one stored), this agent
        staying on its own.

        A file or cell the user changed since its turn is never overwritten unasked: that turn
        is left as it is, its result listing them in `changed`. Undo again with `force=True` to
        restore them anyway (their later changes lost) or `skip_changed=True` to undo the rest."""
        self.require_idle()
        if session is not None and not self._is_open(path := self._resolve(session)):
            held = self.outside.holding(path)
            agent = held if held is not None else self._stored_agent(path)
            try:
                return agent.undo(prompt_number, force=force, skip_changed=skip_changed)
            finally:
                if held is None:
                    agent.close()
        self.last_undo = self._undo(prompt_number, force=force, skip_changed=skip_changed)
        return self.last_undo

    def _stored_agent(self, path: Path) -> Switching:
        """An agent on the stored session at `path`, to act on it (no turns)."""
        options = self.options
        try:
            return type(self)(session=str(path), options=type(options)(
                cwd=options.cwd, host=options.host, for_turns=False, egress_rules=options.egress_rules,
            ))
        except SessionLockedError:
            raise LarikError(
                f"Session {path.stem} is open in another process (a kernel or `larik-jupyter run`); "
                "undo it there, or close it and run this again."
            ) from None

    def _undo(self, prompt_number: int | None, *, nothing_ok: bool = False, record: bool = True, **how: bool) -> UndoReport:
        """Undo the newest turn, or with `prompt_number` each turn down to it; the note for the
        model is recorded in the session unless `record` is off (a rewind carries it to its branch)."""
        loop = self.loop
        report = undo_turns(
            loop.checkpoints, loop.env, lambda note: loop.queue_note(note, record=record), prompt_number,
            prompts=len(loop.session.state.prompt_positions), nothing_ok=nothing_ok, **how,
        )
        if record:
            record_undone(loop.session, report)
        return report

    # -- sessions written out ----------------------------------------------------------------

    def _source(self, session: str | None) -> Path:
        """The transcript `session` names (default: the open one), made durable first when open."""
        path = self.session_path if session is None else self._resolve(session)
        if self._is_open(path):
            self.sync()
        return path

    def to_notebook(
        self, path: str | os.PathLike[str] | None = None, *, session: str | None = None,
        prompt_number: int | None = None, include_shell: bool = False, include_undone: bool = False,
    ) -> Path:
        """Write a branch (default: the open session) up to prompt `prompt_number` (default: all)
        as a new notebook and return its path: `path` (relative to `cwd`; refused if it exists),
        else `<id>.ipynb` in the session's directory. `!cmd` cells only with `include_shell`."""
        from larik_jupyter.analysis.as_notebook import write_notebook

        return write_notebook(self._source(session), path, prompt_number=prompt_number, include_shell=include_shell,
                              cwd=self.options.cwd, include_undone=include_undone)

    def export(self, path: str | os.PathLike[str] | None = None, *, session: str | None = None) -> Path:
        """Write a session (default: the open one) as Markdown, to `path` or under `<cwd>/.larik/exports/`."""
        from larik_jupyter.config.secrets import redactor_for
        from larik_jupyter.session.export import export_markdown

        cwd = self.options.cwd
        return export_markdown(self._source(session), path, cwd=cwd, redactor=redactor_for(cwd))

    def diff(self, other: str, session: str | None = None) -> BranchDiff:
        """Compare a branch (default: the open session) with `other`: their common prefix,
        then each one's prompts and code outputs; `.render()` shows it side by side."""
        from larik_jupyter.analysis.branch_diff import diff_branches

        return diff_branches(self._source(session), self._source(other))

    def delete(self, session: str) -> Path:
        """Remove a stored session with its agents, trace and checkpoints (the same validated
        delete as the CLI and the server); never the open one."""
        if self._is_open(self._resolve(session)):
            raise LarikError("That is the open session; `%larik /new` first, then delete it.")
        return catalog.delete(session, self.options.cwd)
