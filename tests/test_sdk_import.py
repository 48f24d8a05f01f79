"""The SDK import: re-export packages resolve their names on first use, everything else as usual."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_python(code: str, *paths: Path) -> dict:
    """Run `code` in a fresh interpreter (its own sys.modules); it prints one JSON object."""
    env_path = ":".join(str(p) for p in (REPO, *paths))
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=120, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_anthropic_sdk_loads_only_the_models_it_touches_and_still_finds_every_name() -> None:
    seen = run_python(
        """
        import json, sys
        from larik_jupyter.llm.sdk_import import import_sdk
        anthropic = import_sdk("anthropic")
        beta = sys.modules["anthropic.types.beta"]
        loaded_before = sum(1 for m in sys.modules if m.startswith("anthropic."))
        message = beta.BetaMessage
        from anthropic.types.beta.beta_message import BetaMessage
        try:
            beta.NoSuchModel
            missing = None
        except AttributeError as exc:
            missing = str(exc)
        namespace = {}
        exec("from anthropic.types import *", namespace)
        client = anthropic.Anthropic(api_key="x")
        print(json.dumps({
            "loaded": loaded_before, "same": message is BetaMessage,
            "listed": "BetaMessage" in dir(beta), "missing": missing,
            "star": "Message" in namespace and "TextBlock" in namespace,
            "client": type(client.messages).__name__,
        }))
        """
    )
    plain = run_python(
        """
        import json, sys
        import anthropic
        print(json.dumps({"loaded": sum(1 for m in sys.modules if m.startswith("anthropic."))}))
        """
    )
    assert seen["loaded"] < plain["loaded"] * 0.9, (seen["loaded"], plain["loaded"])
    assert seen["same"] and seen["listed"] and seen["star"]
    assert seen["missing"] == "module 'anthropic.types.beta' has no attribute 'NoSuchModel'"
    assert seen["client"] == "Messages"


@pytest.fixture
def fake_sdk(tmp_path: Path) -> Path:
    """A package `fakesdk` with one re-export package, one that does more, and one whose name
    shadows a submodule."""
    root = tmp_path / "fakesdk"
    (root / "types").mkdir(parents=True)
    (root / "__init__.py").write_text("from . import types\n")
    (root / "types" / "__init__.py").write_text(
        "from __future__ import annotations\n\n"
        "from .alpha import Alpha as Alpha\n"
        "from .beta import (\n    Beta as Beta,\n    BETA_VALUES as BETA_VALUES,\n)\n"
        "__all__ = ['Alpha', 'Beta']\n"
    )
    (root / "types" / "alpha.py").write_text("import sys\nsys.stdout.write('')\nclass Alpha: ...\n")
    (root / "types" / "beta.py").write_text("class Beta: ...\nBETA_VALUES = (1, 2)\n")
    (root / "types" / "data.txt").write_text("package data")
    (root / "busy").mkdir()
    (root / "busy" / "__init__.py").write_text("from .one import One as One\nRAN = True\n")
    (root / "busy" / "one.py").write_text("class One: ...\n")
    (root / "shadow").mkdir()
    (root / "shadow" / "__init__.py").write_text("from .part import part as part\n")
    (root / "shadow" / "part.py").write_text("def part():\n    return 'the function'\n")
    return tmp_path


def test_a_reexport_package_imports_a_submodule_when_its_name_is_first_used(fake_sdk: Path) -> None:
    seen = run_python(
        """
        import json, sys
        from larik_jupyter.llm.sdk_import import import_sdk
        sdk = import_sdk("fakesdk")
        before = sorted(m for m in sys.modules if m.startswith("fakesdk.types."))
        alpha = sdk.types.Alpha
        after = sorted(m for m in sys.modules if m.startswith("fakesdk.types."))
        from fakesdk.types import BETA_VALUES
        namespace = {}
        exec("from fakesdk.types import *", namespace)
        import importlib.resources
        data = importlib.resources.files("fakesdk.types").joinpath("data.txt").read_text()
        print(json.dumps({"before": before, "after": after, "alpha": alpha.__module__, "data": data,
                          "values": list(BETA_VALUES), "star": sorted(k for k in namespace if not k.startswith("__"))}))
        """,
        fake_sdk,
    )
    assert seen["before"] == []
    assert seen["after"] == ["fakesdk.types.alpha"]
    assert seen["alpha"] == "fakesdk.types.alpha"
    assert seen["values"] == [1, 2]
    assert seen["star"] == ["Alpha", "Beta"]  # the package's own __all__
    assert seen["data"] == "package data"  # the rest of the loader protocol is the file loader's


def test_a_package_that_does_more_or_shadows_a_submodule_is_imported_as_usual(fake_sdk: Path) -> None:
    seen = run_python(
        """
        import json, sys
        from larik_jupyter.llm.sdk_import import import_sdk
        import_sdk("fakesdk")
        import fakesdk.busy, fakesdk.shadow
        import fakesdk.shadow.part
        print(json.dumps({"ran": fakesdk.busy.RAN, "one": "fakesdk.busy.one" in sys.modules,
                          "part": fakesdk.shadow.part()}))
        """,
        fake_sdk,
    )
    assert seen == {"ran": True, "one": True, "part": "the function"}
