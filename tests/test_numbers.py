"""Numbers in replies traced to what the model was shown or given: only a number nothing
supports is marked, the same in the live view, the terminal, `/history`, the export and the
server's transcript pages (tests/test_server.py)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.agent.events import Listener
from larik_jupyter.agent.textlog import TextLog
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import parts_from_entries, render_parts
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.numbers import HINT, claims, spread, trace, trace_entries
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, scripted, tool

CODE = "print(12335 / 7)"  # 1762.142857…
REPLY = "The mean is 1762.1 per row, and about 4,321 rows were dropped."
UNFOUND = re.compile(r'<span class="larik-unfound"[^>]*title="' + HINT + r'">([^<]*)</span>')


def said(text: str) -> list[str]:
    return [c.text for c in claims(text)]


def test_what_counts_as_a_number() -> None:
    text = (
        "Mean 12.3, total 7,777 (45% missing, 12 % kept) and 1000×5 cells.\n"
        "1. first\n12. twelfth\n"
        "See cell 12, prompt 3, In [14]; released 2024-03-05, in March 2024, on 5 March 2023, "
        "in 2019, at 12:30; python 3.11.2; `df.iloc[:100]`; x86_64 float64 cell-12 df2; "
        "[link](https://e.org/99); 7 items; in Q3 2024, FY2023 and 2024-H1; row 42."
    )
    assert said(text) == ["12.3", "7,777", "45%", "12 %", "1000", "5", "7"]
    assert said("$3,900, €3,900, £12, ¥500, 1.5 million, 45k, 3.4e5, 2.1B, -4.2%, −3.5, -3") == [
        "$3,900", "€3,900", "£12", "¥500", "1.5 million", "45k", "3.4e5", "2.1B", "-4.2%", "−3.5", "-3",
    ]


def test_rounding_percentages_and_separators_are_allowed() -> None:
    out = "mean 12.345\nshare 0.4512\ncount 7777\nbig 1,234,567\nratio 3.0e-01"
    reply = "12.3, 12.35, 45%, 45.1%, 7,777, 1,234,567, 30%, 12.4 and 0.45123"
    (unfound,) = trace([reply], [out]).unfound
    assert [c.text for c in unfound] == ["12.4", "0.45123"]


DESCRIBE = """\
           price
count  200.000000
mean    48.600000
std     12.100000
min      3.000000
25%     40.000000
50%     47.000000
75%     58.000000
max     99.000000"""
COLUMNS = """\
     10    20
a   1.5   2.5
b   3.5   4.5"""
ADDRESS = "<Model object at 0x7f3a12c4d0>"
SIGNED = """\
      x     y
a  1.00 -0.35
b -0.42  0.50"""
BY_YEAR = """\
      sales
year
2021  31.50
2022  47.25"""


@dataclass(frozen=True)
class Case:
    """A turn: the prompt, one `python` call (its code and output), the reply; `earlier` an
    earlier turn's output, `compacted` a compaction between the two; `unfound` what is marked."""

    reply: str
    output: str = ""
    prompt: str = "Go on."
    code: str = "pass"
    earlier: str = ""
    compacted: bool = False
    unfound: frozenset[str] = frozenset()


def case(reply: str, *unfound: str, **sources: str | bool) -> Case:
    return Case(reply, unfound=frozenset(unfound), **sources)  # type: ignore[arg-type]


