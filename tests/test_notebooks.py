"""Every notebook in notebooks/ runs headless with nbclient against scripted models."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient
from packaging.requirements import Requirement

from larik_jupyter import Agent
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"


def execute(name: str, workdir: Path) -> nbformat.NotebookNode:
    for item in NOTEBOOKS.iterdir():
        if item.is_file():
            shutil.copy(item, workdir / item.name)
    nb = nbformat.read(workdir / name, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(workdir)}},
                   store_widget_state=True).execute()
    return nb


def outputs_text(cell: nbformat.NotebookNode) -> str:
    chunks = []
    for out in cell.get("outputs", []):
        chunks.append(out.get("text", ""))
        data = out.get("data", {})
        chunks.append(data.get("text/markdown", "") + data.get("text/plain", ""))
    return "\n".join(chunks)


def test_every_notebook_is_covered() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == [
        "churn-analysis.ipynb", "data-exploration.ipynb", "quickstart.ipynb"
    ]


@pytest.mark.timeout(240)
def imported_modules(path: Path) -> set[str]:
    """The top-level modules a notebook's code cells import (magics stripped as IPython does)."""
    modules = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return modules


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_by(requirements: list[str]) -> set[str]:
    """The distributions `pip install` of `requirements` brings, following installed metadata."""
    seen: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = _canonical(req.name)
        if name in seen:
            continue
        seen.add(name)
        requires = importlib.metadata.distribution(req.name).requires or []
        for wanted in req.extras or {""}:
            todo += [(Requirement(r), wanted) for r in requires]
    return seen


def test_the_readme_install_brings_everything_the_notebooks_import() -> None:
    readme = (REPO / "README.md").read_text()
    extras = re.search(r"pip install -e '\.\[(\w+)\]'", readme)
    assert extras is not None, "the README's first command installs the project with extras"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    brought = installed_by(project["dependencies"] + project["optional-dependencies"][extras[1]])
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for path in NOTEBOOKS.glob("*.ipynb"):
        for module in imported_modules(path) - set(sys.stdlib_module_names) - {"larik_jupyter"}:
            if not {_canonical(d) for d in providers.get(module, [module])} & brought:
                missing[module] = path.name
    assert missing == {}, f"imported by the notebooks but not installed by [{extras[1]}]"


def test_quickstart_runs_headless(tmp_path: Path) -> None:
    nb = execute("quickstart.ipynb", tmp_path)
    texts = [outputs_text(c) for c in nb.cells if c.cell_type == "code"]
    everything = "\n".join(texts)
    assert "scripted" in everything.lower()
    assert "Permission denied" in everything  # the first prompt asked; nobody could answer
    asked = texts[[i for i, t in enumerate(texts) if "Permission denied" in t][0]]
    assert "writing larik_demo.txt: denied" in asked and "Nothing changed on disk" in asked
    assert "fixed offline script, not a model" in everything
    assert "Undid prompt 2." in everything and "larik_demo.txt" in everything
    listing = [t for t in texts if "files here:" in t][0]
    assert "larik_demo.txt" not in listing  # the asked turn was denied, the --yes turn undone
    sessions = list_sessions(tmp_path)
    assert len(sessions) == 3  # the original, the fork and the rewind branch of the fork
    (original,) = [s for s in sessions if not s.fork_of]
    entries = load_entries(original.path).entries
    prompts = [e for e in entries if e.message is not None and e.message.is_prompt()]
    assert len(prompts) == 2
    (forked,) = [s for s in sessions if s.fork_of == original.id]
    (rewound,) = [s for s in sessions if s.fork_of == forked.id]
    assert rewound.fork_at == 0  # /rewind 1: before the first prompt
    # Run All again in the same folder: every cell runs again.
    again = execute("quickstart.ipynb", tmp_path)
    assert [o for c in again.cells for o in c.get("outputs", []) if o.output_type == "error"] == []


def quickstart_prompts() -> list[str]:
    nb = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    prompts = [s.split("\n", 1)[1] if s.startswith("%%larik") else s for s in cells]
    return [p.removeprefix("%larik ") for p in prompts if "larik_demo.txt" in p]


def test_the_quickstart_prompts_leave_two_visible_undoable_changes(project: Path) -> None:
    """What an approving user sees: each of the two prompts changes the file, undo walks back."""
    first, second = quickstart_prompts()
    agent = Agent(project, model="scripted:demo", yes=True)
    contents = []
    for prompt in (first, second):
        outcome = agent.run(prompt)
        assert "What happened:" in outcome.text and "denied" not in outcome.text
        contents.append((project / "larik_demo.txt").read_text())
    assert contents[0] != contents[1]
    assert agent.undo()[0].restored == ["larik_demo.txt"]
    assert (project / "larik_demo.txt").read_text() == contents[0]
    assert agent.undo()[0].restored == ["larik_demo.txt"]
    assert not (project / "larik_demo.txt").exists()
    agent.close()


