"""Widgets of the notebook front end: thin views over the session layer."""

import pathlib
from typing import Any

_HERE = pathlib.Path(__file__).parent


def esm(name: str) -> str:
    """Widget `name`'s ES module with the helpers every session widget shares before it
    (anywidget loads each module from a blob, so they cannot import a shared file)."""
    return (_HERE / "shared.js").read_text() + "\n" + (_HERE / f"{name}.js").read_text()


def with_fallback(bundle: Any, *, html: str | None = None, text: str | None = None) -> Any:
    """A widget's mimebundle with static renderings added, for pages without the widget
    manager (GitHub, nbconvert, a closed kernel). ipywidgets returns the data dict,
    anywidget a (data, metadata) pair; both are handled."""
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    if isinstance(data, dict):
        if html is not None:
            data["text/html"] = html
        if text is not None:
            data["text/plain"] = text
    return bundle


class SilentWhenStatic:
    """Mixin for widgets that static renderers (GitHub, nbconvert) should skip: their text
    fallback is empty because what they show is already in the transcript."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return with_fallback(super()._repr_mimebundle_(**kwargs), text="")  # type: ignore[misc]
