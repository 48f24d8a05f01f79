"""`%larik -o NAME` never replaces a variable it did not bind itself: IPython's and Python's own
names are refused, the user's variables are replaced only with `--replace` (asking first under
protect mode, refused headless), and `/undo` puts back what the name held before."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import done, scripted
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook
from test_notebooks import outputs_text
from widget_helpers import shell_with_magics

from larik_jupyter.frontends.notebook.parser import MagicUsageError, Prompt, parse_magic
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.process_helpers import await_until

MAGICS = "get_ipython().magics_manager.registry['LarikMagics']"


@pytest.mark.parametrize("name", [
    "get_ipython", "In", "Out", "display", "exit", "quit", "_", "__", "___", "_i", "_ii", "_ih", "_oh",
    "_dh", "_7", "_i7",
])
def test_ipython_names_are_refused_in_one_sentence(name: str) -> None:
    with pytest.raises(MagicUsageError) as refused:
        parse_magic(f"-o {name} hi")
    assert str(refused.value) == (
        f"-o {name}: `{name}` is IPython's own name, and binding it would break the notebook; "
        "choose another name, e.g. `-o out`."
    )


@pytest.mark.parametrize(("line", "said"), [
    ("-o list hi", "`list` is a Python builtin, and binding it would hide the builtin"),
    ("-o __name__ hi", "`__name__` is Python's own name"),
    ("-o class hi", "-o takes a Python variable name, and `class` is a Python keyword"),
    ("-o 1x hi", "-o takes a Python variable name to bind the outcome to, e.g. `-o out`; got '1x'."),
    ("-o a.b hi", "got 'a.b'"),
    ("--replace hi", "--replace goes with -o NAME"),
])
def test_other_names_that_cannot_be_bound_are_refused(line: str, said: str) -> None:
    with pytest.raises(MagicUsageError) as refused:
        parse_magic(line)
    assert said in str(refused.value)


def test_replace_parses_on_the_line_and_on_the_cell_magic() -> None:
    assert parse_magic("-o df --replace go") == Prompt(text="go", output="df", replace=True)
    assert parse_magic("--replace -o df", "go\n") == Prompt(text="go", output="df", replace=True)


def _client(project: Path, cells: list[str]) -> NotebookClient:
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    return NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True,
                          resources={"metadata": {"path": str(project)}})


@pytest.mark.timeout(240)
def test_in_a_kernel_o_never_replaces_unasked_and_undo_puts_the_binding_back(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, done("First."), done("Third."), done("Fifth."))
    cells = [
        "%load_ext larik_jupyter",
        "data = [1, 2, 3]",
        "%larik -o get_ipython --yes hi",  # 2: refused, nothing sent
        f"%larik -o out --model {model} --yes first",  # 3: later cells keep working
        "print(type(get_ipython).__name__, out.text)",
        "%larik -o data --yes second",  # 5: the user's variable, no --replace
        "print(data)",
        "%larik -o out --yes third",  # 7: -o's own binding: replaced
        f"{MAGICS}.protect = True",
        "%larik -o data --replace --yes fourth",  # 9: protect mode asks; headless nobody answers
        "print(data)",
        f"{MAGICS}.protect = False",
        "%larik -o data --replace --yes fifth",  # 12: said explicitly
        "print(type(data).__name__, data.text)",
        "%larik /undo",  # 14
        "print(data)",
        "%larik /undo",  # 16: the turn that rebound `out`
        "print(out.text)",
    ]
    nbc = _client(project, cells)
    with nbc.setup_kernel():
        for index, cell in enumerate(nbc.nb.cells):
            nbc.execute_cell(cell, index)
    texts = [outputs_text(cell) for cell in nbc.nb.cells]
    assert "UsageError: -o get_ipython: `get_ipython` is IPython's own name" in texts[2]
    assert "method First." in texts[4]
    assert (
        "UsageError: -o data would replace your variable `data` (list, len 3), which -o did not bind; "
        "choose another name, or add --replace to replace it (/undo puts it back)."
    ) in texts[5]
    assert "[1, 2, 3]" in texts[6]
    assert "Third." in texts[7] and "UsageError" not in texts[7]
    assert "protect mode asks before replacing your variable `data` and nobody can answer in this run" in texts[9]
    assert "[1, 2, 3]" in texts[10]
    assert "TurnOutcome Fifth." in texts[13]
    assert "restored variables: data" in texts[14]
    assert "[1, 2, 3]" in texts[15]
    assert "restored variables: out" in texts[16]
    assert "First." in texts[17]
    # Refused before the turn: the prompts of cells 2, 5 and 9 never reached the session.
    [path] = Path(os.environ["LARIK_DATA_DIR"]).glob("sessions/*/*.jsonl")
    state = replay(load_entries(path).entries)
    prompts = [state.all[i].content[-1].text for i in state.prompt_positions]  # type: ignore[union-attr]
    assert prompts == ["first", "third", "fifth"]


def _cards() -> list[Any]:
    from ipywidgets.widgets.widget import _instances

    from larik_jupyter.frontends.notebook.widgets.approval import ApprovalWidget

    return [w for w in list(_instances.values()) if isinstance(w, ApprovalWidget) and w.answer is None and not w.cancelled]


@pytest.mark.parametrize("click", ["allow", "deny"])
def test_under_protect_mode_replace_asks_through_the_approval_card(project: Path, tmp_path: Path, click: str) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done("Bound.")))
    magics.protect = True
    magics.interactive = True
    shell.user_ns["df"] = [1, 2, 3]

    earlier = {id(w) for w in _cards()}  # cards other tests of this process left unanswered

    def new_cards() -> list[Any]:
        return [w for w in _cards() if id(w) not in earlier]

    async def run() -> None:
        task = asyncio.ensure_future(magics.run_async("-o df --replace summarise", None))
        await await_until(lambda: new_cards() or task.done(), "the turn to show its approval card")
        assert not task.done(), task.exception()
        [card] = new_cards()
        assert card.request.summary == "-o df: replace your variable `df` (list, len 3) with this turn's outcome"
        (card.allow_button if click == "allow" else card.deny_button).click()
        await task

    if click == "allow":
        asyncio.run(run())
        assert type(shell.user_ns["df"]).__name__ == "TurnOutcome" and shell.user_ns["df"].text == "Bound."
        shell.run_line_magic("larik", "/undo")
        assert shell.user_ns["df"] == [1, 2, 3]
    else:
        from IPython.core.error import UsageError

        with pytest.raises(UsageError, match="-o df --replace was denied, so `df` was left as it is"):
            asyncio.run(run())
        assert shell.user_ns["df"] == [1, 2, 3]
    magics.kernel.close()