@pytest.mark.timeout(240)
def test_data_exploration_runs_headless(tmp_path: Path) -> None:
    nb = execute("data-exploration.ipynb", tmp_path)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    last = outputs_text(nb.cells[-1])
    # the agent's python call really ran in the kernel: the totals, highest first
    assert re.search(r"south\s+230\.75\s+north\s+184\.0+\s+east\s+129\.9", last), last
    (info,) = list_sessions(tmp_path)
    entries = load_entries(info.path).entries
    tools = [b.name for e in entries if e.message for b in e.message.tool_uses()]
    assert tools == ["inspect_variables", "python"]
    results = [b for e in entries if e.message for b in e.message.tool_results()]
    assert [bool(r.is_error) for r in results] == [False, False]
    assert "sales" in str(results[0].content) and "DataFrame" in str(results[0].content)
    again = execute("data-exploration.ipynb", tmp_path)  # Run All again in the same folder
    assert [o for c in again.cells for o in c.get("outputs", []) if o.output_type == "error"] == []


@pytest.mark.timeout(240)
def test_the_churn_analysis_runs_headless_with_the_offline_model(tmp_path: Path) -> None:
    """The guide's data-work example: every step shows what a reader is told it shows."""
    nb = execute("churn-analysis.ipynb", tmp_path)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    out = {c.source.splitlines()[0]: outputs_text(c) for c in nb.cells if c.cell_type == "code"}
    ask = out["%larik --yes what drives churn here?"]
    assert "overall churn rate: 0.31" in ask and "month-to-month    0.418" in ask
    assert "by_calls: created Series 7 · by_contract: created Series 3" in ask
    assert "31% of these customers churned" in ask and "not found" not in ask  # every number traced
    band = next(c for c in nb.cells if c.source.startswith("%larik --yes add a tenure band"))
    assert "df: DataFrame 200×6 → 200×7, changed in place" in outputs_text(band)
    assert "data:image/png;base64," in outputs_text(band)  # the plot, under its call
    assert "restored variables: df" in out["%larik /undo"]
    assert "tenure_band" not in out["df.columns.tolist()"] and "'churned'" in out["df.columns.tolist()"]
    assert "the user's variables are protected and this code changes df" in out[
        "%larik --yes drop the customers who never called support"]
    assert out["len(df)"].strip() == "200"
    assert re.search(r"month-to-month\s+0\.418182\s+110", out["drivers.value"])
    assert out["drivers.value is rates"].strip() == "True"
    check = out["%larik /check churn-analysis.ipynb"]
    assert "No problems found" in check and "uses `drivers`, set by the %larik -o prompt" in check
    (info,) = list_sessions(tmp_path)
    written = re.search(r"[\w./-]*" + re.escape(info.id) + r"\.ipynb", out["%larik /notebook"])
    assert written is not None, out["%larik /notebook"]
    branch = nbformat.read(tmp_path / Path(written[0]).name, as_version=4)
    code = [c.source for c in branch.cells if c.cell_type == "code"]
    assert any("by_contract = df.groupby('contract')" in c for c in code)
    assert "Session `" in out["%larik /usage"]
    entries = load_entries(info.path).entries
    tools = [b.name for e in entries if e.message for b in e.message.tool_uses()]
    assert tools == ["inspect_variables", "python", "python", "python", "python", "answer"]
    # Run All again in the same folder: every cell runs again (the branch notebook gets a new name).
    again = execute("churn-analysis.ipynb", tmp_path)
    assert [o for c in again.cells for o in c.get("outputs", []) if o.output_type == "error"] == []
    assert len(list(tmp_path.glob("*-*-*.ipynb"))) == 2


def test_the_shipped_notebooks_carry_their_kernel_and_language_and_lab_brings_matplotlib() -> None:
    """JupyterLab fills in a missing `kernelspec`/`language_info` on opening, which marks a
    just-opened notebook modified; the agent's plots need matplotlib."""
    for path in NOTEBOOKS.glob("*.ipynb"):
        metadata = json.loads(path.read_text())["metadata"]
        assert metadata["kernelspec"]["name"] == "python3", path.name
        assert metadata["language_info"]["name"] == "python" and metadata["language_info"]["version"], path.name
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert any(req.startswith("matplotlib") for req in project["optional-dependencies"]["lab"])
