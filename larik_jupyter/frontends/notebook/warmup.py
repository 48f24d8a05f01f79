"""What a kernel does in the background once `%larik` is loaded: warm the notebook tools, the
chosen provider's SDK and the agent's modules, then prune old checkpoints.

`%load_ext` itself only registers the magics; this work starts on a daemon thread when the
loading cell has finished (or at the first `%larik` line, whichever comes first), so it never
delays the load, and a turn never waits for the prune. Importing in a thread is safe: a turn
that needs a module being imported here waits for that import instead of repeating it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import io
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.api import LarikError

if TYPE_CHECKING:
    from larik_jupyter.api import SdkProvider

# What the first turn imports besides the SDK: the agent stack, the turn's views and widgets
# (anywidget among them), and the notebook context it gathers.
_TURN_MODULES = (
    "larik_jupyter.api",
    "larik_jupyter.frontends.notebook.view",
    "larik_jupyter.frontends.notebook.commands",
    "larik_jupyter.frontends.notebook.turn_ui",
    "larik_jupyter.frontends.notebook.widgets.approval",
    "larik_jupyter.frontends.notebook.widgets.trust",
    "larik_jupyter.frontends.notebook.context",
    "larik_jupyter.frontends.notebook.attachments",
    "larik_jupyter.frontends.notebook.interrupt",
    "larik_jupyter.frontends.notebook.reattach",
    "larik_jupyter.frontends.notebook.terminal",
    "larik_jupyter.tools.notebook.cells",
)


class Warmup:
    """One kernel's background start: `start()` is idempotent; `notices()` hands over (once)
    what the user should read, for the next `%larik` to show."""

    def __init__(self, cwd: Callable[[], Path], model: Callable[[], str | None]) -> None:
        self._cwd = cwd
        self._model = model
        self._lock = threading.Lock()
        self._notices: list[str] = []
        self.thread: threading.Thread | None = None

    def start(self, model: str | None = None) -> None:
        """Start the background work unless it already runs; `model` is the `--model` of the
        line about to run, if any."""
        with self._lock:
            if self.thread is not None:
                return
            self.thread = threading.Thread(
                target=self._run, args=(model,), name="larik-warmup", daemon=True
            )
        self.thread.start()

    def after_cell(self, shell: Any) -> None:
        """Start once the cell running now has finished (the `%load_ext` cell)."""

        def started(*_: Any) -> None:
            shell.events.unregister("post_run_cell", started)
            # At once: the SDK's import takes about as long as a user pauses before the first
            # prompt, so every moment of delay lands on the first turn.
            self.start()

        shell.events.register("post_run_cell", started)

    def notices(self) -> list[str]:
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    def _run(self, model: str | None) -> None:
        from larik_jupyter.api import load_config
        from larik_jupyter.api import prune_checkpoints as prune

        with _collector_paused():
            # First, and quick (0.3 s): the SDK's import below is what a turn waits for, so
            # this is ready before any notebook call can come.
            try:
                warm_notebooks()
            except (ImportError, OSError, RuntimeError, ValueError):
                pass  # the first notebook call prepares them itself, and reports what fails
            try:
                config = load_config(self._cwd()).config
            except (LarikError, OSError) as exc:
                self._notice(f"Could not prune old checkpoints: {exc}")
                return
            warm_sdk(model or self._model(), config)
            for name in _TURN_MODULES:
                importlib.import_module(name)
        try:
            # Retention is a machine-wide setting: the loader honours it only from personal files.
            prune(config.checkpoint_retention_days)
        except (LarikError, OSError) as exc:
            self._notice(f"Could not prune old checkpoints: {exc}")

    def _notice(self, text: str) -> None:
        with self._lock:
            self._notices.append(text)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the warm-up imports: the SDK's thousands of
    classes would otherwise trigger hundreds of collections (a tenth of the import's time),
    each walking every object imported so far. It only delays collection; nothing leaks.

    On the way out, everything allocated meanwhile goes straight to the oldest generation
    (`freeze` then `unfreeze`, which moves objects without examining them): otherwise the
    first young collection after the import walks every one of those objects, 80-100 ms that
    landed on the first turn. They are still collected by the next full collection."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if paused:
            gc.enable()


def warm_notebooks() -> None:
    """Prepare what only a notebook call needs (the tools themselves come with the agent's
    modules): nbformat's schema compiled for validation (not nbformat itself: its import takes
    seconds, and only a notebook that does not validate needs it), and Pillow's image formats,
    which read the images of outputs (one tiny PNG written and read back)."""
    from larik_jupyter.api import warm_validation as warm

    warm()
    try:
        from PIL import Image
    except ImportError:
        return
    buffer = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buffer, format="PNG")
    Image.open(io.BytesIO(buffer.getvalue())).load()


def warm_sdk(model: str | None, config: Any) -> str | None:
    """Import the SDK the provider chosen for `model` (and `config`) will call, and only that
    one, with the modules its first call loads; returns the SDK's module name, or None when
    the choice needs no SDK or cannot be made."""
    from larik_jupyter.api import SdkProvider, choose_spec, import_sdk, make_provider

    spec, _ = choose_spec(model, config)
    try:
        provider = make_provider(spec, config)
    except LarikError:
        return None  # the turn reports it
    if not isinstance(provider, SdkProvider):
        return None
    sdk = import_sdk(provider.sdk_module)
    asyncio.run(_refused_call(provider, getattr(sdk, provider.client_class)))
    return provider.sdk_module


async def _refused_call(provider: SdkProvider, client_class: Any) -> None:
    """One call to a local port nobody listens on: it loads the client, its transport and the
    event-loop backend (a third of a first call's cost) without contacting anyone."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = client_class(api_key="warm-up", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    try:
        async with client:
            await provider.create(client, provider.request("", [], []))
    except Exception:  # noqa: BLE001 - refused is the expected outcome, whatever the SDK calls it
        pass
