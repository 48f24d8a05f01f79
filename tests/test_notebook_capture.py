"""Kernel-truth capture and the notebook context on a real IPython shell: what ran, errors
without ANSI codes, displays and images, the bounds, the context block, the nonce, `--with`."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.frontends.notebook.capture import (
    IMAGE_CELLS,
    MAX_BYTES,
    MAX_CELLS,
    KernelCapture,
)
from larik_jupyter.frontends.notebook.context import notebook_context, notebook_from_hints
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import done, scripted
from tests.widget_helpers import larik, shell_with_magics

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 100).decode()
SHOW_PNG = f"from IPython.display import display\ndisplay({{'image/png': {PNG!r}, 'text/plain': 'img'}}, raw=True)"


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    yield shell


@pytest.fixture
def capture(shell: InteractiveShell) -> Iterator[KernelCapture]:
    capture = KernelCapture(shell)
    capture.start()
    yield capture
    capture.stop()


def run(shell: InteractiveShell, code: str) -> None:
    shell.run_cell(code, store_history=True)


def test_records_source_result_error_and_displays(shell: InteractiveShell, capture: KernelCapture) -> None:
    run(shell, "a = 40 + 2\na")
    run(shell, SHOW_PNG)
    run(shell, "def f():\n    return 1/0\nf()")
    run(shell, "1 +")
    ok, shown, failed, syntax = list(capture.cells)[-4:]
    assert ok.source == "a = 40 + 2\na" and ok.result == "42" and ok.error is None
    assert ok.execution_count is not None and failed.execution_count == ok.execution_count + 2
    assert shown.displayed == ["image/png, text/plain"] and shown.images == [("image/png", PNG)]
    assert failed.error is not None and failed.error.name == "ZeroDivisionError"
    assert "return 1/0" in failed.error.traceback and "\x1b[" not in failed.error.traceback
    assert syntax.error is not None and syntax.error.name == "SyntaxError"


def test_stop_unhooks_everything(shell: InteractiveShell) -> None:
    capture = KernelCapture(shell)
    publish = shell.display_pub.publish
    capture.start()
    capture.stop()
    run(shell, "1")
    assert not capture.cells and shell.display_pub.publish == publish
    assert "publish" not in vars(shell.display_pub)


def test_bounded_by_cells_bytes_and_images(shell: InteractiveShell, capture: KernelCapture) -> None:
    assert (MAX_CELLS, MAX_BYTES) == (50, 20 * 1024 * 1024)
    for i in range(MAX_CELLS + 10):
        run(shell, f"n = {i}")
    assert len(capture.cells) == MAX_CELLS and capture.cells[0].source == "n = 10"
    for _ in range(IMAGE_CELLS + 2):
        run(shell, SHOW_PNG)
    with_images = [c for c in capture.cells if c.images]
    assert len(with_images) == IMAGE_CELLS and capture.cells[-1].images
    assert capture.bytes == sum(c.size for c in capture.cells)
    small = KernelCapture(shell, max_bytes=1000)
    small.start()
    try:
        for i in range(5):
            run(shell, f"s = '{i}{'x' * 300}'")
        assert small.bytes <= 1000 and [c.source[5] for c in small.cells] == ["2", "3", "4"]
    finally:
        small.stop()


def test_kernel_notebook_from_front_end_hints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").write_text("{}")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_from_hints({}, tmp_path).path is None
    assert notebook_from_hints({"__session__": "sub/a.ipynb"}, tmp_path).path == (tmp_path / "a.ipynb").resolve()
    vsc = notebook_from_hints({"__vsc_ipynb_file__": str(tmp_path / "b.ipynb")}, tmp_path)
    assert (vsc.path, vsc.source) == ((tmp_path / "b.ipynb").resolve(), "__vsc_ipynb_file__")
    monkeypatch.setenv("JPY_SESSION_NAME", "b.ipynb")
    assert notebook_from_hints({}, tmp_path).source == "JPY_SESSION_NAME"
    monkeypatch.setenv("JPY_SESSION_NAME", "gone.ipynb")
    assert notebook_from_hints({}, tmp_path).path is None


def test_context_names_unknown_notebook_and_error_only_once(shell: InteractiveShell, capture: KernelCapture, tmp_path: Path) -> None:
    run(shell, "1/0")
    count = capture.last_count
    unknown = notebook_from_hints({}, tmp_path)
    text = notebook_context(capture, unknown, since=0, nonce="abc123", cwd=tmp_path)
    assert text.startswith("<notebook-context>") and "Notebook: unknown" in text
    assert f"[{count}]: 1/0  → raised ZeroDivisionError" in text
    assert '<notebook-data nonce="abc123" source="cell [' in text and '</notebook-data nonce="abc123">' in text
    later = notebook_context(capture, unknown, since=count, nonce="def456", cwd=tmp_path)
    assert "raised ZeroDivisionError" in later and "Last error" not in later


def session_prompt(magics_agent_path: Path) -> list[dict[str, object]]:
    messages = replay(load_entries(magics_agent_path).entries).all
    return [m.to_json() for m in messages if m.is_prompt()]


def test_magics_send_context_unless_turned_off(project: Path, shell: InteractiveShell) -> None:
    model = scripted(project.parent, done(), done(), done())
    shell, magics = shell_with_magics(project, model)
    magics.capture = KernelCapture(shell)
    magics.capture.start()
    try:
        run(shell, "x = 1/0")
        larik(shell, "why did it fail?")
        larik(shell, "--no-context again")
        magics.context = False
        larik(shell, "and now?")
    finally:
        magics.capture.stop()
    assert magics.agent is not None
    prompts = session_prompt(magics.agent.session_path)
    first, second, third = prompts[-3:]
    texts = [b["text"] for b in first["content"] if b["type"] == "text"]  # type: ignore[index, union-attr]
    assert texts[-1] == "why did it fail?" and "ZeroDivisionError" in texts[0]
    nonce = re.search(r'nonce="([0-9a-f]+)"', texts[0])
    assert nonce is not None and texts[0].count(nonce.group(1)) == 2
    assert second["content"] == [{"type": "text", "text": "again"}]
    assert third["content"] == [{"type": "text", "text": "and now?"}]
    history = magics.agent.session_path.read_text()
    assert "<notebook-context>" in history


def test_with_attaches_a_dataframe_a_figure_and_a_file(project: Path, shell: InteractiveShell) -> None:
    import matplotlib

    matplotlib.use("Agg")
    model = scripted(project.parent, done())
    shell, magics = shell_with_magics(project, model)
    (project / "notes.txt").write_text("line one\nline two\n")
    run(shell, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})")
    run(shell, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n_ = ax.plot([1, 2])")
    try:
        larik(shell, "--with df,fig,notes.txt --no-context describe these")
    finally:
        run(shell, "plt.close('all')")
    assert magics.agent is not None
    prompt = session_prompt(magics.agent.session_path)[-1]
    meta = prompt["attachments"]
    assert [(a["name"], a["kind"]) for a in meta] == [("df", "variable"), ("fig", "figure"), ("notes.txt", "file")]  # type: ignore[index, union-attr]
    assert all(len(a["sha256"]) == 64 and a["size"] > 0 for a in meta)  # type: ignore[index, union-attr]
    assert meta[2]["size"] == len("line one\nline two\n")  # type: ignore[index]
    blocks = prompt["content"]
    assert blocks[0] == {"type": "text", "text": "describe these"}  # type: ignore[index]
    kinds = [b["type"] for b in blocks]  # type: ignore[union-attr]
    assert kinds == ["text", "text", "text", "image", "text"]
    frame = blocks[1]["text"]  # type: ignore[index]
    assert "pandas.DataFrame, shape 3×2" in frame and "columns [a: int64" in frame and "First 5 rows" in frame
    assert blocks[3]["source"]["media_type"] == "image/png"  # type: ignore[index]
    assert "line two" in blocks[4]["text"]  # type: ignore[index]
    assert all(b["text"].startswith("<notebook-data nonce=") for b in blocks[1:] if b["type"] == "text")  # type: ignore[index]
    assert json.dumps(meta)


def test_with_an_unknown_name_is_a_usage_error(project: Path, shell: InteractiveShell) -> None:
    shell, magics = shell_with_magics(project, scripted(project.parent, done()))
    with pytest.raises(UsageError, match="--with nope: no variable of that name in the kernel and no file"):
        shell.run_line_magic("larik", "--with nope look")
    with pytest.raises(UsageError, match="one was empty"):
        shell.run_line_magic("larik", "--with a,,b look")
