from __future__ import annotations

import re

import pytest

from larik_jupyter.frontends.notebook.commands import COMMANDS, help_text
from larik_jupyter.frontends.notebook.parser import Command, MagicUsageError, Prompt, parse_magic


def test_plain_text_is_a_prompt_kept_verbatim() -> None:
    parsed = parse_magic("fix {x} and $y in f'{a}'")
    assert parsed == Prompt(text="fix {x} and $y in f'{a}'")


def test_line_options_before_the_prompt() -> None:
    parsed = parse_magic("--model openai:gpt-5 --yes --new explain this")
    assert parsed == Prompt(text="explain this", model="openai:gpt-5", yes=True, new=True)


def test_cell_magic_options_on_first_line_body_is_prompt() -> None:
    body = "line one\n    indented {code}\n"
    parsed = parse_magic("--expand --model scripted:demo", body)
    assert parsed == Prompt(text=body.strip(), model="scripted:demo", expand=True)


def test_commands_and_their_arguments() -> None:
    keep = {"force": False, "skip_changed": False}
    undo_keep = {**keep, "session": None}
    assert parse_magic("/rewind 2") == Command("rewind", {"prompt_number": 2, "files": False, **keep})
    assert parse_magic("/resume --last") == Command("resume", {"id": None, "last": True})
    assert parse_magic("/new --model anthropic:claude-sonnet-4-5") == Command(
        "new", {"model": "anthropic:claude-sonnet-4-5"}
    )
    assert parse_magic("/compact keep the test names") == Command(
        "compact", {"instructions": "keep the test names"}
    )
    assert parse_magic("/config model openai:gpt-5") == Command(
        "config", {"key": "model", "value": "openai:gpt-5"}
    )
    assert parse_magic("", "/undo") == Command("undo", {"prompt_number": None, **undo_keep})
    assert parse_magic("/undo", "") == Command("undo", {"prompt_number": None, **undo_keep})
    assert parse_magic("/undo --to 2") == Command("undo", {"prompt_number": 2, **undo_keep})
    assert parse_magic("/rewind 2 --files") == Command("rewind", {"prompt_number": 2, "files": True, **keep})
    assert parse_magic("/undo --force") == Command("undo", {"prompt_number": None, "force": True, "skip_changed": False, "session": None})
    assert parse_magic("/rewind 2 --files --skip-changed") == Command(
        "rewind", {"prompt_number": 2, "files": True, "force": False, "skip_changed": True}
    )


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("/rewind", "Usage: /rewind N"),
        ("/rewind two", "Usage: /rewind N"),
        ("/rewind 0", "numbered from 1"),
        ("/rewind 0 --files", "numbered from 1"),
        ("/undo --to 0", "numbered from 1"),
        ("/undo --to two", "Usage: /undo [--to N]"),
        ("/frobnicate", "Unknown command /frobnicate"),
        ("/resume abc --last", "not both"),
        ("/delete", "Usage: /delete ID"),
        ("", "Nothing to send"),
        ("--model", "needs a value"),
        ("--bogus hello", "unrecognized arguments"),
    ],
)
def test_bad_arguments_give_one_clear_line(line: str, needle: str) -> None:
    with pytest.raises(MagicUsageError) as info:
        parse_magic(line)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_help_lists_every_command() -> None:
    text = help_text()
    for name in COMMANDS:
        assert f"/{name}" in text


def test_with_and_no_context_options() -> None:
    parsed = parse_magic("--with df,fig --with data.csv --no-context fix it")
    assert parsed == Prompt(text="fix it", context=False, attach=("df", "fig", "data.csv"))
    cell = parse_magic("--with df --yes", "fix\nthis")
    assert cell == Prompt(text="fix\nthis", yes=True, attach=("df",))
    assert parse_magic("plain prompt") == Prompt(text="plain prompt")
    with pytest.raises(MagicUsageError, match="--with needs a value"):
        parse_magic("--with")
def test_help_rows_are_aligned() -> None:
    rows = [r for r in help_text().splitlines() if r.startswith("%larik ")]
    columns = {re.search(r"\S {2,}(\S)", r).start(1) for r in rows}  # type: ignore[union-attr]
    assert len(columns) == 1, rows
