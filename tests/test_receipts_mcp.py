"""An outside agent's `python` call over MCP gets its receipts with its result, as the model of
a `%larik` turn does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.agent_helpers import personal
from tests.test_mcp_server import ALLOW, Kernel, drive, kernel, server_params, text

__all__ = ["kernel"]  # the fixture, used by name


def test_an_outside_call_gets_its_receipts_with_its_result(kernel: Kernel, project: Path) -> None:
    personal(ALLOW)
    code = "m = df.merge(pd.DataFrame({'a': [1, 1], 'b': [5, 6]}), on='a')"
    [result, report] = asyncio.run(drive(server_params(kernel, project), [
        ("python", {"code": code}), ("variable_report", {}),
    ]))
    said = text(result)
    assert "[receipts: what each operation did to the rows]" in said, said
    assert ("m = df ⋈ a frame on a (inner join): 3 → 2 rows (+1: 1 a value twice in a frame, e.g. 1); "
            "2 rows of df matched no row of a frame") in said
    assert kernel.value("len(m)") == "2"
    # The variable report says the call's receipts under its variables, as its result did.
    assert text(report).splitlines()[1:] == [
        "call 1, what its operations did to the rows:",
        "  m = df ⋈ a frame on a (inner join): 3 → 2 rows (+1: 1 a value twice in a frame, e.g. 1); "
        "2 rows of df matched no row of a frame",
    ], text(report)
