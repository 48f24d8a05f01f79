"""Skills: folders holding a `SKILL.md` (YAML front matter with `name` and `description`, then
the instructions), personal in `<config>/skills/` and from the repository in
`<project root>/.larik/skills/`. A personal skill wins over a repository one of the same name.

Folders and files are opened without following symlinks (a repository could point a skill at
any file of the user's), and only regular files are read or listed.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from larik_jupyter import paths
from larik_jupyter.checkpoint.durable import DIR_FLAGS
from larik_jupyter.checkpoint.safepath import DirWalk, PathRefused
from larik_jupyter.errors import LarikError, exception_text

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024
MAX_LISTED_FILES = 200
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

Source = Literal["personal", "repository"]


class SkillError(LarikError):
    """A skill that cannot be loaded; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Skill:
    """One skill folder. `error` says why a broken one cannot be used (its `name` is then the
    folder's); `shadowed` marks a repository skill hidden by a personal one of the same name."""

    name: str
    description: str
    source: Source
    folder: Path
    error: str | None = None
    shadowed: bool = False
    # Where the walk to `folder` starts (the config dir or the project root).
    base: Path = field(kw_only=True, repr=False)

    @property
    def usable(self) -> bool:
        return self.error is None and not self.shadowed


@dataclass(frozen=True)
class SkillText:
    """What loading a skill gives the model: its instructions and the other files it holds
    (POSIX paths relative to its folder)."""

    skill: Skill
    body: str
    files: list[str]
    more_files: int = 0


def _roots(root: Path) -> list[tuple[Source, Path, tuple[str, ...]]]:
    """Where skills are looked for, personal first: (source, base directory, the components
    below it that must not be symlinks)."""
    return [
        ("personal", paths.config_dir(), ("skills",)),
        ("repository", root, (".larik", "skills")),
    ]


def load_skills(root: Path) -> list[Skill]:
    """Every skill found, personal first then repository, each group by folder name."""
    found: list[Skill] = []
    for source, base, below in _roots(root):
        found += _skills_in(source, base, below)
    taken: set[str] = set()
    out: list[Skill] = []
    for skill in found:
        if skill.error is None and skill.name in taken:
            skill = replace(skill, shadowed=True)
        elif skill.error is None:
            taken.add(skill.name)
        out.append(skill)
    return out


