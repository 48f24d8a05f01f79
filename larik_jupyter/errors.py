"""The base of every error a user can cause; front ends show its message as one line."""

from __future__ import annotations


class LarikError(Exception):
    """A failure the user caused or can fix; its message says what happened and what to do."""
