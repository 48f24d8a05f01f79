from __future__ import annotations

from pathlib import Path

from larik_jupyter import paths
from larik_jupyter.config.instructions import MAX_BYTES, load_instructions
from larik_jupyter.config.layers import load_config


def make_tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    deep = root / "pkg" / "mod"
    (root / ".git").mkdir(parents=True)
    deep.mkdir(parents=True)
    (root / "other").mkdir()
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    (paths.config_dir() / "AGENTS.md").write_text("personal rules\n")
    (root / "AGENTS.md").write_text("root agents\n")
    (root / "CLAUDE.md").write_text("root claude, shadowed\n")
    (root / "pkg" / "CLAUDE.md").write_text("pkg claude\n")
    (deep / "AGENTS.md").write_text("mod agents\n")
    (deep / "CLAUDE.md").write_text("mod claude, shadowed\n")
    (root / "other" / "AGENTS.md").write_text("not on the path\n")
    return root, deep


def test_general_first_then_root_down_to_cwd(tmp_path: Path) -> None:
    root, deep = make_tree(tmp_path)
    loaded = load_instructions(deep)
    assert [text.strip() for _, text in loaded.files] == [
        "personal rules",
        "root agents",
        "pkg claude",
        "mod agents",
    ]
    sources = [source for source, _ in loaded.files]
    assert sources[1:] == ["AGENTS.md", "pkg/CLAUDE.md", "pkg/mod/AGENTS.md"]
    assert sources[0].endswith("AGENTS.md")
    assert loaded.notices == []


def test_render_wraps_each_file_in_an_instructions_tag(tmp_path: Path) -> None:
    root, deep = make_tree(tmp_path)
    rendered = load_instructions(root / "pkg").render()
    blocks = rendered.split("\n\n")
    assert blocks[1] == '<instructions source="AGENTS.md">\nroot agents\n</instructions>'
    assert blocks[2] == '<instructions source="pkg/CLAUDE.md">\npkg claude\n</instructions>'
    assert len(blocks) == 3
    assert load_config(root / "pkg").instructions == rendered


def test_no_files_means_no_instructions(tmp_path: Path) -> None:
    loaded = load_instructions(tmp_path)
    assert loaded.files == [] and loaded.notices == [] and loaded.render() == ""


def test_huge_file_is_capped_and_reported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    # A multi-byte character straddles the cap: it must be dropped, not mangled.
    (tmp_path / "AGENTS.md").write_bytes(b"a" * (MAX_BYTES - 1) + "é".encode() + b"tail" * 100)
    loaded = load_instructions(tmp_path)
    [(source, text)] = loaded.files
    assert text.startswith("a" * (MAX_BYTES - 1) + "\n[…")
    assert "\ufffd" not in text
    assert "AGENTS.md truncated: the remaining" in text
    [notice] = loaded.notices
    assert f"only its first {MAX_BYTES} bytes are used" in notice and str(tmp_path / "AGENTS.md") in notice


def test_undecodable_file_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"rules \xff\xfe here")
    loaded = load_instructions(tmp_path)
    assert loaded.files[0].text == "rules \ufffd\ufffd here"
    assert "not valid UTF-8" in loaded.notices[0]


def test_unreadable_file_is_reported_and_skipped(tmp_path: Path) -> None:
    # Reading /proc/self/mem at offset 0 fails with EIO even for root, unlike chmod 000.
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").symlink_to("/proc/self/mem")
    (tmp_path / "pkg" / "AGENTS.md").write_text("pkg rules\n")
    loaded = load_instructions(tmp_path / "pkg")
    assert [s for s, _ in loaded.files] == ["pkg/AGENTS.md"]
    [notice] = loaded.notices
    assert notice.startswith(f"Instruction file {tmp_path / 'AGENTS.md'} could not be read")
    assert "skipped" in notice


def test_agents_md_that_is_not_a_file_falls_back_to_claude_md(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").mkdir()
    (tmp_path / "CLAUDE.md").write_text("claude\n")
    assert [s for s, _ in load_instructions(tmp_path).files] == ["CLAUDE.md"]
