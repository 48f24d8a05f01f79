"""The SDKs load on first use only."""

from __future__ import annotations

import subprocess
import sys

CHECK = (
    "import sys, larik_jupyter, larik_jupyter.llm.select, larik_jupyter.llm.scripted, larik_jupyter.testing\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai', 'httpx', 'httpx2'))\n"
    "assert not heavy, heavy\n"
    "from larik_jupyter.llm.select import select_provider\n"
    "provider, _ = select_provider('openai:gpt-x')\n"
    "assert 'openai' not in sys.modules, 'constructing a provider imported the SDK'\n"
)


def test_importing_the_package_and_selecting_a_model_loads_no_sdk() -> None:
    env = {"OPENAI_API_KEY": "sk-x", "PATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