# Each case of issue 39 both ways: a supported number found, a made-up one marked.
CASES = {
    "typed in the prompt": case("It fits your 3,900 budget.", prompt="My budget is 3900."),
    "not typed in the prompt": case("It fits your 4,100 budget.", "4,100", prompt="My budget is 3900."),
    "only in the code": case("17 rows cost more than 250.", code="print((df.price > 250).sum())", output="17"),
    "not in the code": case("17 rows cost more than 260.", "260", code="print((df.price > 250).sum())", output="17"),
    "a fraction for a percentage": case("A share of 0.25.", output="share: 25.0%"),
    "a wrong fraction for a percentage": case("A share of 0.27.", "0.27", output="share: 25.0%"),
    "a percentage for a fraction": case("25% of rows.", output="0.25"),
    "a wrong percentage for a fraction": case("35% of rows.", "35%", output="0.25"),
    "million": case("1.5 million rows.", output="1.5e+06"),
    "a wrong million": case("2.5 million rows.", "2.5 million", output="1.5e+06"),
    "billion": case("Revenue was 2.1 billion.", output="2134000000"),
    "a wrong billion": case("Revenue was 2.4 billion.", "2.4 billion", output="2134000000"),
    "a period": case("In Q3 2024 revenue was 812.", output="812"),
    "a wrong number in a period": case("In Q3 2024 revenue was 815.", "815", output="812"),
    "an earlier turn's output": case("The mean is still 48.6.", earlier="mean 48.6"),
    "not an earlier turn's output": case("The mean is still 49.6.", "49.6", earlier="mean 48.6"),
    "an earlier output compacted away": case("The mean is still 48.6.", "48.6", earlier="mean 48.6", compacted=True),
    "a leading currency sign": case("It costs $3,900, €3,900, £3,900 or ¥3,900.", output="total 3900"),
    "a made-up price": case("It costs $3,950, €3,950, £3,950 or ¥3,950.", "$3,950", "€3,950", "£3,950", "¥3,950", output="total 3900"),
    "a whole grouped number": case("12,000 rows.", output="12,000 rows"),
    "a piece of a grouped number": case("12 rows.", "12", output="12,000 rows"),
    "a whole number": case("120 rows.", output="120"),
    "a piece of a longer number": case("12 rows.", "12", output="120"),
    "scientific notation": case("About 3.4e5 rows.", output="340000"),
    "wrong scientific notation": case("About 3.4e5 rows.", "3.4e5", output="350000"),
    "thousands": case("About 45k rows.", output="45,120"),
    "wrong thousands": case("About 45k rows.", "45k", output="52,000"),
    "a fall shown negative": case("Sales fell 4.2%.", output="change: -4.2%"),
    "a rise shown negative": case("Sales grew 4.2%.", "4.2%", output="change: -4.2%"),
    "a rise": case("Sales grew 4.2%.", output="change: 4.2%"),
    "a negative shown positive": case("The change was -4.2%.", "-4.2%", output="change: 4.2%"),
    "a size either way": case("A difference of 4.2 points.", output="diff -4.2"),
    "a number beside an address": case("It scored 12.", output=f"score 12\n{ADDRESS}"),
    "a number only in an address": case("It scored 12.", "12", output=ADDRESS),
    "the median of describe()": case("The median is 47.", output=DESCRIBE),
    "describe()'s 50% label": case("The median is 50.", "50", output=DESCRIBE),
    "a quantile named by describe()'s label": case("75% of prices are below 58.", output=DESCRIBE),
    "a quantile describe() does not show": case("90% of prices are below 58.", "90%", output=DESCRIBE),
    "a printed table's value": case("The value is 1.5.", output=COLUMNS),
    "a printed table's column label": case("The value is 20.", "20", output=COLUMNS),
    "a negative value beside a row label": case("Row b's x is -0.42.", output=SIGNED),
    "a made-up negative value": case("Row b's x is -0.45.", "-0.45", output=SIGNED),
    "a year that labels a row": case("2022 had the most sales (47.25).", output=BY_YEAR),
    "a made-up value in a year's row": case("2022 had the most sales (48.25).", "48.25", output=BY_YEAR),
    "rounded as shown": case("The mean is 12.3.", output="12.345"),
    "rounded wrongly": case("The mean is 12.4.", "12.4", output="12.345"),
    "about, to its last non-zero digit": case("About 12,000 rows.", output="12,034"),
    # Issue 53: the misses, each with its twin.
    "a single digit shown": case("We found 7 outliers.", output="outliers: 7"),
    "a single digit made up": case("We found 7 outliers.", "7", output="outliers: none"),
    "a single digit with a currency sign made up": case("It costs $7, or 7 a unit.", "$7", "7", output="price 9"),
    "a number after index shown": case("The peak is at index 47.", output="peak at 47"),
    "a number after index made up": case("The peak is at index 47.", "47", output="peak at 52"),
    "an output block of the reply": case("It printed:\n```\ntotal 1000\n```", output="total 1000"),
    "a made-up output block of the reply": case("It printed:\n```\ntotal 998\n```", "998", output="total 1000"),
    "a code block of the reply is code": case("Run:\n```python\nx = 998\n```", output="total 1000"),
    "a piece of a bigger number in the notebook context": case(
        "12 rows were dropped.", "12",
        prompt="<notebook-context>\nCells run in this kernel, oldest first (execution count, cell id, first lines):\n"
               "[12] id c1: df = load()\n</notebook-context>\nGo on.", output="3120"),
    "millions counted as such": case("Revenue was 10 million.", output="revenue 10"),
    "millions made up": case("Revenue was 11 million.", "11 million", output="revenue 10"),
    "exact, to its last digit": case("Exactly 12,000 rows.", "12,000", output="12,034"),
}


def turn(case: Case, call: str) -> list[Message]:
    use = ToolUseBlock(id=call, name="python", input={"code": case.code})
    return [
        user_text(case.prompt),
        Message(role="assistant", content=[use]),
        Message(role="user", content=[ToolResultBlock(tool_use_id=call, content=case.output)]),
        Message(role="assistant", content=[TextBlock(text=case.reply)]),
    ]


@pytest.mark.parametrize("name", list(CASES))
def test_what_counts_as_found(name: str) -> None:
    case = CASES[name]
    messages = turn(Case("Done.", output=case.earlier), "c1") if case.earlier else []
    entries = [Entry(type="message", message=m) for m in messages]
    if case.compacted:
        entries.append(Entry(type="compaction", summary="The mean was computed."))
    entries += [Entry(type="message", message=m) for m in turn(case, "c2")]
    _, turns = trace_entries(enumerate(entries))
    assert {text for traced in turns.values() for text in traced.texts()} == case.unfound


