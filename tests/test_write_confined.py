"""Nothing a tool writes lands outside the project root: not through a symlink swapped in at the
last moment before a write, and not in a personal skill's folder even with `--yes`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat

from larik_jupyter import Agent
from larik_jupyter.tools import Env
from larik_jupyter.tools.files.write import last_moment
from tests.agent_helpers import Hooks, call, done, make_env, results_of, scripted, tool

OUTSIDE_NB = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def notebook(path: Path, *sources: str) -> None:
    nb = nbformat.v4.new_notebook()
    for i, source in enumerate(sources):
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = f"c{i}"
        nb.cells.append(cell)
    path.write_text(nbformat.writes(nb))


class SwapForLink:
    """A last-moment hook that replaces the file being written with a symlink to `target`."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.swapped: list[str] = []

    def __call__(self, path: Path) -> None:
        os.unlink(path)
        os.symlink(self.target, path)
        self.swapped.append(path.name)


def test_a_link_swapped_in_before_a_write_is_replaced_never_followed(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"outside\n")
    (project / "f.txt").write_bytes(b"old\n")
    model = scripted(tmp_path, [tool("write", path="f.txt", content="new\n")],
                     [tool("edit", path="f.txt", old_string="new", new_string="newer")], done())  # fmt: skip
    agent = Agent(project, model=model, yes=True)
    swap = SwapForLink(secret)
    with last_moment(swap):
        outcome = agent.run("rewrite f.txt")
    assert swap.swapped == ["f.txt", "f.txt"]
    wrote, edited = results_of(agent)
    assert outcome.status == "done" and not wrote.is_error and not edited.is_error
    assert secret.read_bytes() == b"outside\n"
    assert not (project / "f.txt").is_symlink() and (project / "f.txt").read_bytes() == b"newer\n"
    assert [p.name for p in project.iterdir() if p.name.startswith(".larik-")] == []
    agent.undo()  # the checkpoint holds what was there before the turn
    assert (project / "f.txt").read_bytes() == b"old\n" and secret.read_bytes() == b"outside\n"
    agent.close()


def test_a_notebook_swapped_for_a_link_before_its_write_stays_in_the_project(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.ipynb"
    outside.write_text(json.dumps(OUTSIDE_NB))
    before = outside.read_bytes()
    notebook(project / "nb.ipynb", "x = 1")
    model = scripted(tmp_path, [tool("notebook_edit", path="nb.ipynb", cell_id="c0", new_source="x = 2")], done())
    agent = Agent(project, model=model, yes=True)
    swap = SwapForLink(outside)
    with last_moment(swap):
        agent.run("change x")
    assert swap.swapped == ["nb.ipynb"]
    (edited,) = results_of(agent)
    assert not edited.is_error, edited.content
    assert outside.read_bytes() == before
    nb = nbformat.read(project / "nb.ipynb", as_version=4)
    assert not (project / "nb.ipynb").is_symlink() and nb.cells[0].source == "x = 2"
    agent.close()


def test_written_files_keep_their_mode_and_new_ones_get_the_umasks(project: Path) -> None:
    (project / "run.sh").write_text("echo 1\n")
    (project / "run.sh").chmod(0o751)
    env = make_env(project)
    assert not call(env, "edit", path="run.sh", old_string="1", new_string="2").is_error
    assert not call(env, "write", path="new/deep/file.txt", content="x").is_error
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o751
    assert stat.S_IMODE((project / "new" / "deep" / "file.txt").stat().st_mode) == 0o666 & ~umask
    assert (project / "run.sh").read_text() == "echo 2\n"


def test_a_directory_swapped_for_a_link_is_refused_with_one_sentence(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "sub").mkdir()

    def swap_dir(path: Path) -> None:  # the checkpoint capture runs between the checks and the write
        (project / "sub").rename(project / "sub.moved")
        os.symlink(outside, project / "sub")

    env = Env(cwd=project, root=project, checkpoints=Hooks(file=swap_dir))
    result = call(env, "write", path="sub/new.txt", content="data")
    assert result.is_error
    assert result.content == (
        "sub/new.txt its directory sub is a symbolic link, so it was not written (files are written "
        "only inside the project, never through a symbolic link)."
    )
    assert list(outside.iterdir()) == [] and list((project / "sub.moved").iterdir()) == []


def test_a_link_swapped_in_after_the_directory_was_opened_writes_inside(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "sub").mkdir()

    def swap_dir(path: Path) -> None:
        (project / "sub").rename(project / "sub.moved")
        os.symlink(outside, project / "sub")

    with last_moment(swap_dir):
        result = call(make_env(project), "write", path="sub/new.txt", content="data")
    assert not result.is_error and (project / "sub").is_symlink()
    # The write went to the directory it had opened (now sub.moved), never through the link.
    assert list(outside.iterdir()) == [] and (project / "sub.moved" / "new.txt").read_text() == "data"


def test_personal_skill_files_are_read_only_even_with_yes(
    project: Path, tmp_path: Path, larik_dirs: dict[str, Path]
) -> None:
    folder = larik_dirs["config"] / "skills" / "review"
    folder.mkdir(parents=True)
    skill_md = folder / "SKILL.md"
    skill_md.write_text("---\nname: review\ndescription: Review a change.\n---\nBody.\n")
    notebook(folder / "notes.ipynb", "a = 1")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    real = folder.resolve()
    model = scripted(
        tmp_path,
        [tool("read", path=str(real / "SKILL.md"))],
        [tool("write", path=str(real / "SKILL.md"), content="pwned")],
        [tool("edit", path=str(real / "SKILL.md"), old_string="Body.", new_string="pwned")],
        [tool("write", path=str(real / "new.sh"), content="echo pwned")],
        [tool("notebook_edit", path=str(real / "notes.ipynb"), cell_id="c0", new_source="a = 2")],
        done(),
    )
    agent = Agent(project, model=model, yes=True)
    agent.run("improve the review skill")
    read, *writes = results_of(agent)
    assert not read.is_error and "Body." in read.content
    for result in writes:
        assert result.is_error
        assert f"is outside the project root {project}, where tools only read (a personal skill's folder " \
               "included); nothing was written." in result.content
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    agent.close()
