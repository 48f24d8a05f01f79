"""`never` means nothing: a `never` text, JSON and log file read by `read`, `bash cat`, `python
open()` (by a literal path and a computed one) and `--with` sends none of its content, names in
free text included, against the wire fake; and the value search finds re-renderings of a
restricted value (upper case, scientific notation, digits in groups). Each with its made-false
twin: without the rule the canaries go."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from larik_jupyter import Agent
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, personal, scripted, tool, wire_model
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-egress-never"
# Names in free text: no digit, no `@`, no column: nothing the value search called distinctive.
NAMES = ["Marguerite Okonkwo", "Thaddeus Villanueva", "Ingrid Castellanos"]
FILES = {
    "secret/notes.txt": "Call notes\n" + "".join(f"Spoke with {n} about the renewal.\n" for n in NAMES),
    "secret/people.json": json.dumps([{"name": n, "note": "renewal pending"} for n in NAMES], indent=1),
    "secret/app.log": "".join(f"INFO session opened for {n}\n" for n in NAMES),
}


def _steps() -> list[Any]:
    steps: list[Any] = []
    for rel in FILES:
        steps += [
            [tool("read", path=rel)],
            [tool("bash", command=f"cat {rel}")],
            [tool("python", code=f"print(open({rel!r}).read())")],
            # A path the code computes: no literal names the file, the search finds its lines.
            [tool("python", code=f"print(open('sec' + {rel.removeprefix('sec')!r}).read())")],
        ]
    return [{"content": s} for s in [*steps, done("ok"), done("ok")]]


def _run(project: Path, monkeypatch: pytest.MonkeyPatch, *, rule: bool, wire: str) -> str:
    (project / "secret").mkdir()
    for rel, text in FILES.items():
        (project / rel).write_text(text)
    personal({"egress": {"policies": {"secret/*": "never"}}} if rule else {})
    with ScriptedHTTPServer(_steps(), api_key=KEY) as server:
        model = wire_model(wire, server, KEY, monkeypatch)
        shell, _ = shell_with_magics(project, model)
        larik(shell, "--no-context read the notes")
        larik(shell, "--no-context --with secret/notes.txt,secret/people.json,secret/app.log and these")
        assert server.remaining == 0, "the script ran to its end"
        return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_nothing_of_a_never_file_leaves_by_any_tool(project: Path, monkeypatch: pytest.MonkeyPatch, wire: str) -> None:
    sent = _run(project, monkeypatch, rule=True, wire=wire)
    for name in NAMES:
        assert name not in sent, name
    for rel in FILES:
        assert f"[withheld: {rel} — policy never; nothing of {rel} may be sent" in sent, rel


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_without_the_rule_the_names_do_leave(project: Path, monkeypatch: pytest.MonkeyPatch, wire: str) -> None:
    sent = _run(project, monkeypatch, rule=False, wire=wire)
    for name in NAMES:
        assert name in sent, name
    assert "[withheld:" not in sent


EMAIL = "Cust.Canary.6610@Ex.com"
AMOUNT = 15519.29
ACCOUNT = "4417552093"
RENDERINGS = [
    f"print({EMAIL.upper()!r})",
    f"print(f'{{{AMOUNT}:e}}')",  # 1.551929e+04
    f"print(f'{{{AMOUNT}:E}}')",
    "print('4417 5520 93')",
    "print('441-755-2093')",
]


@pytest.mark.parametrize("restricted", [True, False])
def test_the_search_finds_a_value_rendered_otherwise(project: Path, tmp_path: Path, restricted: bool) -> None:
    frame = pd.DataFrame({"email": [EMAIL, "b.other9@ex.com"], "amount": [AMOUNT, 1.0], "account": [ACCOUNT, "1"]})
    model = scripted(tmp_path, *[[tool("python", code=code)] for code in RENDERINGS], done("ok"))
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": frame}))
    try:
        if restricted:
            agent.egress.set("cust", "schema")
        agent.run("print them")
        sent = json.dumps(agent.loop.provider.requests[-1], ensure_ascii=False)  # type: ignore[attr-defined]
    finally:
        agent.close()
    # Made false: unrestricted, every rendering goes as printed.
    shown = [EMAIL.upper(), f"{AMOUNT:e}", f"{AMOUNT:E}", "4417 5520 93", "441-755-2093"]
    assert [text in sent for text in shown] == [not restricted] * len(shown)
    if restricted:
        assert sent.count("[withheld: cust.") >= len(shown)
