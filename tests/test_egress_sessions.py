"""The notebook's `/egress` rules belong to the kernel, not one session: through `%larik` against
the wire fake, a rule holds after `/new`, `/clear`, `/resume` of another session, `/model` and
`/fork`, `/egress` lists it with where it came from, and it holds until the person sets another
policy (then the canary does go: the test can fail)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from IPython.utils.capture import capture_output

from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.session_helpers import ledger_lines
from tests.widget_helpers import larik, shell_with_magics, turn_sent

KEY = "sk-egress-sessions"
CANARY = "kept.canary.4417@ex.com"
# Each turn prints the frame, then ends.
TURN = [{"content": [tool("python", code="print(cust.to_string())")]}, {"content": done("ok")}]


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_rule_holds_for_every_session_of_the_kernel_until_the_person_changes_it(
    project: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    routes = ["/new", "/clear", "/resume {first}", "/model {model}", "/fork"]
    with ScriptedHTTPServer(TURN * (len(routes) + 3), api_key=KEY) as server:
        model = wire_model(wire, server, KEY, monkeypatch)
        shell, magics = shell_with_magics(project, model)
        shell.user_ns["cust"] = pd.DataFrame({"email": [CANARY, "b.other9@ex.com"], "amount": [15519.29, 1.0]})
        larik(shell, "/egress cust schema")
        sent = {"first": turn_sent(server, shell, "--no-context look")}
        first = magics.kernel.require().session_id
        sessions = {first: magics.kernel.require().session_path}
        for route in routes:
            larik(shell, route.format(first=first, model=model))
            sent[route] = turn_sent(server, shell, "--no-context look again")
            agent = magics.kernel.require()
            sessions[agent.session_id] = agent.session_path
        with capture_output() as shown:
            larik(shell, "/egress")
        listed = "\n".join(str(o.data.get("text/markdown", "")) for o in shown.outputs)
        # Made false: the person lifts the rule; a new session sends the rows.
        larik(shell, "/egress cust full")
        larik(shell, "/new")
        lifted = turn_sent(server, shell, "--no-context and now")
    for route, text in sent.items():
        assert CANARY not in text, route
        assert "[withheld: cust — policy schema" in text, route
    assert len(sessions) == 3  # the first, /new's and /fork's (/clear and /model stay; /resume went back)
    assert "- variable cust: schema (set with /egress in this kernel)" in listed
    assert CANARY in lifted and "[withheld: cust" not in lifted
    # Each session records the rule it applied, so resuming it after a restart brings it back.
    for path in sessions.values():
        assert any(r.get("target") == "cust" for r in ledger_lines(path)), path
