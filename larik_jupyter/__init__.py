"""larik_jupyter: a coding agent that lives in a Jupyter kernel."""

from __future__ import annotations

__version__ = "0.1.0"
