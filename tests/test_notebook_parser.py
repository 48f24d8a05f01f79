from __future__ import annotations

import re

import pytest

from larik_jupyter.notebook.parser import (
    COMMANDS,
    Command,
    MagicUsageError,
    Prompt,
    help_text,
    parse_magic,
)


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
    assert parse_magic("/rewind 2") == Command("rewind", {"n": 2})
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
    assert parse_magic("", "/undo") == Command("undo", {})
    assert parse_magic("/undo", "") == Command("undo", {})


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("/rewind", "Usage: /rewind N"),
        ("/rewind two", "Usage: /rewind N"),
        ("/rewind 0", "numbered from 1"),
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


def test_help_rows_are_aligned() -> None:
    rows = [r for r in help_text().splitlines() if r.startswith("%larik ")]
    columns = {re.search(r"\S {2,}(\S)", r).start(1) for r in rows}  # type: ignore[union-attr]
    assert len(columns) == 1, rows
