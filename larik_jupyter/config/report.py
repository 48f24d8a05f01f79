"""The merged config as text: each value with its source layer, errors, notices, pending approvals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from larik_jupyter.config.layers import LoadedConfig, PendingApproval

# Lists whose items come from different layers, so each item shows its own source.
_PER_ITEM = ("permissions", "checkpoint_paths", "hooks")


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted keys and leaf values; empty objects and lists are leaves."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value and prefix.split(".")[0] in _PER_ITEM:
        for index, item in enumerate(value):
            yield f"{prefix}.{index}", item
    else:
        yield prefix, value


def _pending_line(item: PendingApproval) -> str:
    return f"  {item.key}  (from {item.layer}): {json.dumps(item.definition, ensure_ascii=False)}"


def render(loaded: LoadedConfig, key: str | None = None) -> str:
    """The text `larik-jupyter config` prints: values with sources, errors, notices, pending."""
    lines = [f"project root: {loaded.root}", "layers:"]
    lines += [
        f"  {layer.label}  ({'personal, trusted' if layer.trusted else 'shared, untrusted'}"
        f"{'' if layer.path.exists() else ', absent'})"
        for layer in loaded.layers
    ]
    lines.append("values:")
    data = loaded.config.model_dump(mode="json", exclude_none=True)
    for name, value in _leaves(data):
        if key and name != key and not name.startswith(key + "."):
            continue
        source = loaded.source_of(name)
        where = f"from {source}" if source else "default"
        lines.append(f"  {name} = {json.dumps(value, ensure_ascii=False)}  ({where})")
    for title, items in (("errors:", loaded.errors), ("notices:", loaded.notices)):
        if items:
            lines.append(title)
            lines += [f"  {item}" for item in items]
    if loaded.pending:
        lines.append("awaiting approval (larik-jupyter approve NAME):")
        lines += [_pending_line(item) for item in loaded.pending]
    return "\n".join(lines)
