"""The configured decision for a tool call: a config's permission rules (`rules.py`) read
against the call, deny before ask before allow."""

from __future__ import annotations

import os

from larik_jupyter.config.layers import LoadedConfig
from larik_jupyter.config.model import Config
from larik_jupyter.config.rules import CallSubject, Decision, allowed, allowing, call_of, parse_rule


def allowed_by(config: LoadedConfig, subject: CallSubject) -> list[str]:
    """The allow rules that let a call run without asking (as written in the config), for the
    call's row to name them; empty when no rule allows it."""
    call = call_of(subject, config.root, config.cwd)
    return allowing(call, (parse_rule(text) for text in config.config.permissions.allow))


def decide(
    config: Config | LoadedConfig,
    subject: CallSubject,
    *,
    root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Decision | None:
    """The configured decision for a call: deny beats ask beats allow; None when no rule applies.

    Given a LoadedConfig, paths are resolved against its working directory and project root.
    """
    if not isinstance(config, Config):
        root = config.root if root is None else root
        cwd = config.cwd if cwd is None else cwd
        config = config.config
    call = call_of(subject, root, cwd)
    permissions = config.permissions
    if any(parse_rule(text).touches(call) for text in permissions.deny):
        return "deny"
    if any(parse_rule(text).touches(call) for text in permissions.ask):
        return "ask"
    if allowed(call, (parse_rule(text) for text in permissions.allow)):
        return "allow"
    return None