def marked(shown: str) -> list[str]:
    return UNFOUND.findall(shown)


def export_of(path: Path) -> str:
    """The session's Markdown export."""
    return render_markdown(path, load_entries(path).entries, redactor=redactor_for(None))


# A session whose second turn leans on the first's output, cleared before the third.
PROMPTS = ["My budget is 3900. What is the mean?", "And above the threshold?", "And again?"]
REPLIES = [
    "The mean is 1762.1, inside your $3,900 budget; about 4,321 rows were dropped.",
    "17 rows lie above 250; the mean is still 1762.1 and 555 are outliers.",
    "Printed 17; the mean was 1762.1.",
]
MARKED = [["4,321"], ["555"], ["1762.1"]]


def numbers_session(project: Path, tmp_path: Path, listeners: Sequence[Listener] = ()) -> Path:
    """Run the three turns, each heard by its listener of `listeners`; return the session's path."""
    model = scripted(
        tmp_path,
        [tool("python", code=CODE)], done(REPLIES[0]),
        [tool("python", code="threshold = 250\nprint(17)")], done(REPLIES[1]),
        [tool("python", code="print(17)")], done(REPLIES[2]),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    turn = [0]
    if listeners:
        agent.subscribe(lambda event: listeners[turn[0]](event))
    for n, prompt in enumerate(PROMPTS):
        if n == 2:
            agent.clear()
        turn[0] = n
        agent.run(prompt)
    path = agent.session_path
    agent.close()
    return path


def test_the_live_view_terminal_history_and_export_mark_the_same_numbers(project: Path, tmp_path: Path) -> None:
    views, out = [TranscriptView() for _ in PROMPTS], io.StringIO()
    log = TextLog(out)

    def both(view: TranscriptView) -> Listener:
        return lambda event: (view.handle(event), log(event)) and None

    path = numbers_session(project, tmp_path, [both(view) for view in views])
    history, exported = render_parts(parts_from_entries(load_entries(path).entries)), export_of(path)
    for view, numbers in zip(views, MARKED, strict=True):
        assert marked(view.markdown()) == numbers
        assert "1 number not found in this turn's outputs" in view.markdown()
    flat = [n for numbers in MARKED for n in numbers]
    assert marked(history) == marked(exported) == flat
    assert history.count("1 number not found in this turn's outputs") == 3
    lines = [line for line in out.getvalue().splitlines() if line.startswith("? ")]
    assert lines == [f"? 1 number not found in this turn's outputs: {numbers[0]}" for numbers in MARKED]


def test_the_live_view_marks_replies_it_streamed_into_one_part() -> None:
    # Two replies streamed into one text part, a part no reply starts (another agent's text),
    # then a reply of its own: each unfound number lands where the part shows it.
    traced = trace(["Kept 4,321. ", "Dropped 555.", "Left 777."], ["nothing"])
    parts = ["Kept 4,321. Dropped 555.", "Elsewhere 98765.", "Left 777."]
    found = spread(parts, traced)
    assert [[part[c.start:c.end] for c in claims_] for part, claims_ in zip(parts, found, strict=True)] == [
        ["4,321", "555"], [], ["777"],
    ]


def test_while_the_turn_runs_nothing_is_marked(project: Path, tmp_path: Path) -> None:
    view = TranscriptView()
    agent = Agent(project, model=scripted(tmp_path, done("Invented: 98765.")), yes=True)
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(view.markdown()))
    agent.subscribe(view.handle)
    agent.run("go")
    agent.close()
    assert not any("larik-unfound" in text for text in seen[:-1])
    assert UNFOUND.findall(view.markdown()) == ["98765"]


@pytest.mark.timeout(240)
def test_in_a_kernel_the_cell_history_and_export_mark_only_the_invented_number(
    project: Path, tmp_path: Path
) -> None:
    from tests.test_notebook_kernel_undo import client, run_cells

    model = scripted(tmp_path, [tool("python", code=CODE)], done(REPLY))
    nbc = client(project, [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes what is the mean?",
        "%larik /history",
        "%larik /export out.md",
    ])
    with nbc.setup_kernel():
        run_cells(nbc)
    cell, history = (
        "".join(out.get("data", {}).get("text/markdown", "") for out in nbc.nb.cells[i].outputs) for i in (1, 2)
    )
    exported = (project / "out.md").read_text()
    for shown in (cell, history, exported):
        assert UNFOUND.findall(shown) == ["4,321"]
        assert "1 number not found in this turn's outputs" in shown


def test_numbers_past_what_a_float_holds_are_left_alone() -> None:
    # A session id's `00e419`, a reply's `1e400`, a 400-digit integer: no OverflowError.
    huge = "9" * 400
    output = f"Transcript: 20261204-134937-00e419-agents, total 1e999, {huge}, 42.5"
    (unfound,) = trace(["The total was 42.5; 1e400 and " + huge + " too."], [output]).unfound
    assert "42.5" not in [c.text for c in unfound]
