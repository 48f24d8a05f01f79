"""Errors the checkpoint store raises; each message names the path or session and what to do."""

from __future__ import annotations

from larik_jupyter.errors import LarikError


class CheckpointError(LarikError):
    """A checkpoint operation failed in a way the user can see and act on."""


class CaptureError(CheckpointError):
    """A file could not be snapshotted, so the write that asked for it must not happen."""


class NothingToUndoError(CheckpointError):
    """No saved turn changed any file."""