def _skills_in(source: Source, base: Path, below: tuple[str, ...]) -> list[Skill]:
    skills: list[Skill] = []
    folder = base.joinpath(*below)
    with _skills_dir(base, below) as skills_fd:
        if skills_fd is None:
            return skills
        with os.scandir(skills_fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                reason = "the folder is a symbolic link, which is never followed"
                skills.append(_broken(entry.name, source, folder / entry.name, base, reason))
            elif entry.is_dir(follow_symlinks=False):
                skills.append(_load(entry.name, source, folder / entry.name, base, skills_fd))
    return skills


@contextlib.contextmanager
def _skills_dir(base: Path, below: tuple[str, ...]) -> Iterator[int | None]:
    """The fd of `base/below…`, reached without following a symlink below `base`; None when
    it is missing or refused."""
    try:
        base_fd = os.open(base, DIR_FLAGS)
    except OSError:
        yield None
        return
    try:
        with DirWalk(base_fd) as walk:
            try:
                fd = walk.parent((*below, SKILL_FILE), create=False)
            except (PathRefused, OSError):
                fd = None
            yield fd
    finally:
        os.close(base_fd)


def _broken(name: str, source: Source, folder: Path, base: Path, reason: str) -> Skill:
    return Skill(name=name, description="", source=source, folder=folder, error=reason, base=base)


def _load(dirname: str, source: Source, folder: Path, base: Path, parent_fd: int) -> Skill:
    try:
        (name, description), _ = parse_skill(_read_skill_file(parent_fd, dirname))
    except Exception as exc:  # one bad skill file never keeps the agent from opening
        return _broken(dirname, source, folder, base, _problem(exc))
    return Skill(name=name, description=description, source=source, folder=folder, base=base)


def _problem(exc: Exception) -> str:
    """Why a skill could not be loaded, as the middle of a sentence."""
    if isinstance(exc, SkillError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"its folder cannot be read ({exc.strerror or exc})"
    if isinstance(exc, RecursionError):
        return f"the front matter of {SKILL_FILE} nests too deeply to parse (RecursionError)"
    return f"loading {SKILL_FILE} failed with {exception_text(exc)}"


def _read_skill_file(parent_fd: int, dirname: str) -> str:
    try:
        folder_fd = os.open(dirname, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
    except OSError as exc:
        raise SkillError(f"the folder cannot be opened ({exc.strerror})") from None
    try:
        try:
            fd = os.open(SKILL_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
        except FileNotFoundError:
            raise SkillError(f"it has no {SKILL_FILE}") from None
        except OSError as exc:
            raise SkillError(f"{SKILL_FILE} cannot be opened ({exc.strerror}; a symbolic link is refused)") from None
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SkillError(f"{SKILL_FILE} is not a regular file")
            if st.st_size > MAX_SKILL_BYTES:
                raise SkillError(f"{SKILL_FILE} is {st.st_size} bytes; a skill may have at most {MAX_SKILL_BYTES}")
            data = handle.read(MAX_SKILL_BYTES + 1)
    finally:
        os.close(folder_fd)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkillError(f"{SKILL_FILE} is not valid UTF-8") from None


def parse_skill(text: str) -> tuple[tuple[str, str], str]:
    """((name, description), body) of a SKILL.md; raises `SkillError` saying what is missing."""
    import yaml  # only projects with skills pay for the YAML parser

    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{SKILL_FILE} has no YAML front matter (it must start with a `---` line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError(f"the front matter of {SKILL_FILE} is not closed by a `---` line") from None
    try:
        front = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "it does not parse"
        raise SkillError(f"the front matter of {SKILL_FILE} is not valid YAML ({problem})") from None
    if not isinstance(front, dict):
        raise SkillError(f"the front matter of {SKILL_FILE} is not a mapping of keys to values")
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError(f"the front matter of {SKILL_FILE} has no `name`")
    if not _NAME.match(name.strip()):
        raise SkillError(
            f"the name {name.strip()!r} is not a skill name (letters, digits, '.', '_', '-'; at most 64)"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"the front matter of {SKILL_FILE} has no `description`")
    summary = " ".join(description.split())[:MAX_DESCRIPTION]
    return (name.strip(), summary), "\n".join(lines[end + 1 :]).strip("\n")


def read_skill(skill: Skill) -> SkillText:
    """The instructions of `skill` and the other regular files in its folder, read now."""
    problem = skill.error
    if problem is None:
        try:
            return _read_now(skill)
        except Exception as exc:
            problem = _problem(exc)
    raise SkillError(
        f"The skill {skill.name} ({skill.folder}) is broken: {problem}; fix its {SKILL_FILE} "
        "or leave the skill out."
    )


def _read_now(skill: Skill) -> SkillText:
    below = skill.folder.relative_to(skill.base).parts[:-1]
    with _skills_dir(skill.base, below) as parent_fd:
        if parent_fd is None:
            raise SkillError("its folder is gone or reached through a symbolic link")
        _, body = parse_skill(_read_skill_file(parent_fd, skill.folder.name))
        folder_fd = os.open(skill.folder.name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
        try:
            files = sorted(_files(folder_fd, ""))
        finally:
            os.close(folder_fd)
    files = [f for f in files if f != SKILL_FILE]
    listed = files[:MAX_LISTED_FILES]
    return SkillText(skill, body, listed, len(files) - len(listed))


def _files(dir_fd: int, prefix: str, depth: int = 0) -> Iterator[str]:
    """Regular files below `dir_fd`, never entering a symlinked folder."""
    with os.scandir(dir_fd) as listing:
        entries = list(listing)
    for entry in entries:
        name = prefix + entry.name
        if entry.is_file(follow_symlinks=False):
            yield name
        elif entry.is_dir(follow_symlinks=False) and depth < 8 and not entry.name.startswith("."):
            try:
                child = os.open(entry.name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                yield from _files(child, name + "/", depth + 1)
            finally:
                os.close(child)


def skills_prompt(skills: list[Skill]) -> str:
    """The system prompt's list of usable skills: names and descriptions only."""
    usable = [s for s in skills if s.usable]
    if not usable:
        return ""
    rows = "\n".join(f"- {s.name}: {s.description}" for s in usable)
    return (
        "Skills: call the skill tool with a skill's name to load its instructions when a task "
        "matches its description; it also lists the files the skill holds (read them with read, "
        f"run its scripts only with bash).\n{rows}"
    )


def in_personal_skill(skills: list[Skill], real: Path) -> bool:
    """Whether `real` lies in a personal skill's folder, which `read` may open although it is
    outside the project root."""
    return any(
        real.is_relative_to(os.path.realpath(skill.folder))
        for skill in skills
        if skill.usable and skill.source == "personal"
    )
