"""The merged configuration as pydantic models; unknown keys are kept, never rejected."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from larik_jupyter.config.rules import RuleError, parse_rule
from larik_jupyter.egress.policy import Policy, PolicySet, check_target, parse_policy


def _check_rule(text: str) -> str:
    try:
        parse_rule(text)
    except RuleError as exc:  # pydantic reports ValueErrors with their location
        raise ValueError(str(exc)) from None
    return text


RuleText = Annotated[str, AfterValidator(_check_rule)]


class _Open(BaseModel):
    """A config object that keeps keys it does not know, so newer files load in older code."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())


class ProviderSettings(_Open):
    """Where a provider lives and which environment variable holds its key (never the key)."""

    base_url: str | None = None
    api_key_env: str | None = None


class ModelOverride(_Open):
    """Changes to one model's entry of the model table (`llm/models.py`); unset fields keep
    the table's value."""

    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    thinking: Literal["none", "budget", "adaptive"] | None = None
    reasoning: bool | None = None
    vision: bool | None = None
    max_images: int | None = Field(default=None, ge=0)
    max_image_bytes: int | None = Field(default=None, ge=0)
    cache_min_tokens: int | None = Field(default=None, ge=0)


class Permissions(_Open):
    """Permission rules such as `bash(git status:*)`, `write(src/**)`, `mcp__github__*`."""

    allow: list[RuleText] = Field(default_factory=list)
    ask: list[RuleText] = Field(default_factory=list)
    deny: list[RuleText] = Field(default_factory=list)


class McpServer(_Open):
    """An MCP server: a local command (stdio) or a URL (http/sse)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    type: str | None = None


class HookSpec(_Open):
    """A shell command run on an agent event; `matcher` selects tool names (empty: all)."""

    matcher: str = ""
    command: str
    timeout: float | None = None


class LspServer(_Open):
    """A language server started for files matching `patterns` or `languages`."""

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    patterns: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    initializationOptions: dict[str, Any] = Field(default_factory=dict)


class Compaction(_Open):
    """When to compact: at `threshold` of the context window, or at `max_tokens` if set."""

    enabled: bool = True
    threshold: float = Field(default=0.8, gt=0, le=1)
    max_tokens: int | None = Field(default=None, gt=0)


def _check_policy(text: str) -> str:
    parse_policy(text)  # a PolicyError is a ValueError: pydantic reports it with its key
    return text


PolicyText = Annotated[str, AfterValidator(_check_policy)]


def _check_targets(value: dict[str, str]) -> dict[str, str]:
    for target in value:
        check_target(target)
    return value


Policies = Annotated[dict[str, PolicyText], AfterValidator(_check_targets)]


class EgressFloor(_Open):
    """The egress rules of the repository's shared config: they only tighten (`layers.py`)."""

    default: PolicyText | None = None
    policies: Policies = Field(default_factory=dict)
    local_only: bool = False


class Egress(_Open):
    """What may leave the machine: a `default` policy for every variable and data file, a
    policy per variable, file or pattern (`policies`), and `local_only` (restricted data goes
    only to `ollama:`/`openai-compatible:` servers on this machine). `repository` holds the
    shared config's rules, which may only tighten these."""

    default: PolicyText = "full"
    policies: Policies = Field(default_factory=dict)
    local_only: bool = False
    repository: EgressFloor = Field(default_factory=EgressFloor)

    def policy_set(self) -> PolicySet:
        """The rules as a `PolicySet` the door and the tools read."""
        floor = self.repository
        policies = PolicySet(
            default=parse_policy(self.default),
            default_origin="personal config" if self.default != "full" else "default",
            floor={t: parse_policy(p) for t, p in floor.policies.items()},
            floor_default=parse_policy(floor.default) if floor.default else Policy("full"),
            local_only=self.local_only,
            floor_local_only=floor.local_only,
        )
        for target, text in self.policies.items():
            policies.set(target, parse_policy(text), "personal config")
        return policies


