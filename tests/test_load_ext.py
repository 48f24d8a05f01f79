"""`%load_ext larik_jupyter` loads only the magics; the first `%larik` still shows everything."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.agent_helpers import scripted, text
from tests.test_checkpoint_prune import saved_turn

HEAVY = ("anthropic", "openai", "pydantic", "ipywidgets", "anywidget", "mcp")
LOADED = f"import sys\nprint('loaded:', sorted(m for m in {HEAVY!r} if m in sys.modules))"
EAGER = "import larik_jupyter.api, larik_jupyter.frontends.notebook.view, larik_jupyter.frontends.notebook.widgets.session_widget"
# Polls what a user could check by hand: the old snapshot directory disappears on its own.
GONE = (
    "import os, time\n"
    "deadline = time.monotonic() + 30\n"
    "while os.path.exists({path!r}) and time.monotonic() < deadline:\n"
    "    time.sleep(0.05)\n"
    "print('pruned:', not os.path.exists({path!r}))"
)


def run(cells: list[str], workdir: Path) -> list[Any]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    return [cell.outputs for cell in nb.cells]


def shown(outputs: list[Any]) -> list[tuple[str, str]]:
    """What a cell shows, with ids and timings (which differ between runs) blanked."""
    seen = []
    for out in outputs:
        for mime, value in sorted(out.get("data", {}).items()):
            body = value if isinstance(value, str) else nbformat.writes(nbformat.from_dict({"v": value}))
            if "widget-view" in mime:
                body = "widget"
            body = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "ID", body)
            seen.append((mime, re.sub(r"\d+(\.\d+)? ?(ms|s)\b", "T", body)))
        if out.get("name"):
            seen.append((out["name"], out.get("text", "")))
    return seen


@pytest.mark.timeout(240)
def test_load_ext_imports_nothing_heavy_and_the_first_prompt_shows_what_it_did(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = scripted(tmp_path, [text("Hello from the script.")], [text("Hello from the script.")])
    monkeypatch.setenv("LARIK_MODEL", model)
    old = saved_turn(project, "20250101-000000-000001", age_days=30)
    prompt = "%larik say hello"

    lazy = run(["%load_ext larik_jupyter\n" + LOADED, prompt, GONE.format(path=str(old))], project)
    assert "loaded: []" in lazy[0][0]["text"]
    assert "pruned: True" in lazy[2][0]["text"]  # the retention prune ran, in the background

    # The same prompt in a kernel that imported everything up front, as `%load_ext` used to.
    eager = run([EAGER + "\n%load_ext larik_jupyter", prompt], project)
    first = shown(lazy[1])
    assert first == shown(eager[1])
    assert any("Hello from the script." in body for _, body in first)
    # nbclient runs cells headless: a turn shows its transcript only, no Stop or approval area.
    assert not any(body == "widget" for _, body in first)


@pytest.mark.timeout(240)
def test_the_chosen_providers_sdk_is_warmed_and_no_other(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARIK_MODEL", "openai:gpt-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    wait = (
        "import sys, time\n"
        "deadline = time.monotonic() + 60\n"
        "while 'openai' not in sys.modules and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('openai:', 'openai' in sys.modules, 'anthropic:', 'anthropic' in sys.modules)"
    )
    outputs = run(["%load_ext larik_jupyter\n" + LOADED, wait], project)
    assert "loaded: []" in outputs[0][0]["text"]
    assert "openai: True anthropic: False" in outputs[1][0]["text"]


@pytest.mark.timeout(240)
def test_a_failed_prune_is_shown_by_the_next_prompt(
    project: Path, tmp_path: Path, larik_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARIK_MODEL", scripted(tmp_path, [text("Hi.")]))
    larik_dirs["data"].mkdir(parents=True, exist_ok=True)
    (larik_dirs["data"] / "checkpoints").write_text("not a directory")
    finished = "import larik_jupyter.frontends.notebook.extension as ext\next._warmup.thread.join(60)"
    outputs = run(["%load_ext larik_jupyter", finished, "%larik hello"], project)
    notes = [body for _, body in shown(outputs[2])]
    assert any("Could not prune old checkpoints" in body and "checkpoints" in body for body in notes)
    assert any("Hi." in body for body in notes)
