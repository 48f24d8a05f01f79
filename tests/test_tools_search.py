"""glob, grep and ls over real trees: .gitignore honoured, heavy and binary files skipped, caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter.tools import Env, ToolResult, default_tools


def call(env: Env, tool: str, **args: object) -> ToolResult:
    return default_tools(env)[tool].run(env, args)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    root = tmp_path / "project"
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "src/app.py": "def main():\n    return 'hello'\n",
        "src/util.py": "HELLO = 1\n",
        "src/pkg/deep.py": "x = 'hello'\n",
        "src/pkg/.gitignore": "generated.py\n",
        "src/pkg/generated.py": "hello = 2\n",
        "README.md": "Say hello.\n",
        "build/out.py": "hello\n",
        "debug.log": "hello\n",
        "keep.log": "hello\n",
        "node_modules/lib/index.js": "hello\n",
        ".git/config": "hello\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "image.bin").write_bytes(b"hello\x00\x01")
    return Env(cwd=root, root=root)


def test_glob_double_star_skips_ignored_and_heavy(env: Env) -> None:
    assert call(env, "glob", pattern="**/*.py").content.splitlines() == [
        "src/app.py",
        "src/pkg/deep.py",
        "src/util.py",
    ]


def test_glob_single_star_stays_in_one_directory(env: Env) -> None:
    assert call(env, "glob", pattern="*.log").content == "keep.log"
    assert call(env, "glob", pattern="src/*.py").content.splitlines() == [
        "src/app.py",
        "src/util.py",
    ]
    assert call(env, "glob", pattern="*.py", path="src/pkg").content == "src/pkg/deep.py"
    assert call(env, "glob", pattern="*.nothing").content == "No files match '*.nothing'."


def test_grep_respects_gitignore_and_skips_binary(env: Env) -> None:
    lines = call(env, "grep", pattern=r"hel+o").content.splitlines()
    assert lines == [
        "README.md:1: Say hello.",
        "keep.log:1: hello",
        "src/app.py:2:     return 'hello'",
        "src/pkg/deep.py:1: x = 'hello'",
    ]


def test_grep_glob_and_path_filters(env: Env) -> None:
    assert call(env, "grep", pattern="(?i)hello", glob="*.py", path="src").content.splitlines() == [
        "src/app.py:2:     return 'hello'",
        "src/pkg/deep.py:1: x = 'hello'",
        "src/util.py:1: HELLO = 1",
    ]
    assert (
        call(env, "grep", pattern="hello", glob="src/pkg/*.py").content
        == "src/pkg/deep.py:1: x = 'hello'"
    )
    assert (
        call(env, "grep", pattern="main", path="src/app.py").content == "src/app.py:1: def main():"
    )


def test_grep_paths_are_relative_to_cwd(env: Env) -> None:
    sub = Env(cwd=env.root / "src", root=env.root, checkpoints=env.checkpoints)
    assert call(sub, "grep", pattern="HELLO").content == "util.py:1: HELLO = 1"
    assert call(sub, "glob", pattern="**/deep.py").content == "pkg/deep.py"


def test_grep_bad_regex_and_caps(env: Env) -> None:
    bad = call(env, "grep", pattern="(unclosed")
    assert bad.is_error and "not a valid regular expression" in bad.content
    (env.root / "many.txt").write_text("match\n" * 250)
    capped = call(env, "grep", pattern="match", path="many.txt").content.splitlines()
    assert len(capped) == 201
    assert capped[-1] == "[50 more matching lines cut; narrow the pattern, path or glob]"


def test_ls_lists_dirs_files_and_sizes(env: Env) -> None:
    listing = call(env, "ls").content.splitlines()
    assert "src/" in listing and "README.md  (11 B)" in listing and ".gitignore  (23 B)" in listing
    assert call(env, "ls", path="src/pkg").content.splitlines() == [
        ".gitignore  (13 B)",
        "deep.py  (12 B)",
        "generated.py  (10 B)",
    ]
    not_dir = call(env, "ls", path="README.md")
    assert not_dir.is_error and "README.md is not a directory" in not_dir.content


def test_glob_refuses_an_absolute_pattern(env: Env) -> None:
    result = call(env, "glob", pattern=str(env.root / "*.md"))
    assert result.is_error and "is absolute; pass the directory as path" in result.content
