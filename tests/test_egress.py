"""The egress policy's rules, its local-only mode, the routes the canary suite's notebook does
not take (MCP results, the notebook context), the record a resumed session keeps, and what
the user is told."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from larik_jupyter import Agent
from larik_jupyter.agent.events import Notice
from larik_jupyter.agent.loop import PromptExtras
from larik_jupyter.config.layers import load_config
from larik_jupyter.egress.policy import PolicyError, parse_policy
from larik_jupyter.egress.value_forms import number_forms, value_forms
from larik_jupyter.egress.values import ValueIndex
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import TextBlock
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import Hostile, done, personal, scripted, tool
from tests.session_helpers import ledger_lines
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-egress"
EMAIL = "cust.canary.6610@ex.com"
SALARY = 123456.78
TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"email": [EMAIL, "b.other9@ex.com"], "salary": [SALARY, 1.0]})


def _wire(server: ScriptedHTTPServer, monkeypatch: pytest.MonkeyPatch, **config: object) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    compatible = {"base_url": server.openai_base_url, "api_key_env": "ANTHROPIC_API_KEY"}
    personal({"providers": {"openai-compatible": compatible}, **config})


def _sent(server: ScriptedHTTPServer) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)


def test_policies_parse_and_order() -> None:
    assert str(parse_policy("sample 5 mask email,phone")) == "sample 5 mask email,phone"
    with pytest.raises(PolicyError, match="Unknown egress policy 'sometimes'"):
        parse_policy("sometimes")
    with pytest.raises(PolicyError, match="sample needs a number of rows"):
        parse_policy("sample")


def test_the_repository_config_only_tightens(project: Path) -> None:
    personal({"egress": {"default": "full", "policies": {"df": "never", "raw": "full", "data/*.csv": "full"}}})
    (project / ".larik").mkdir()
    shared = {"egress": {"default": "stats", "policies": {"df": "full", "raw": "schema"}, "local_only": False}}
    (project / ".larik" / "settings.json").write_text(json.dumps(shared))
    policies = load_config(project).config.egress.policy_set()
    assert str(policies.for_variable("df").policy) == "never"  # the repository cannot loosen
    assert str(policies.for_variable("raw").policy) == "schema"  # but it can tighten
    assert str(policies.for_variable("other").policy) == "stats"  # its default too
    assert policies.for_variable("raw").origin == "repository config"
    assert str(policies.for_file("notes.md").policy) == "full"  # the default covers data files only
    assert str(policies.for_file("data/x.parquet").policy) == "stats"
    assert not policies.is_local_only()
    # Made false: without the shared file, the personal rules hold.
    (project / ".larik" / "settings.json").unlink()
    policies = load_config(project).config.egress.policy_set()
    assert str(policies.for_variable("raw").policy) == "full"


def test_number_forms_and_the_index() -> None:
    assert {"73456.78", "73,456.78", "73456.780000", "73456.8"} <= set(number_forms(73456.78))
    assert "73457" not in number_forms(73456.78)  # a whole number would be any count or id
    assert number_forms(12.5) == [] and number_forms(980) == []
    index = ValueIndex()
    index.add("variable:df", value_forms("df", _frame()))
    found = index.find(f"total 123,456.78 and {EMAIL}, not 1.0")
    assert {f.label for f in found} == {"df.salary", "df.email"}
    assert index.find("nothing of it here 123457.1") == []


def test_the_index_finds_what_each_source_holds_now_through_changes() -> None:
    """Values are found as whole tokens only, and after a frame changes, another is added or a
    rule is dropped, the search finds the values the sources hold now and no others."""
    index = ValueIndex()
    frames = {f"f{n}": pd.DataFrame({"id": [f"ID{n:02d}{i:05d}x" for i in range(300)]}) for n in range(8)}
    for name, frame in frames.items():
        index.add(f"variable:{name}", value_forms(name, frame))
    assert [f.label for f in index.find("row ID0300007x, end.")] == ["f3.id"]
    assert [f.label for f in index.find("row ID0300007x.")] == ["f3.id"]  # ends a sentence
    assert index.find("row xID0300007x and ID0300007xx and ID0300007") == []  # not whole tokens
    # f3 changes: its old values are no longer its, its new ones are found.
    index.add("variable:f3", value_forms("f3", pd.DataFrame({"id": ["NEW-VALUE-0001", "NEW-VALUE-0002"]})))
    assert index.find("ID0300007x") == []
    assert [f.text for f in index.find("then NEW-VALUE-0002;")] == ["NEW-VALUE-0002"]
    # A new source, then a rule dropped: found, then not.
    index.add("variable:late", value_forms("late", ["late-canary-77"]))
    assert [f.source for f in index.find("(late-canary-77)")] == ["variable:late"]
    index.drop("variable:late")
    index.drop("variable:f5")
    assert index.find("late-canary-77 ID0500001x") == []
    assert [f.label for f in index.find("ID0600001x")] == ["f6.id"]
    # Many changes at once (past a quarter of the keys): all still found, the dropped not.
    for name in ("f0", "f1", "f2", "f4"):
        index.add(f"variable:{name}", value_forms(name, frames[name]))
    assert {f.label for f in index.find("ID0000001x ID0100001x ID0700001x ID0500001x")} == {"f0.id", "f1.id", "f7.id"}


def test_mcp_results_and_the_notebook_context_are_searched(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [
        {"content": [tool("mcp__tiny__echo", text=f"echo {EMAIL}")]},
        {"content": done("ok")},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        _wire(
            server, monkeypatch,
            mcpServers={"tiny": {"command": sys.executable, "args": [str(TINY)]}},
            egress={"policies": {"cust": "never"}},
        )
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True, host=KernelHost({"cust": _frame()}))
        try:
            context = TextBlock(text=f"<notebook-context>\nLast error: KeyError: '{EMAIL}' at {SALARY}\n</notebook-context>")
            outcome = agent.run(f"why does {EMAIL} fail?", PromptExtras(before=[context]))
        finally:
            agent.close()
        sent = _sent(server)
    assert outcome.status == "done"
    assert EMAIL not in sent and "123456.78" not in sent
    assert "[withheld: cust.email — policy never" in sent and "[withheld: cust.salary — policy never" in sent
    records = [r for r in ledger_lines(agent.session_path) if r["type"] == "request"]
    wheres = {w["where"] for r in records for w in r["withheld"]}
    assert {"notebook context", "prompts"} <= wheres and any("mcp__tiny__echo" in w for w in wheres)


@pytest.mark.parametrize(("model", "leaves"), [("openai-compatible:local-7b", True), ("anthropic:claude-sonnet-4-6", False)])
def test_local_models_only(model: str, leaves: bool, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [{"content": [tool("python", code="print(cust)")]}, {"content": done("ok")}]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        _wire(server, monkeypatch, egress={"policies": {"cust": "schema"}, "local_only": True})
        agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": _frame()}))
        try:
            agent.run("show")
        finally:
            agent.close()
        sent = _sent(server)
    # On this machine's compatible server the data goes in full; anywhere else not at all.
    assert (EMAIL in sent) is leaves
    if not leaves:
        assert "[withheld: cust — policy never" in sent and "cust: DataFrame" not in sent
    assert "local models only" in json.dumps(server.requests[0].body)


def test_notebook_rules_are_recorded_kept_on_resume_and_told(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("python", code="cust.head()")], done("ok"), done("again"))
    host = KernelHost({"cust": _frame()})
    agent = Agent(project, model=model, yes=True, host=host)
    notices: list[str] = []
    agent.subscribe(lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
    try:
        assert "policy `stats`" in agent.egress.set("cust", "stats")
        with pytest.raises(LarikError, match="Unknown egress policy"):
            agent.egress.set("cust", "sometimes")
        agent.run("look")
        session = agent.session_id
    finally:
        agent.close()
    assert "Withheld from the model this turn: cust (stats) (`%larik /egress` shows the ledger)." in notices
    requests = agent.loop.provider.requests  # type: ignore[attr-defined]
    assert EMAIL not in json.dumps(requests) and "count 2, missing 0" in json.dumps(requests)
    report = agent.egress.report()
    assert "variable cust: stats (set with /egress in this kernel)" in report and "cust (stats)" in report
    resumed = Agent(project, session=session, model=model, yes=True, host=host)
    try:
        assert str(resumed.loop.door.policies.for_variable("cust").policy) == "stats"
        resumed.run("again")
    finally:
        resumed.close()
    assert "[withheld: cust — policy stats" in json.dumps(resumed.loop.provider.requests[-1], ensure_ascii=False)  # type: ignore[attr-defined]
    # A branch of the session keeps the rules the notebook set in its source.
    branch = Agent(project, session=str(resumed.fork()), model=model, yes=True)
    try:
        assert str(branch.loop.door.policies.for_variable("cust").policy) == "stats"
    finally:
        branch.close()


def test_the_egress_command(project: Path, tmp_path: Path) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"egress": {"policies": {"df": "schema"}}}))
    shell, _ = shell_with_magics(project, scripted(tmp_path, done("ok")))
    with capture_output() as shown:
        larik(shell, "/egress")  # before any session: the config's rules
        larik(shell, "/egress df full")
        larik(shell, "/egress 'data/*.csv' sample 3 mask email")
        larik(shell, "/egress --local-only on")
        larik(shell, "hello")
        larik(shell, "/egress")
    text = "\n".join(str(o.data.get("text/markdown", o.data.get("text/plain", ""))) for o in shown.outputs)
    assert "- variable df: schema (repository config)\n\nNo request has left this session yet." in text
    assert "The repository's config allows no more than `schema`, so that holds." in text
    assert "Files `data/*.csv`: policy `sample 3 mask email` from the next request on." in text
    assert "Local models only: restricted data goes in full" in text
    assert "**Last turn (prompt 1)**: 1 request" in text and "| system prompt |" in text
    assert "Nothing was withheld in that turn." in text
    with pytest.raises(UsageError, match="say what may leave of df: never, schema, stats"):
        larik(shell, "/egress df")


def test_the_cli_and_the_sidebar_view_show_the_ledger(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from larik_jupyter.frontends.cli import main
    from larik_jupyter.frontends.server.views import transcript_page

    model = scripted(tmp_path, [tool("python", code="print(cust)")], done("ok"))
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": _frame()}))
    try:
        agent.egress.set("cust", "never")
        agent.run("look")
    finally:
        agent.close()
    assert main(["egress", str(agent.session_path)]) == 0
    out = capsys.readouterr().out
    assert "cust: never (set in the notebook" in out
    assert "prompt 1: 2 requests" in out and "withheld cust (never) ×1" in out
    assert "| result of call" in out and "| framing |" in out
    page = transcript_page(agent.session_id, agent.session_path, 0, 50, project)
    (turn,) = page.egress
    assert turn.prompt == 1 and turn.requests == 2 and turn.withheld == ["cust (never) ×1"]
    assert turn.text.startswith("Sent 2 requests, ") and turn.text.endswith("· withheld cust (never) ×1")
    # Made false: a session whose requests withheld nothing says nothing was withheld.
    clean = Agent(project, model=scripted(tmp_path, done("hi")), yes=True)
    try:
        clean.run("hello")
    finally:
        clean.close()
    (turn,) = transcript_page(clean.session_id, clean.session_path, 0, 50, project).egress
    assert turn.withheld == [] and "withheld" not in turn.text
    # `--json`: the ledger's records as JSON lines, one object a line (as the file holds them).
    capsys.readouterr()
    assert main(["egress", "--json", str(agent.session_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == ledger_lines(agent.session_path)
    assert lines[0].startswith('{"type":"policy"') and any('"withheld":[{"source":"cust"' in line for line in lines)
    # Made false: the clean session's lines withhold nothing.
    assert main(["egress", "--json", str(clean.session_path)]) == 0
    clean_lines = capsys.readouterr().out.splitlines()
    assert clean_lines and all(json.loads(line).get("withheld", []) == [] for line in clean_lines)
    assert main(["egress", "no-such-session"]) == 2
    assert "larik-jupyter:" in capsys.readouterr().err


def test_the_default_covers_data_files_read_by_any_route(project: Path, tmp_path: Path) -> None:
    (project / "raw").mkdir()
    (project / "raw" / "visits.csv").write_text(f"email,amount\n{EMAIL},{SALARY}\n")
    (project / "notes.md").write_text(f"contact {EMAIL}\n")
    personal({"egress": {"default": "schema"}})
    model = scripted(tmp_path, [tool("bash", command="cat raw/visits.csv")], [tool("read", path="notes.md")], done("ok"))
    agent = Agent(project, model=model, yes=True)
    try:
        agent.run("look")
    finally:
        agent.close()
    sent = json.dumps(agent.loop.provider.requests, ensure_ascii=False)  # type: ignore[attr-defined]
    # Out of the data file by a shell command, and the same value in a text file the default
    # does not cover: both withheld, named by where they came from.
    assert EMAIL not in sent and "123456.78" not in sent
    assert "[withheld: raw/visits.csv:email — policy schema; work with raw/visits.csv's schema" in sent


def test_every_provider_the_agent_is_given_passes_the_door(project: Path, tmp_path: Path) -> None:
    agent = Agent(project, model=scripted(tmp_path, done("a")), yes=True)
    try:
        assert agent.loop.provider.door is agent.loop.door
        agent.switch_model(scripted(tmp_path, done("b")))
        assert agent.loop.provider.door is agent.loop.door
        agent.run("hi")
    finally:
        agent.close()
    assert [r.destination for r in agent.loop.door.records] == [agent.loop.provider.name]


def test_the_door_searches_tool_inputs_and_takes_whole_tokens_only(project: Path) -> None:
    from larik_jupyter.egress.door import EgressDoor
    from larik_jupyter.egress.policy import Policy, PolicySet
    from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock
    from larik_jupyter.llm.provider import Destination

    frame = pd.DataFrame({'e"mail': [EMAIL, "x.other7@ex.com"], "amount": [1234.56, 2.0]})
    policies = PolicySet()
    policies.set("cust", Policy("stats"), "test")
    door = EgressDoor(policies, project, None, lambda: [("cust", frame)])
    messages = [
        Message(role="user", content=[TextBlock(text="go")]),
        Message(role="assistant", content=[ToolUseBlock(id="t1", name="python", input={"code": f"find('{EMAIL}')"})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="1234.56 and 91234.56 and 1234.567")]),
    ]
    body = door.pass_request(Destination("anthropic:x", "https://api.anthropic.com"), "", messages, lambda s, m: {"messages": [x.to_json() for x in m]})
    call = body["messages"][1]["content"][0]["input"]["code"]
    assert EMAIL not in call and call.startswith('find(\'[withheld: cust.e"mail — policy stats;')
    result = body["messages"][2]["content"][0]["content"]
    assert result == "[withheld: cust.amount — policy stats; work with cust's schema and statistics or ask the user] and 91234.56 and 1234.567"
    # Made false: with the variable's policy full, nothing is withheld.
    policies.set("cust", Policy("full"), "test")
    body = door.pass_request(Destination("anthropic:x", "https://api.anthropic.com"), "", messages, lambda s, m: {"messages": [x.to_json() for x in m]})
    assert EMAIL in json.dumps(body) and "withheld" not in json.dumps(body)


def test_compaction_requests_and_summaries_pass_the_door(project: Path, tmp_path: Path) -> None:
    model = scripted(
        tmp_path, [tool("bash", command=f"echo {EMAIL}")], done("ok"),
        done(f"SUMMARY: the user asked about {EMAIL}"), done("after"),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": _frame()}))
    try:
        agent.egress.set("cust", "never")
        agent.run("look")
        agent.compact()
        agent.run("and now")
    finally:
        agent.close()
    requests = agent.loop.provider.requests  # type: ignore[attr-defined]
    compaction, after = requests[-2], requests[-1]
    assert EMAIL not in json.dumps(compaction) and "[withheld: cust.email" in json.dumps(compaction, ensure_ascii=False)
    # The model wrote the value into its summary; the next request carries the summary without it.
    assert EMAIL not in json.dumps(after) and "SUMMARY: the user asked about [withheld: cust.email" in json.dumps(after, ensure_ascii=False)
    records = [r for r in ledger_lines(agent.session_path) if r["type"] == "request"]
    assert len(records) == len(requests)


def test_an_earlier_replys_thinking_with_a_restricted_value_is_left_out(project: Path, tmp_path: Path) -> None:
    thought = {"type": "thinking", "thinking": f"the row of {EMAIL} looks odd", "signature": "sig-1"}
    model = scripted(tmp_path, [thought, {"type": "text", "text": "Odd row."}], done("second"))
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": _frame()}))
    try:
        agent.egress.set("cust", "never")
        agent.run("first")
        agent.run("second")
    finally:
        agent.close()
    second = json.dumps(agent.loop.provider.requests[-1])  # type: ignore[attr-defined]
    assert EMAIL not in second and "looks odd" not in second and "Odd row." in second
    records = [r for r in ledger_lines(agent.session_path) if r["type"] == "request"]
    assert records[-1]["withheld"] == [{"source": "cust.email", "policy": "never", "where": "the model's thinking", "count": 1}]
    assert sum(p["bytes"] for p in records[-1]["parts"]) == records[-1]["bytes"]


def test_the_door_decides_again_when_a_rule_or_a_restricted_value_changes(project: Path) -> None:
    from larik_jupyter.egress.door import EgressDoor
    from larik_jupyter.egress.policy import Policy, PolicySet
    from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock
    from larik_jupyter.llm.provider import Destination

    later = "later.canary.4417@ex.com"
    values: dict[str, object] = {"cust": _frame()}
    policies = PolicySet()
    policies.set("cust", Policy("schema"), "test")
    door = EgressDoor(policies, project, None, lambda: list(values.items()))
    result = ToolResultBlock(tool_use_id="t1", content=f"rows: {EMAIL}; {later}")
    call = Message(role="assistant", content=[ToolUseBlock(id="t1", name="bash", input={"command": "cat rows"})])
    messages = [Message(role="user", content=[TextBlock(text="go")]), call, Message(role="user", content=[result])]
    destination = Destination("anthropic:x", "https://api.anthropic.com")

    def sent(messages: list[Message] = messages) -> str:
        body = door.pass_request(destination, "", messages, lambda s, m: {"messages": [x.to_json() for x in m]})
        return json.dumps(body, ensure_ascii=False)

    assert EMAIL not in sent() and later in sent()
    # A copy of the block holding the same text (the model context copies a result with images
    # every request) is decided the same.
    assert EMAIL not in sent([*messages[:2], Message(role="user", content=[result.model_copy()])])
    # Made false by each rule in turn: the same blocks, decided again.
    door.set_policy("cust", Policy("full"))
    assert EMAIL in sent() and "withheld" not in sent()
    door.set_policy("cust", Policy("never"))
    assert EMAIL not in sent() and "[withheld: cust.email — policy never" in sent()
    # The variable now holds other rows: the text is searched again, for them.
    values["cust"] = pd.DataFrame({"email": [later, "c.other3@ex.com"]})
    assert later not in sent() and EMAIL in sent()


def test_a_restricted_variable_whose_every_look_up_raises_never_stops_the_turn(project: Path, tmp_path: Path) -> None:
    # The door indexes and describes each restricted variable before the request leaves; a value
    # that raises on every question is withheld by its tag, and the turn goes on.
    personal({"egress": {"default": "schema"}})
    model = scripted(tmp_path, [tool("python", code="k = type(h).__name__\nh")], done())
    ns: dict[str, object] = {"h": Hostile(), "cust": pd.DataFrame({"email": ["zq7@canary.example"]})}
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    outcome = agent.run("look at it")
    sent = json.dumps(agent.loop.provider.requests, ensure_ascii=False)  # type: ignore[attr-defined]
    agent.close()
    assert outcome.status == "done" and ns["k"] == "Hostile"
    assert "[withheld: h — policy schema" in sent and "zq7@canary.example" not in sent


def test_a_restricted_frame_changed_in_place_is_looked_at_again(project: Path, tmp_path: Path) -> None:
    """A frame changed in place keeps its object, shape and length: by the person's cell between
    turns, and by the agent's own call within one. Both new values are withheld wherever they
    appear afterwards (the prompt, the call's code, a shell command's output)."""
    by_person, by_agent = "inplace.person.4415@ex.com", "inplace.agent.7730@ex.com"
    frame = _frame()
    model = scripted(
        tmp_path,
        done("first"),
        [tool("python", code=f"cust.loc[1, 'email'] = '{by_agent}'")],
        [tool("bash", command=f"echo {by_agent} {by_person}")],
        done("second"),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": frame}))
    try:
        agent.egress.set("cust", "never")
        agent.run("look")
        frame.loc[0, "email"] = by_person  # the person's cell, between the turns
        agent.run(f"why is {by_person} odd?")
    finally:
        agent.close()
    requests = agent.loop.provider.requests  # type: ignore[attr-defined]
    sent = json.dumps(requests[1:], ensure_ascii=False)
    assert by_person not in sent and by_agent not in sent
    last = json.dumps(requests[-1], ensure_ascii=False)
    assert last.count("[withheld: cust.email — policy never") >= 4  # prompt, code, and the echo's two


def test_a_large_batch_is_searched_on_two_cores_with_the_same_findings_also_after_a_fork() -> None:
    """A batch past `SHARED_FROM` bytes is split between this thread and a helper; what it finds
    is what one thread finds, and a process forked after the helper started (a user's
    multiprocessing) searches without waiting on a thread it does not have."""
    import os
    import signal

    from larik_jupyter.egress import values

    index = ValueIndex()
    index.add("variable:df", value_forms("df", _frame()))
    filler = "step 12 loss=0.123456 run_77 at 2026-01-02\n" * 400
    texts = [f"{filler}{EMAIL if n % 7 == 3 else ''} {SALARY if n % 5 == 1 else ''}" for n in range(40)]
    assert sum(map(len, texts)) > values.SHARED_FROM
    split = [[f.text for f in found] for found in index.find_all(texts)]
    alone = [[f.text for f in index.find(text)] for text in texts]
    assert split == alone and sum(map(len, split)) == 6 + 8  # six emails, eight salaries
    pid = os.fork()
    if pid == 0:  # the child: exits 0 when it found the same within 20 s
        signal.alarm(20)
        same = [[f.text for f in found] for found in index.find_all(texts)] == alone
        os._exit(0 if same else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
