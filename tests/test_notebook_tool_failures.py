"""In a real kernel under nbclient, `%%larik`/`%larik` cells with a scripted model: kernel
values that raise from their reprs, their `__class__` or `__len__`, code too deep for the
variable scan, names set behind the scan's back (put back by undo) and uncopyable copies all
end as results the model reads and an undo report the user reads; `--with` never blocks on a FIFO; no cell shows
a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter.llm.messages import TextBlock
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, scripted, tool
from tests.test_notebook_kernel_undo import client, run_cells

SETUP = '''
import os, sys
class NoPng:
    def _repr_png_(self): raise ValueError("no png today")
    def __repr__(self): return "NoPng()"
class NoClass:
    @property
    def __class__(self): raise RuntimeError("no class")
class NoLen:
    def __len__(self): raise ValueError("no len")
class Same:
    def __init__(self): self.v = 1
    def __deepcopy__(self, memo): return self
picture, odd, sized, same = NoPng(), NoClass(), NoLen(), Same()
y = w = q = 0
os.mkfifo("pipe")
'''
DEEP = "q = " + " + ".join(["1"] * 1500) + "\nq"
BEHIND = "globals()['y'] = 2\nexec('z = 3')\nsetattr(sys.modules[__name__], 'w', 4)"


@pytest.mark.timeout(300)
def test_failing_values_deep_code_and_hidden_names_in_a_kernel(project: Path, tmp_path: Path) -> None:
    model = scripted(
        tmp_path,
        [tool("python", code="picture"), tool("python", code="odd.x = 1"), tool("inspect_variables"),
         tool("python", code="same.v = 2"), tool("python", code=BEHIND), tool("python", code=DEEP)],
        done("Carried on."),
    )
    attached = scripted(tmp_path, done("Seen."))
    nbc = client(project, [
        "%load_ext larik_jupyter", SETUP,
        f"%%larik --model {model} --yes\nwork on the variables",
        "print(y, w, q, same.v, 'z' in globals())",
        "%larik /undo",
        "print(y, w, q, same.v, 'z' in globals())",
        f"%larik --model {attached} --with pipe look",
        f"%larik --model {attached} --with sized,picture look",
    ])
    nbc.allow_errors = True  # a user mistake is a one-line UsageError on stderr, checked below
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    for cell in nbc.nb.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", output
            assert "Traceback" not in str(output) and "File " not in str(output), output
    assert texts[6].startswith("UsageError: --with ")
    assert texts[6].rstrip().endswith("pipe: it is a FIFO, not a regular file; attach a file, variable or figure.")
    assert "Carried on." in texts[2]
    assert texts[3].split() == ["2", "4", "1500", "2", "True"]
    undo = texts[4]
    assert "removed: z" in undo
    assert "same (its copy is the original object)" in undo
    # Rebound behind the scan's back (globals(), setattr on the module): their objects go back.
    assert "restored variables: y, w" in undo and "Prompt 1 was only partly undone:" in undo
    assert "q (not covered: the code that changed it could not be scanned" in undo
    assert "odd (it cannot be copied: RuntimeError (no class))" in undo
    assert texts[5].split() == ["0", "0", "1500", "2", "False"]

    messages = [e.message for s in list_sessions(project) for e in load_entries(s.path).entries if e.message]
    results = [r.text() for m in messages for r in m.tool_results()]
    assert results[0].startswith("NoPng()\n[not shown to the user as rich output: its _repr_png_ raised ValueError (no png today)]")
    assert "odd: NoClass" in results[2] and "sized: NoLen, its size unknown (ValueError (no len))" in results[2]
    assert results[5].startswith("1500\n[undo: this code is nested too deeply to scan")
    sent = "\n".join(b.text for m in messages for b in m.content if isinstance(b, TextBlock))
    assert "Variable `sized`: NoLen, its size unknown (ValueError (no len))" in sent
    assert "(no image: drawing it raised ValueError (no png today))" in sent
