"""Exports redact every secret the environment names (issue 53, point 9): the value of a
variable whose name says it is a secret (`*_TOKEN`, `*_SECRET`, `*_KEY`, `*PASSWORD*`),
printed by the agent, reaches neither the branch notebook, the Markdown export nor replay's
output; the twin, a variable whose name says nothing, is shown as it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import python_session

from larik_jupyter.analysis.as_notebook import write_notebook
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.session.export import export_markdown

VALUE = "svc-live-4f9a2c7d"


@pytest.mark.parametrize(
    ("name", "secret"),
    [("MY_SERVICE_TOKEN", True), ("WAREHOUSE_SECRET", True), ("maps_api_key", True), ("DB_PASSWORD_2", True),
     ("MY_SERVICE_REGION", False)],
)
def test_a_secret_named_variable_is_redacted_in_every_export(
    project: Path, monkeypatch: pytest.MonkeyPatch, name: str, secret: bool
) -> None:
    monkeypatch.setenv(name, VALUE)
    code = f"import os\nprint(os.environ[{name!r}])"
    # The second call was recorded as something else, so replay's row shows what it prints now.
    path = python_session(project, [(code, VALUE), (code.replace("])", "] + '!')"), "(not set)")])
    notebook = write_notebook(path, "out.ipynb", cwd=project).read_text()
    markdown = Path(export_markdown(path, "out.md", cwd=project, redactor=redactor_for(project))).read_text()
    replayed = subprocess.run([sys.executable, "-m", "larik_jupyter", "replay", path.stem], cwd=project,
                              capture_output=True, text=True, timeout=300, env={**os.environ}).stdout
    assert "+ " in replayed  # the value printed now is in the row's difference
    for text in (notebook, markdown, replayed):
        assert (VALUE in text) is not secret
        assert (f"[redacted: {name}]" in text) is secret
