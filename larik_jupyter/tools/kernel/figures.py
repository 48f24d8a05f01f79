"""Images of Python objects: matplotlib figures and anything with `_repr_png_` / `_repr_jpeg_`.

matplotlib is never imported here; figures are found only when the user's code already
imported `matplotlib.pyplot`.
"""

from __future__ import annotations

import base64
import io
import sys
from typing import Any


def is_figure(value: object) -> bool:
    """A matplotlib figure (or anything that saves itself like one)."""
    # Looked up on the type: an object whose own attribute lookup raises is just not a figure.
    return callable(getattr(type(value), "savefig", None)) and hasattr(type(value), "get_axes")


def figure_of(value: object) -> object | None:
    """The figure `value` is or draws into (an Axes, an artist), if any."""
    if is_figure(value):
        return value
    try:
        figure = getattr(value, "figure", None)
    except Exception:  # an object whose attribute lookup raises draws into no figure
        return None
    return figure if is_figure(figure) else None


def _as_bytes(data: Any) -> bytes | None:
    if isinstance(data, tuple):  # (data, metadata)
        data = data[0]
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        try:
            return base64.b64decode(data)
        except ValueError:
            return None
    return None


def image_of(value: object) -> tuple[bytes, str] | None:
    """PNG or JPEG bytes of `value` with their media type, or None when it has no image."""
    figure = figure_of(value)
    if figure is not None:
        out = io.BytesIO()
        figure.savefig(out, format="png", bbox_inches="tight")  # type: ignore[attr-defined]
        return out.getvalue(), "image/png"
    for method, media in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg")):
        if callable(getattr(type(value), method, None)):
            data = _as_bytes(getattr(value, method)())
            if data:
                return data, media
    return None


def image_in(bundle: dict[str, Any]) -> tuple[bytes, str] | None:
    """The PNG or JPEG bytes of a displayed mime bundle, with their media type, if it has one."""
    for media in ("image/png", "image/jpeg"):
        data = _as_bytes(bundle.get(media))
        if data:
            return data, media
    return None


def has_svg_only(value: object) -> bool:
    """An object that renders only as SVG (sent as a note, not an image)."""
    return callable(getattr(type(value), "_repr_svg_", None)) and image_of(value) is None


def open_figures() -> list[object]:
    """matplotlib's open figures, oldest first, when pyplot is in use (without touching
    which one is current)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return []
    return [manager.canvas.figure for manager in helpers.Gcf.get_all_fig_managers()]


def drawn_figures(before: list[object]) -> list[object]:
    """The open figures a piece of code created or changed since `before` was taken."""
    known = {id(f) for f in before}
    return [f for f in open_figures() if id(f) not in known or getattr(f, "stale", False)]


def close_shown(figures: list[object]) -> None:
    """Close `figures`, which a call's row shows, when the inline backend would otherwise draw
    them again at the end of the cell, below everything (as it closes what it draws)."""
    if not figures or "matplotlib.pyplot" not in sys.modules or "inline" not in str(sys.modules["matplotlib"].get_backend()):
        return
    import matplotlib.pyplot as plt

    for figure in figures:
        plt.close(figure)  # type: ignore[arg-type]