class Config(_Open):
    """The effective configuration after merging the layers and applying trust."""

    model: str | None = Field(
        default=None, description="PROVIDER:MODEL used when a prompt names none, e.g. `anthropic:claude-sonnet-4-6`."
    )
    providers: dict[str, ProviderSettings] = Field(
        default_factory=dict,
        description="Per provider (`anthropic`, `openai`, `ollama`, `openai-compatible`): `base_url` and "
        "`api_key_env`, the environment variable holding its key.",
    )
    models: dict[str, ModelOverride] = Field(
        default_factory=dict,
        description="Model id or prefix -> changes to that model's entry of the model table "
        "(context window, output limit, thinking, vision, ...).",
    )
    # Negative keeps checkpoints forever (spec: "Retention").
    checkpoint_retention_days: int = Field(
        default=7, description="Days a turn's checkpoint (for undo) is kept; negative keeps them forever."
    )
    permissions: Permissions = Field(
        default_factory=Permissions,
        description="Rules that allow, ask or deny tool calls, e.g. `bash(git status:*)`, `write(src/**)`.",
    )
    checkpoint_paths: list[str] = Field(
        default_factory=list, description="Project files, folders or globs a `bash` call snapshots first, so /undo covers them."
    )
    mcpServers: dict[str, McpServer] = Field(
        default_factory=dict, description="MCP servers by name: a `command` with `args` and `env`, or a `url`."
    )
    hooks: dict[str, list[HookSpec]] = Field(
        default_factory=dict,
        description="Shell commands run on `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`.",
    )
    lspServers: dict[str, LspServer] = Field(
        default_factory=dict, description="Language servers by name, for the files they match."
    )
    compaction: Compaction = Field(
        default_factory=Compaction, description="When the model context is summarised to free room."
    )
    max_steps: int = Field(default=40, gt=0, description="Model calls one turn may make at most.")
    max_subagents: int = Field(
        default=4, ge=0, description="Subagents (`task` tool) running at once; 0 removes the tool."
    )
    debug: bool = Field(default=False, description="Write a debug trace of events and HTTP bodies.")
    # Memory the python tool's per-turn variable snapshots (for undo) may take.
    kernel_snapshot_budget_mb: int = Field(
        default=512, ge=0, description="Memory (MB) the in-kernel copies of variables for undo may take per turn."
    )
    # Protect mode: python code that changes an existing user variable always asks first.
    protect_variables: bool = Field(
        default=False, description="Protect mode: code that would change an existing variable asks first."
    )
    egress: Egress = Field(
        default_factory=Egress,
        description="What may leave the machine: a policy per variable, file and pattern, a default for all, and local models only.",
    )
    # kind ("mcp", "hook", "allow-rule", "lsp") -> name -> sha256 of the approved definition.
    approvals: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="What you approved from a repository's shared files (written by `approve`).",
    )

    @field_validator("hooks", mode="before")
    @classmethod
    def _flatten_hooks(cls, value: Any) -> Any:
        return flatten_hooks(value)

    @property
    def mcp_servers(self) -> dict[str, McpServer]:
        """`mcpServers` under its Python spelling."""
        return self.mcpServers


def flatten_hooks(value: Any) -> Any:
    """Accept Claude's nested hook form `{matcher, hooks: [{type, command, timeout}]}` too."""
    if not isinstance(value, dict):
        return value
    flat: dict[str, Any] = {}
    for event, entries in value.items():
        if not isinstance(entries, list):
            flat[event] = entries
            continue
        flat[event] = []
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                for inner in entry["hooks"]:
                    if isinstance(inner, dict):
                        inner = {k: v for k, v in inner.items() if k != "type"}
                        flat[event].append({"matcher": entry.get("matcher", ""), **inner})
                    else:
                        flat[event].append(inner)
            else:
                flat[event].append(entry)
    return flat
