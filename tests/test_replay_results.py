"""Replay compares results, not accidents (issue 53, point 2): a warning naming where the code
ran (`<larik-python-N>` when recorded, a scratch file now) is no change, a changed value is,
with the difference shown; `--in-place` never takes its own files (matplotlib's cache) for
the user's, and still leaves alone a file the user changed since."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_helpers import done, scripted, tool
from session_helpers import python_session

from larik_jupyter import Agent, KernelHost

WARN = (
    "import warnings\nimport pandas as pd\n"
    "def old_total(frame):\n    warnings.warn('old_total is deprecated', FutureWarning)\n"
    "    return frame.value.sum()\n"
    "df = pd.read_csv('data.csv')\nprint('total', old_total(df))"
)
PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2), dpi=60)\nax.bar(['a', 'b'], [1, 2])\n"
    "fig.savefig('bars.png')\nplt.close(fig)\nprint('saved')"
)


def _cli(*args: str, cwd: Path, mpl: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": ""}
    if mpl is not None:
        env["MPLCONFIGDIR"] = str(mpl)
    return subprocess.run([sys.executable, "-m", "larik_jupyter", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def _recorded(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    """A session running `code` with the `python` tool in a kernel."""
    (project / "data.csv").write_text("value\n1\n2\n3\n")
    monkeypatch.chdir(project)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True,
                  host=KernelHost({}))
    agent.run("step 1")
    agent.close()
    return agent.session_id


def test_a_warning_naming_where_the_code_ran_is_not_a_change_but_a_value_is(project: Path) -> None:
    (project / "data.csv").write_text("value\n1\n2\n3\n")
    # As the python tool records it: stdout, then the warning naming its pseudo file.
    recorded = ("total 6\n[stderr]\n<larik-python-3>:4: FutureWarning: old_total is deprecated\n"
                "  warnings.warn('old_total is deprecated', FutureWarning)")
    session = python_session(project, [(WARN, recorded)]).stem
    same = _cli("replay", session, cwd=project)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "1 same, 0 changed" in same.stdout
    assert "python: import warnings" in same.stdout and "toolu_" not in same.stdout

    (project / "data.csv").write_text("value\n1\n2\n30\n")  # the twin: the value changes
    changed = _cli("replay", session, cwd=project)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "- total 6" in changed.stdout and "+ total 33" in changed.stdout
    # Only the value is shown as the difference, not the warning's file name.
    assert "FutureWarning" not in changed.stdout


def test_a_warning_the_replay_does_not_show_again_is_not_a_change(project: Path) -> None:
    """Whether a warning shows depends on the kernel's filters and what ran before (Python shows
    each once a place): the recorded one missing from the replay changes nothing; a line of
    stderr that is no warning does."""
    (project / "data.csv").write_text("value\n1\n2\n3\n")
    code = "import pandas as pd\nprint('total', pd.read_csv('data.csv').value.sum())"
    warned = "total 6\n[stderr]\n<larik-python-3>:2: DeprecationWarning: old api\n  import pandas as pd"
    said = "total 6\n[stderr]\nloading data.csv"
    for recorded, status in ((warned, 0), (said, 1)):
        session = python_session(project, [(code, recorded)]).stem
        ran = _cli("replay", session, cwd=project)
        assert ran.returncode == status, ran.stdout + ran.stderr
    assert "- loading data.csv" in ran.stdout


def test_replay_in_place_keeps_its_own_cache_apart_and_still_spares_the_users_changes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _recorded(project, tmp_path, monkeypatch, PLOT)
    # A font list matplotlib will not use: the replay's kernel rebuilds it in its own folder,
    # a file made after the session that is the replay's, not the user's.
    mpl = tmp_path / "mpl"
    mpl.mkdir()
    from matplotlib.font_manager import FontManager

    (mpl / f"fontlist-v{FontManager.__version__}.json").write_text("{}")
    in_place = _cli("replay", session, "--in-place", cwd=project, mpl=mpl)
    assert in_place.returncode == 0, in_place.stdout + in_place.stderr
    assert "changed since the session" not in in_place.stdout

    later = time.time() + 5
    os.utime(project / "bars.png", (later, later))  # the twin: the user changed the figure since
    refused = _cli("replay", session, "--in-place", cwd=project, mpl=mpl)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "bars.png changed since the session" in refused.stdout
