"""No wait in a request (issue 51, point 4): a large restricted source is indexed in the
background; a request that finds its index unfinished withholds the untagged text the index
would have had to search, with the marker `indexing_marker` says, and leaves without waiting;
once it is built the next request searches as before."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest

from larik_jupyter import Agent
from larik_jupyter.egress.decisions import indexing_marker
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, scripted, tool

CANARY = "slow.canary.5182@ex.com"
ROWS = 6_000  # past what a request indexes itself (`restricted.INLINE_VALUES`)


def _big() -> pd.DataFrame:
    emails = [f"row{i:05d}.person@ex.com" for i in range(ROWS)]
    emails[4321] = CANARY
    return pd.DataFrame({"email": emails, "n": range(ROWS)})


@pytest.mark.parametrize("restricted", [True, False])
def test_a_request_while_the_index_is_built_withholds_and_does_not_wait(
    restricted: bool, project: Path, tmp_path: Path
) -> None:
    model = scripted(
        tmp_path,
        [tool("bash", command="cat people.txt")],
        done("first"),
        [tool("bash", command="cat people.txt")],
        done("second"),
    )
    # The same rows copied under a name no rule covers: only the value search finds them.
    (project / "people.txt").write_text(f"found {CANARY} in the export\n")
    agent = Agent(project, model=model, yes=True, host=KernelHost({"big": _big()}))
    builder = agent.loop.door.values.builder
    gate = threading.Event()
    builder.gate = gate  # the build waits on it: unfinished for as long as the test holds it
    try:
        if restricted:
            agent.egress.set("big", "schema")
        agent.run("look")
        first = json.dumps(agent.loop.provider.requests, ensure_ascii=False)  # type: ignore[attr-defined]
        # The turn ended with the build still held: no request waited for it.
        unfinished = builder.unfinished()
        gate.set()
        assert builder.settle(120), "the background index of big was not built within 120 s"
        agent.run("again")
        second = json.dumps(agent.loop.provider.requests[2:], ensure_ascii=False)  # type: ignore[attr-defined]
    finally:
        gate.set()
        agent.close()
    if not restricted:  # made false: no rule, nothing to index, the canary goes
        assert unfinished == [] and CANARY in first and CANARY in second
        return
    assert unfinished == ["variable:big"]
    assert CANARY not in first and indexing_marker("big") in first
    assert "look" in first  # the person's prompt is not held back
    # Built: the next request searches as before, the value's own marker, no indexing marker.
    assert CANARY not in second and "[withheld: big.email — policy schema" in second
    assert indexing_marker("big") not in second


def test_a_process_forked_mid_build_builds_its_own_index(project: Path) -> None:
    """A user's multiprocessing forks the kernel while the parent's build is under way: the
    child has no builder thread, builds its own and then finds the value; the parent's build,
    still held, is unfinished there until released."""
    import os
    import signal

    from larik_jupyter.egress.door import EgressDoor
    from larik_jupyter.egress.policy import Policy, PolicySet

    frames = {"big": _big()}
    door = EgressDoor(PolicySet(), project, None, lambda: list(frames.items()))
    gate = threading.Event()
    door.values.builder.gate = gate
    try:
        door.set_policy("big", Policy("schema"))
        assert door.values.unfinished == ("variable:big",)
        pid = os.fork()
        if pid == 0:  # the child: exits 0 when it built and found the canary within 60 s
            signal.alarm(60)
            door.values.builder.gate = None
            door.refresh()
            built = door.values.settle(50)
            door.refresh()
            found = [f.label for f in door.index.find(f"a {CANARY} b")]
            os._exit(0 if built and door.values.unfinished == () and found == ["big.email"] else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the forked child did not build its own index"
        door.refresh()
        assert door.values.unfinished == ("variable:big",)  # the parent's build is still held
        gate.set()
        assert door.values.settle(120), "the background index of big was not built within 120 s"
        door.refresh()
        assert door.values.unfinished == () and [f.label for f in door.index.find(CANARY)] == ["big.email"]
    finally:
        gate.set()


@pytest.mark.parametrize("broken", [True, False])
def test_a_source_whose_index_cannot_be_built_is_held_back_and_said_once(
    broken: bool, project: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A restricted CSV with a field past the csv module's limit cannot be indexed: the build's
    error is logged once, the file stays unfinished and the untagged results of every request
    are held back; the turns go on. Made false: the same file with a field of ordinary size is
    indexed and the result goes."""
    (project / "data").mkdir()
    field = "x" * (200_000 if broken else 20_000)
    (project / "data" / "wide.csv").write_text(f"id,note\nrow-canary-1,{field}\n")
    model = scripted(
        tmp_path, [tool("bash", command="echo plain $((40 + 2))")], done("one"),
        [tool("bash", command="echo plain $((40 + 2))")], done("two"),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    try:
        agent.egress.set("data/wide.csv", "schema")
        assert agent.loop.door.values.settle(120), "the background index of data/wide.csv was not built within 120 s"
        first = agent.run("one")
        second = agent.run("two")
        sent = json.dumps(agent.loop.provider.requests[1:], ensure_ascii=False)  # type: ignore[attr-defined]
    finally:
        agent.close()
    assert first.status == "done" and second.status == "done"
    said = [r for r in caplog.records if "data/wide.csv could not be indexed" in r.getMessage()]
    if not broken:
        assert "plain 42" in sent and not said
        return
    assert "plain 42" not in sent and sent.count(indexing_marker("data/wide.csv")) >= 2
    assert len(said) == 1
