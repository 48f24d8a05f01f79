"""Isolated git worktrees for subagents: `worktrees/<repo>/task-xxxxxx/` on branch `larik/task-xxxxxx`.

A worktree subagent skips checkpoints: its branch is the undo. When it ends, its changes
are committed on the branch so they can be merged (`git merge larik/task-xxxxxx`); a
worktree whose branch is merged (or never moved) is removed by `clean`, any other by
`discard`.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from larik_jupyter import paths
from larik_jupyter.errors import LarikError

BRANCH_PREFIX = "larik/"
_GIT_TIMEOUT = 60
# Used only when the repository has no identity configured, so the commit never fails on it.
_IDENTITY = ("-c", "user.name=larik", "-c", "user.email=larik@localhost")


class WorktreeError(LarikError):
    """A git worktree could not be created, listed or removed."""


@dataclass(frozen=True)
class Worktree:
    """One task's worktree: where it is, its branch, and the commit it started from."""

    name: str
    path: Path
    branch: str
    base: str
    repo: Path


@dataclass(frozen=True)
class WorktreeInfo:
    """A listed worktree and whether its branch is merged into the repository's HEAD."""

    name: str
    path: Path
    branch: str
    merged: bool
    changes: str


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout; failures raise `WorktreeError` with git's words."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"`git {' '.join(args)}` could not run in {cwd} ({exc}).") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise WorktreeError(
            f"`git {' '.join(args)}` failed in {cwd}: {detail[-1] if detail else 'no output'}."
        )
    return done.stdout


def repo_dir(repo: Path) -> Path:
    """`worktrees/<repo>/`: the worktrees of one repository (named by its project id)."""
    return paths.worktrees_dir() / paths.project_id(repo)


def create_worktree(repo: Path) -> Worktree:
    """Add a fresh worktree of `repo`'s HEAD on a new branch `larik/task-xxxxxx`."""
    if not (repo / ".git").exists():
        raise WorktreeError(
            f"{repo} is not a git repository, so a task cannot run in a worktree; "
            "run it without isolation or `git init` the project first."
        )
    try:
        base = git(repo, "rev-parse", "HEAD").strip()
    except WorktreeError:
        raise WorktreeError(
            f"The repository {repo} has no commit yet, so a worktree cannot start from one; "
            "commit once or run the task without isolation."
        ) from None
    name = f"task-{secrets.token_hex(3)}"
    path = repo_dir(repo) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    branch = BRANCH_PREFIX + name
    git(repo, "worktree", "add", "-b", branch, str(path), base)
    return Worktree(name, path, branch, base, repo)


def commit_all(worktree: Worktree, message: str) -> bool:
    """Commit every change in the worktree on its branch; False when there was none."""
    git(worktree.path, "add", "-A")
    if not git(worktree.path, "status", "--porcelain").strip():
        return False
    identity: tuple[str, ...] = ()
    if not _has_identity(worktree.path):
        identity = _IDENTITY
    git(worktree.path, *identity, "commit", "-q", "--no-verify", "-m", message)
    return True


def _has_identity(cwd: Path) -> bool:
    try:
        return bool(git(cwd, "config", "user.email").strip())
    except WorktreeError:
        return False


def diff_summary(worktree: Worktree) -> str:
    """`git diff --stat` of the branch against the commit it started from."""
    stat = git(worktree.path, "diff", "--stat", f"{worktree.base}..HEAD").strip()
    return stat or "no changes"


def list_worktrees(repo: Path) -> list[WorktreeInfo]:
    """The task worktrees of `repo`, oldest listing order of git."""
    folder = Path(os.path.realpath(repo_dir(repo)))
    found: list[WorktreeInfo] = []
    for path, branch in _porcelain(repo):
        if path.parent != folder:
            continue
        merged = _merged(repo, branch)
        changes = git(repo, "diff", "--shortstat", f"HEAD...{branch}").strip() if branch else ""
        found.append(WorktreeInfo(path.name, path, branch, merged, changes or "no changes"))
    return found


def _porcelain(repo: Path) -> list[tuple[Path, str]]:
    rows: list[tuple[Path, str]] = []
    path: Path | None = None
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(os.path.realpath(line[len("worktree ") :]))
        elif line.startswith("branch ") and path is not None:
            rows.append((path, line[len("branch ") :].removeprefix("refs/heads/")))
            path = None
    return rows


def _merged(repo: Path, branch: str) -> bool:
    try:
        git(repo, "merge-base", "--is-ancestor", branch, "HEAD")
    except WorktreeError:
        return False
    return True


def remove_worktree(repo: Path, name: str) -> WorktreeInfo:
    """Remove the worktree called `name` (e.g. `task-1a2b3c`) and delete its branch."""
    for info in list_worktrees(repo):
        if info.name == name:
            git(repo, "worktree", "remove", "--force", str(info.path))
            git(repo, "branch", "-D", info.branch)
            return info
    names = ", ".join(i.name for i in list_worktrees(repo)) or "none"
    raise WorktreeError(f"No task worktree called {name!r} in {repo} (worktrees: {names}).")


def clean_worktrees(repo: Path) -> list[WorktreeInfo]:
    """Remove every task worktree whose branch is merged into HEAD (or never moved from it)."""
    removed = []
    for info in list_worktrees(repo):
        if info.merged:
            removed.append(remove_worktree(repo, info.name))
    return removed
