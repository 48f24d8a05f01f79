"""Every `%larik` command, flag, `larik-jupyter` subcommand, config key and tool the README and
the guide name exists: the names are read out of the docs' code (inline and blocks) and looked
up in the registries the code declares them in."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.agent.subagents import TaskTool
from larik_jupyter.config.model import Config
from larik_jupyter.frontends.cli import build_parser
from larik_jupyter.frontends.mcp.server import VIEW_TOOLS
from larik_jupyter.frontends.notebook.commands import COMMANDS
from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.frontends.notebook.parser import prompt_options
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.registry import BUILTIN_TOOLS
from larik_jupyter.tools.skill import SkillTool

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]

TOOL_CLASSES: list[type[Tool]] = [*BUILTIN_TOOLS, TaskTool, SkillTool]
# The agent's tools, and the views the MCP server offers outside agents besides them.
TOOLS = {cls.name for cls in TOOL_CLASSES} | set(VIEW_TOOLS)
PROMPT_FLAGS = {flag for action in prompt_options()._actions for flag in action.option_strings}
# A command's flags: its declared arguments', and those its usage names (a command that parses
# its own words, such as `/egress`, declares them there).
COMMAND_FLAGS = {
    name: {f for a in spec.arguments for f in a.flags if f.startswith("-")} | set(re.findall(r"--?[a-z][\w-]*", spec.usage))
    for name, spec in COMMANDS.items()
}
_SUB = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
CLI_FLAGS = {name: {f for a in p._actions for f in a.option_strings} for name, p in _SUB.choices.items()}
TRAITS = set(LarikMagics.class_traits(config=True))
ALL_FLAGS = PROMPT_FLAGS.union(*COMMAND_FLAGS.values(), *CLI_FLAGS.values())

# Names in backticks that look like config keys or tools but are neither: fields of results and
# records, protocol fields, and names of other programs; each one is what the docs say it is.
OTHER_NAMES = {
    "larik_jupyter",  # the package
    "max_completion_tokens", "cache_control",  # request fields OpenAI's and Anthropic's APIs take
    "api_key_env", "base_url",  # provider settings, checked as `providers.<name>.…`
    "exit_status", "session_id", "to_notebook", "to_dataframe", "skip_changed", "tool_calls",
    "files_changed", "default_permission", "needs_kernel",  # Python API names
    "get_ipython",  # IPython's, among the names -o refuses
    "clientInfo",  # the MCP initialize request's field naming the client
}
# Options of other programs the docs show (JupyterLab's).
OTHER_FLAGS = {"--allow-root"}


def code_spans(text: str) -> list[str]:
    """Inline code and each line of fenced code blocks."""
    spans: list[str] = []
    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
    for block in fenced.findall(text):
        spans += [line.split("#", 1)[0].strip() for line in block.splitlines()]
    spans += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", fenced.sub("", text))]
    return [s for s in spans if s]


def json_objects(text: str) -> list[object]:
    """JSON blocks, and inline code that is a JSON object or one `"key": value` of one."""
    found = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", text, re.M | re.S)]
    for span in code_spans(text):
        for candidate in (span, "{" + span + "}"):
            try:
                found.append(json.loads(candidate))
                break
            except ValueError:
                continue
    return found


# The keys of the scripted model's format (docs/format.md, Scripted models), shown beside config.
SCRIPT_KEYS = {"responses", "content"}


def config_paths(value: object, prefix: str = "") -> list[str]:
    """The dotted paths to the leaves of a JSON object shown as config; none for a script."""
    if not isinstance(value, dict) or (not prefix and set(value) & SCRIPT_KEYS):
        return [prefix] if prefix else []
    return [path for key, inner in value.items() for path in config_paths(inner, f"{prefix}.{key}" if prefix else key)]


def words(span: str) -> list[str]:
    try:
        return shlex.split(span)
    except ValueError:
        return span.split()


def _has_path(annotation: Any, parts: list[str]) -> bool:
    """Whether `parts` leads somewhere in a value of this type: a model's fields by name, a
    mapping by any key (which may hold dots, as `models.qwen2.5-coder` does), a list by index."""
    if not parts:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_has_path(a, parts) for a in args)
    if origin is dict:
        return any(_has_path(args[1], parts[k:]) for k in range(1, len(parts) + 1))
    if origin is list:
        return parts[0].isdigit() and _has_path(args[0], parts[1:])
    fields = getattr(annotation, "model_fields", None)
    return fields is not None and parts[0] in fields and _has_path(fields[parts[0]].annotation, parts[1:])


def config_path_exists(path: str) -> bool:
    """`a.b.c` names a key of the config model (`<name>` stands for any key of a mapping)."""
    return _has_path(Config, path.split("."))


def problems_of(span: str) -> list[str]:
    found: list[str] = []
    ws = words(span)
    magic = next((i for i, w in enumerate(ws) if w in ("%larik", "%%larik")), None)
    if magic is not None:
        rest = ws[magic + 1:]
        if rest and rest[0].startswith("/"):
            name = rest[0][1:]
            if name not in COMMANDS:
                found.append(f"no command /{name}")
            flags = COMMAND_FLAGS.get(name, set())
            if name == "config" and len(rest) > 1 and not rest[1].isupper() and not config_path_exists(rest[1]):
                found.append(f"no config key {rest[1]}")
        else:
            flags = PROMPT_FLAGS
        found += [f"{w} is not an option here" for w in rest if re.fullmatch(r"--?[a-z][\w-]*", w) and w not in flags]
        return found
    if ws and ws[0] == "larik-jupyter" and len(ws) > 1:
        sub = ws[1] if len(ws) > 1 else ""
        if sub not in CLI_FLAGS:
            return [f"no subcommand larik-jupyter {sub}"]
        return [f"{w} is not an option of {sub}" for w in ws[2:]
                if re.fullmatch(r"\[?--?[a-z][\w-]*\]?", w) and w.strip("[]") not in CLI_FLAGS[sub]]
    trait = re.search(r"LarikMagics\.(\w+)", span)
    if trait:
        return [] if trait[1] in TRAITS else [f"LarikMagics has no trait {trait[1]}"]
    command = re.fullmatch(r"/([a-z]+)(?: .*)?", span)
    if command and "/" not in span[1:]:
        name = command[1]
        if name not in COMMANDS:
            found.append(f"no command /{name}")
        found += [f"{w} is not an option of /{name}" for w in ws[1:]
                  if re.fullmatch(r"--?[a-z][\w-]*", w) and w not in COMMAND_FLAGS.get(name, set())]
        return found
    flag = re.fullmatch(r"(--?[a-z][\w-]*)(?: [^-].*)?", span)
    if flag and flag[1] not in ALL_FLAGS | OTHER_FLAGS:
        return [f"no command or subcommand takes {flag[1]}"]
    key = re.fullmatch(r"[a-z][A-Za-z0-9]*(?:_[a-z0-9]+)+|[a-z][A-Za-z]+\.[\w.<>-]+|[a-z]+[A-Z]\w*", span)
    if key and span not in TOOLS and span not in OTHER_NAMES:
        head = span.split(".")[0]
        if head in Config.model_fields or "." not in span:
            if not config_path_exists(span):
                return [f"{span} is neither a config key nor a tool"]
    return []


def tool_mentions(text: str) -> list[str]:
    """Names the prose calls tools: "the `X` tool", "its `X` tool", "`X` calls"."""
    return re.findall(r"`([a-z_]+)`\s+(?:tool\b|tools\b|calls?\b)", text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_name_in_the_docs_exists(doc: Path) -> None:
    text = doc.read_text()
    found = [f"`{span}`: {problem}" for span in code_spans(text) for problem in problems_of(span)]
    found += [f"`{name}` is called a tool but none has that name" for name in tool_mentions(text) if name not in TOOLS]
    for block in json_objects(text):
        found += [f"JSON {path} is not a config key" for path in config_paths(block) if not config_path_exists(path)]
    assert found == []


def test_the_check_catches_a_name_that_does_not_exist() -> None:
    assert problems_of("%larik /undo --all") == ["--all is not an option here"]
    assert problems_of("%larik /checkk") == ["no command /checkk"]
    assert problems_of("%larik --yess what now?") == ["--yess is not an option here"]
    assert problems_of("larik-jupyter replay ID --fast") == ["--fast is not an option of replay"]
    assert problems_of("larik-jupyter reply ID") == ["no subcommand larik-jupyter reply"]
    assert problems_of("protect_variable") == ["protect_variable is neither a config key nor a tool"]
    assert problems_of("compaction.treshold") == ["compaction.treshold is neither a config key nor a tool"]
    assert problems_of("%larik /config max_step 60") == ["no config key max_step"]
    assert problems_of("--in-placе") != []
    assert problems_of("c.LarikMagics.protected = True") == ["LarikMagics has no trait protected"]
    assert tool_mentions("its `answr`\ntool") == ["answr"]
    assert code_spans("with `%larik /config protect_variables\ntrue` in") == ["%larik /config protect_variables true"]
    assert json_objects('`"protect_variable": true`') == [{"protect_variable": True}]
    assert config_paths({"models": {"qwen2.5-coder": {"vision": True}}, "max_step": 3}) == [
        "models.qwen2.5-coder.vision", "max_step"]
    assert [config_path_exists(p) for p in ("models.qwen2.5-coder.vision", "max_step")] == [True, False]
    for fine in ("%larik /undo --to 2", "protect_variables", "compaction.threshold", "notebook_check",
                 "providers.openai-compatible.base_url", "larik-jupyter replay ID --rtol 0.01"):
        assert problems_of(fine) == [], fine


def slug(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize(
    "doc", [*DOCS, *sorted((REPO / "docs" / "reference").glob("*.md"))], ids=lambda p: p.relative_to(REPO).as_posix()
)
def test_every_link_between_the_docs_leads_somewhere(doc: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(f"{target}: no such heading")
    assert broken == []
