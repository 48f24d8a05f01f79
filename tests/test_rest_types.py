"""The sidebar's types for the REST API are generated from the server's models, as the bridge's
are from its declaration: a model changed without regenerating them fails here."""

from __future__ import annotations

import re
from pathlib import Path

from larik_jupyter.frontends.server.schema import typescript
from larik_jupyter.session.branch import TreeNode

REST_TS = Path(__file__).resolve().parent.parent / "labextension" / "src" / "rest.ts"


def test_the_sidebars_rest_types_are_generated_from_the_server_models() -> None:
    assert REST_TS.read_text(encoding="utf-8") == typescript(), (
        "run: python -m larik_jupyter.frontends.server.schema > labextension/src/rest.ts"
    )


def test_the_tree_node_type_has_every_field_the_server_sends_and_no_other() -> None:
    declared = re.search(r"export interface TreeNode \{\n(.*?)\n\}", typescript(), re.S)
    assert declared is not None
    fields = [line.strip().split(":")[0] for line in declared[1].splitlines()]
    assert fields == [name for name in TreeNode.model_fields if name != "path"]
