"""The four config layers, merged with provenance and trust.

Order (later wins for scalars; permission rules and `checkpoint_paths` accumulate):
`<config>/config.json` (personal, trusted), `<project>/.mcp.json` (shared, untrusted),
`<project>/.larik/settings.json` (shared, untrusted), `<config>/projects/<project-id>.json`
(personal, trusted). `.larik/settings.local.json` is never loaded. Each file is read by
`layer_file.py`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from larik_jupyter import paths
from larik_jupyter.config.instructions import display_path, load_instructions
from larik_jupyter.config.layer_file import read_layer
from larik_jupyter.config.model import Config, HookSpec, LspServer, McpServer
from larik_jupyter.config.skills import Skill, load_skills
from larik_jupyter.egress.policy import PolicyError, parse_policy, stricter

ApprovalKind = Literal["mcp", "hook", "allow-rule", "lsp"]

# Honoured only from personal files: they affect the whole machine or what the user trusts.
PERSONAL_ONLY = frozenset(
    {
        "checkpoint_retention_days", "providers", "debug", "approvals", "kernel_snapshot_budget_mb",
        "protect_variables",
    }
)
_NAMED: dict[str, tuple[ApprovalKind, type[McpServer] | type[LspServer]]] = {
    "mcpServers": ("mcp", McpServer),
    "lspServers": ("lsp", LspServer),
}
_ACCUMULATING = ("checkpoint_paths",)


@dataclass(frozen=True)
class Layer:
    """One config file: where it is, how it is shown, and whether its author is the user."""

    path: Path
    label: str
    trusted: bool


@dataclass(frozen=True)
class PendingApproval:
    """Something an untrusted layer declares that does nothing until the user approves it."""

    name: str
    kind: ApprovalKind
    definition: Any
    hash: str
    layer: str

    @property
    def key(self) -> str:
        """`kind:name`, unambiguous across kinds."""
        return f"{self.kind}:{self.name}"


@dataclass
class LoadedConfig:
    """The effective config of a working directory plus everything `/config` shows about it."""

    config: Config
    cwd: Path
    root: Path
    layers: list[Layer]
    sources: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    pending: list[PendingApproval] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # Each layer's file as it was when read (modification time and size, None: missing).
    stamp: tuple[tuple[int, int] | None, ...] = ()
    instructions: str = ""
    skills: list[Skill] = field(default_factory=list)

    def changed(self) -> bool:
        """Whether one of its files changed since it was read."""
        return layers_stamp(self.layers) != self.stamp

    def source_of(self, key: str) -> str | None:
        """The layer a dotted key's value came from (several joined by ", "); None for defaults."""
        if key in self.sources:
            return self.sources[key]
        below = list(dict.fromkeys(v for k, v in self.sources.items() if k.startswith(key + ".")))
        if below:
            return ", ".join(below)
        parent = key
        while "." in parent:
            parent = parent.rsplit(".", 1)[0]
            if parent in self.sources:
                return self.sources[parent]
        return None


def user_config_path() -> Path:
    """`<config>/config.json`: personal settings for every project."""
    return paths.config_dir() / "config.json"


def private_settings_path(root: str | os.PathLike[str]) -> Path:
    """`<config>/projects/<project-id>.json`: personal settings and approvals for one project."""
    return paths.config_dir() / "projects" / f"{paths.project_id(root)}.json"


def config_layers(root: Path) -> list[Layer]:
    """The four layers of a project root, in merge order."""
    user = user_config_path()
    private = private_settings_path(root)
    shared = [root / ".mcp.json", root / ".larik" / "settings.json"]
    return [
        Layer(user, display_path(user), True),
        *(Layer(p, display_path(p, root), False) for p in shared),
        Layer(private, display_path(private), True),
    ]


def layers_stamp(layers: list[Layer]) -> tuple[tuple[int, int] | None, ...]:
    """Each layer's file's modification time and size (None: missing): what says a config
    changed since it was read (`LoadedConfig.changed`)."""
    out: list[tuple[int, int] | None] = []
    for layer in layers:
        try:
            st = layer.path.stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


