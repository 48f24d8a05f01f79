"""Shared browser-test fixtures: a real JupyterLab on 127.0.0.1 and a Playwright chromium page.

Use `lab_server` (a fresh JupyterLab per test, rooted at `lab_server.root`, seeing this test's
LARIK_DATA_DIR, with the larik_jupyter server extension and the built labextension enabled;
`notebook7_server` is the same for Notebook 7) and `lab_page` (a chromium page with JupyterLab loaded and `window.jupyterapp` exposed). When a
test finishes, a screenshot of its page goes to tests/browser/artifacts/<test>.png.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION_SRC = REPO / "labextension"
LABEXTENSION_BUILT = REPO / "larik_jupyter" / "labextension"
LABEXTENSION_NAME = "larik-jupyter"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Settings that keep a fresh JupyterLab from asking questions or reaching the network.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


@dataclass
class LabServer:
    """A running JupyterLab: its URL (with trailing slash), root folder and process."""

    url: str
    root: Path
    process: subprocess.Popen[bytes]

    def api(self, path: str, method: str = "GET", body: bytes | None = None) -> Any:
        """Call the server's REST API (no token: the test server runs without one)."""
        request = urllib.request.Request(self.url + path, data=body, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            data = response.read()
        return json.loads(data) if data else None

    def wait_for_idle_kernel(self, timeout: float = 60) -> dict[str, Any]:
        """Block until some notebook's kernel is idle with a connection; returns that session."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for session in self.api("api/sessions"):
                kernel = session.get("kernel") or {}
                if kernel.get("execution_state") == "idle" and kernel.get("connections", 0) > 0:
                    return dict(session)
            time.sleep(0.25)
        raise TimeoutError(f"no idle kernel with a connection after {timeout} s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _build_labextension() -> None:
    if not (LABEXTENSION_SRC / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=LABEXTENSION_SRC, check=True)
    subprocess.run(["npm", "run", "build"], cwd=LABEXTENSION_SRC, check=True)


@pytest.fixture(scope="session")
def built_labextension() -> Path:
    """The prebuilt labextension folder, built from `labextension/` when it is missing."""
    if not (LABEXTENSION_BUILT / "package.json").is_file():
        _build_labextension()
    return LABEXTENSION_BUILT


@contextmanager
def _running_server(tmp_path: Path, built_labextension: Path, app: str) -> Iterator[LabServer]:
    """A fresh `app` (the module `jupyterlab` or `notebook`) rooted at `tmp_path/"work"`."""
    root = tmp_path / "work"
    root.mkdir()
    settings = tmp_path / "lab-settings"
    for name, value in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    jupyter_path = tmp_path / "jupyter-path"
    (jupyter_path / "labextensions").mkdir(parents=True)
    (jupyter_path / "labextensions" / LABEXTENSION_NAME).symlink_to(built_labextension)
    config = tmp_path / "jupyter-config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"larik_jupyter.server": True}}})
    )
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "JUPYTER_PATH": str(jupyter_path),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
    }
    port = _free_port()
    expose = "LabApp" if app == "jupyterlab" else "JupyterNotebookApp"
    command = [
        sys.executable, "-m", app, "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
        f"--{expose}.expose_app_in_browser=True",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = (tmp_path / "jupyterlab.log").open("wb")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    server = LabServer(url=f"http://127.0.0.1:{port}/", root=root, process=process)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{app} exited; see {tmp_path / 'jupyterlab.log'}")
            try:
                server.api("api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def lab_server(
    tmp_path: Path, built_labextension: Path, larik_dirs: dict[str, Path]
) -> Iterator[LabServer]:
    """A fresh JupyterLab rooted at `tmp_path/"work"`, stopped when the test ends."""
    with _running_server(tmp_path, built_labextension, "jupyterlab") as server:
        yield server


@pytest.fixture
def notebook7_server(
    tmp_path: Path, built_labextension: Path, larik_dirs: dict[str, Path]
) -> Iterator[LabServer]:
    """A fresh Notebook 7 (the `notebook` package's own shell) rooted at `tmp_path/"work"`."""
    with _running_server(tmp_path, built_labextension, "notebook") as server:
        yield server


@pytest.fixture(scope="module")
def lab_browser() -> Iterator[Browser]:
    """Debian's chromium driven by Playwright (never a downloaded browser).

    Module-scoped: sync Playwright keeps an asyncio loop running while it lives, which
    would break the event loops of async (pytest-jupyter) tests collected after it.
    """
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing; install it with `apt-get install -y chromium`.")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def lab_page(
    lab_browser: Browser, lab_server: LabServer, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A page with JupyterLab loaded and started; screenshotted into artifacts/ at the end."""
    context = lab_browser.new_context(
        accept_downloads=True, viewport={"width": 1400, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(lab_server.url + "lab")
    page.wait_for_function("!!window.jupyterapp", timeout=60_000)
    page.evaluate("window.jupyterapp.restored.then(() => true)")
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        safe = request.node.name.replace("/", "_").replace("[", "_").replace("]", "")
        try:
            page.screenshot(path=str(ARTIFACTS / f"{safe}.png"), full_page=True)
        finally:
            context.close()