def definition_hash(definition: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of a definition: sorted keys, no spaces, UTF-8."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class _Merge:
    """Folds layers into one raw dict, remembering sources and what awaits approval."""

    approvals: dict[str, dict[str, str]]
    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    pending: list[PendingApproval] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def add(self, layer: Layer, raw: dict[str, Any]) -> None:
        for key, value in raw.items():
            if key in PERSONAL_ONLY and not layer.trusted:
                self.notices.append(
                    f"{layer.label}: `{key}` is ignored there; machine-wide settings and approvals "
                    "are honoured only from your personal config files."
                )
            elif key == "permissions":
                self._permissions(layer, value)
            elif key in _NAMED:
                self._named(layer, key, value)
            elif key == "hooks":
                self._hooks(layer, value)
            elif key == "egress":
                self._egress(layer, value)
            elif key in _ACCUMULATING:
                for item in value:
                    self._append(key, item, layer.label)
            else:
                self._set(self.data, key, value, key, layer.label)

    def _approved(self, kind: ApprovalKind, name: str, digest: str) -> bool:
        return self.approvals.get(kind, {}).get(name) == digest

    def _gate(self, layer: Layer, kind: ApprovalKind, name: str, definition: Any) -> bool:
        """Whether a trust-gated item takes effect; an unapproved one is recorded as pending."""
        digest = definition_hash(definition)
        if layer.trusted or self._approved(kind, name, digest):
            return True
        self.pending.append(PendingApproval(name, kind, definition, digest, layer.label))
        return False

    def _permissions(self, layer: Layer, value: dict[str, Any]) -> None:
        target = self.data.setdefault("permissions", {})
        for kind, rules in value.items():
            if kind not in ("allow", "ask", "deny"):
                # Unknown permission settings (say, a default mode) could loosen prompts.
                if layer.trusted:
                    self._set(target, kind, rules, f"permissions.{kind}", layer.label)
                else:
                    self.notices.append(f"{layer.label}: `permissions.{kind}` is ignored in a shared file.")
                continue
            for rule in rules:
                already = rule in target.get(kind, [])
                if kind == "allow" and not already and not self._gate(layer, "allow-rule", rule, rule):
                    continue
                self._append(f"permissions.{kind}", rule, layer.label, target, kind)

    def _named(self, layer: Layer, key: str, value: dict[str, Any]) -> None:
        kind, model = _NAMED[key]
        target = self.data.setdefault(key, {})
        for name, raw in value.items():
            definition = model.model_validate(raw).model_dump(mode="json", exclude_defaults=True)
            current = target.get(name)
            if current is not None and definition_hash(current) == definition_hash(definition):
                continue
            if self._gate(layer, kind, name, definition):
                target[name] = definition
                self._claim(f"{key}.{name}", layer.label)

    def _hooks(self, layer: Layer, value: dict[str, Any]) -> None:
        target = self.data.setdefault("hooks", {})
        for event, entries in value.items():
            for raw in entries:
                hook = HookSpec.model_validate(raw).model_dump(mode="json", exclude_defaults=True)
                definition = {"event": event, **hook}
                name = f"{event}:{definition_hash(definition)[:8]}"
                if hook in target.get(event, []) or not self._gate(layer, "hook", name, definition):
                    continue
                self._append(f"hooks.{event}", hook, layer.label, target, event)

    def _egress(self, layer: Layer, value: dict[str, Any]) -> None:
        """Personal files set the egress policy; a shared file's rules only tighten it: they
        go to `egress.repository`, where each meets the stricter of its earlier value."""
        if layer.trusted:
            self._set(self.data, "egress", {k: v for k, v in value.items() if k != "repository"}, "egress", layer.label)
            return
        floor = self.data.setdefault("egress", {}).setdefault("repository", {})
        loosening = [k for k in value if k not in ("default", "policies", "local_only")]
        if loosening:
            self.notices.append(f"{layer.label}: `egress.{loosening[0]}` is ignored in a shared file; it may only tighten.")
        if "default" in value:
            floor["default"] = _tightest(floor.get("default"), value["default"])
            self._claim("egress.repository.default", layer.label)
        for target, policy in value.get("policies", {}).items():
            floor.setdefault("policies", {})[target] = _tightest(floor.get("policies", {}).get(target), policy)
            self._claim(f"egress.repository.policies.{target}", layer.label)
        if value.get("local_only") is True:
            floor["local_only"] = True
            self._claim("egress.repository.local_only", layer.label)

    def _append(
        self, dotted: str, item: Any, label: str, target: dict[str, Any] | None = None, key: str | None = None
    ) -> None:
        target = self.data if target is None else target
        items = target.setdefault(key or dotted, [])
        if item not in items:
            items.append(copy.deepcopy(item))
            self.sources[f"{dotted}.{len(items) - 1}"] = label

    def _set(self, target: dict[str, Any], key: str, value: Any, dotted: str, label: str) -> None:
        """Later layers win; objects merge key by key so each leaf keeps its own source."""
        if isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
                self._claim(dotted, None if value else label)
            for sub, item in value.items():
                self._set(target[key], sub, item, f"{dotted}.{sub}", label)
        else:
            target[key] = copy.deepcopy(value)
            self._claim(dotted, label)

    def _claim(self, dotted: str, label: str | None) -> None:
        """Record `dotted` as set by `label`, forgetting sources of anything it replaced."""
        for stale in [k for k in self.sources if k.startswith(dotted + ".")]:
            del self.sources[stale]
        if label is None:
            self.sources.pop(dotted, None)
        else:
            self.sources[dotted] = label


def _tightest(earlier: Any, policy: Any) -> Any:
    """The stricter of two policy texts (an unparsable one is kept for validation to name)."""
    try:
        if earlier is None:
            return str(parse_policy(policy))
        return str(stricter(parse_policy(earlier), parse_policy(policy)))
    except (PolicyError, AttributeError):
        return policy


def _approvals(layers: list[Layer], raws: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    merged: dict[str, dict[str, str]] = {}
    for layer, raw in zip(layers, raws, strict=True):
        if layer.trusted:
            for kind, names in raw.get("approvals", {}).items():
                merged.setdefault(kind, {}).update(names)
    return merged


def load_config(cwd: str | os.PathLike[str]) -> LoadedConfig:
    """Merge the layers of `cwd`'s project, apply trust, and load the instruction files."""
    cwd_path = Path(os.path.abspath(os.fspath(cwd)))
    root = paths.project_root(cwd_path)
    layers = config_layers(root)
    stamp = layers_stamp(layers)  # before reading: a change made meanwhile is seen next time
    errors: list[str] = []
    raws = [read_layer(layer.path, layer.label, errors) for layer in layers]
    merge = _Merge(_approvals(layers, raws))
    for layer, raw in zip(layers, raws, strict=True):
        merge.add(layer, raw)
    try:
        config = Config.model_validate(merge.data)
    except ValidationError as exc:  # each layer was valid alone; guard the combination anyway
        errors.append(f"The merged configuration is invalid ({exc.error_count()} problems); defaults are used.")
        config = Config()
    instructions = load_instructions(cwd_path)
    return LoadedConfig(
        config=config,
        cwd=cwd_path,
        root=root,
        layers=layers,
        sources=merge.sources,
        stamp=stamp,
        errors=errors,
        pending=merge.pending,
        notices=merge.notices + instructions.notices,
        instructions=instructions.render(),
        skills=load_skills(root),
    )

