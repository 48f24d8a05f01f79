"""Shared browser-test fixtures: a real JupyterLab on 127.0.0.1 and a Playwright chromium page.

One JupyterLab serves every browser test of a pytest process (`lab_server`): each test gets a
folder of its own under the server's root (`lab_server.root`, a path `lab_server.path(name)` to
open in the page), a page with a workspace of its own, its kernels shut down and the server's
settings put back when it ends. Every browser test shares one data and config home with that
server (its kernels write there), cleared of personal config between tests. A test marked
`@pytest.mark.own_lab` gets a JupyterLab of its own (`own_lab(collaboration=True)`: with
jupyter-collaboration's real-time collaboration on; `own_lab(collaboration=SERVER_DOCUMENTS)`:
with jupyter-server-documents instead; every other server runs with neither), started after
the test's fixtures (for an environment variable its kernels must see); `notebook7_server` is always a server of its own.

`lab_page` is a chromium page with JupyterLab loaded on the test's folder and `window.jupyterapp`
exposed. When a test finishes, a screenshot of its page goes to tests/browser/artifacts/<test>.png.
"""

from __future__ import annotations

import http.cookiejar
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.agent_helpers import MODEL_VARS
from tests.process_helpers import wait_until

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION_SRC = REPO / "labextension"
LABEXTENSION_BUILT = REPO / "larik_jupyter" / "labextension"
LABEXTENSION_NAME = "larik-jupyter"
SERVER_DOCUMENTS = "jupyter-server-documents"
SERVER_DOCUMENTS_PAGE = "@jupyter-ai-contrib/server-documents"
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


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab as one test sees it: the URL (with trailing slash), the test's own
    folder `root`, that folder relative to the server's root (`prefix`, '' when the server is
    the test's own), the server's runtime folder and its process."""

    url: str
    root: Path
    prefix: str
    runtime_dir: Path
    process: subprocess.Popen[bytes]

    def path(self, name: str) -> str:
        """`name` (relative to the test's folder) as the page opens it: relative to the server root."""
        return f"{self.prefix}/{name}" if self.prefix else name

    def api(self, path: str, method: str = "GET", body: bytes | None = None) -> Any:
        """Call the server's REST API (no token: the test server runs without one; a request
        that changes something carries the `_xsrf` cookie a page gets, as the page's do)."""
        headers = {}
        if method != "GET":
            jar = http.cookiejar.CookieJar()
            urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(self.url + "lab", timeout=30).close()
            xsrf = next(cookie.value for cookie in jar if cookie.name == "_xsrf")
            headers = {"Cookie": f"_xsrf={xsrf}", "X-XSRFToken": str(xsrf)}
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            data = response.read()
        return json.loads(data) if data else None

    def wait_for_idle_kernel(self, timeout: float = 120) -> dict[str, Any]:
        """Block until a notebook of this test's folder has a kernel idle with a connection;
        returns that session."""

        def idle() -> dict[str, Any] | None:
            for session in self.api("api/sessions"):
                kernel = session.get("kernel") or {}
                mine = str(session.get("path", "")).startswith(self.path(""))
                if mine and kernel.get("execution_state") == "idle" and kernel.get("connections", 0) > 0:
                    return dict(session)
            return None

        return wait_until(idle, f"an idle kernel with a connection in {self.root}", timeout, every=0.25)

    def shut_down_kernels(self) -> None:
        """End every notebook session of the server (the kernels with them)."""
        for session in self.api("api/sessions"):
            try:
                self.api(f"api/sessions/{session['id']}", method="DELETE")
            except urllib.error.HTTPError:  # already gone
                pass


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


def _write_settings(settings: Path) -> None:
    """The server's user settings as a fresh JupyterLab under test has them, and nothing else."""
    shutil.rmtree(settings, ignore_errors=True)
    for name, value in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))


def write_server_config(config: Path, collaboration: bool | str = False) -> None:
    """A Jupyter config folder (`JUPYTER_CONFIG_DIR`) for a server with larik's extension and
    at most one collaboration backend: jupyter-collaboration's real-time collaboration when
    `collaboration` is True, jupyter-server-documents when it is SERVER_DOCUMENTS, else neither
    (both are installed by the test extra, and jupyter-server-documents enables itself)."""
    config.mkdir()
    documents = collaboration == SERVER_DOCUMENTS
    extensions = {"larik_jupyter.frontends.server": True, "jupyter_server_documents": documents, "jupyter_server_ydoc": not documents}
    server_config: dict[str, Any] = {"ServerApp": {"jpserver_extensions": extensions}}
    if collaboration is not True:
        server_config["YDocExtension"] = {"disable_rtc": True}
    (config / "jupyter_server_config.json").write_text(json.dumps(server_config))
    if not documents:  # its page plugin would switch jupyter-collaboration's provider off
        (config / "labconfig").mkdir()
        page_config = {"disabledExtensions": {SERVER_DOCUMENTS_PAGE: True}}
        (config / "labconfig" / "page_config.json").write_text(json.dumps(page_config))


@contextmanager
def _running_server(
    home: Path, built_labextension: Path, app: str, env: dict[str, str], *, collaboration: bool | str = False
) -> Iterator[LabServer]:
    """A fresh `app` (the module `jupyterlab` or `notebook`) rooted at `home/"work"`, its
    kernels started with `env`. The test extra installs two collaboration backends; each
    server runs at most one. jupyter-collaboration's real-time collaboration is off unless
    `collaboration` is True; jupyter-server-documents (its server extension, and its page
    plugin that switches jupyter-collaboration's document provider off) only where
    `collaboration` is SERVER_DOCUMENTS."""
    root = home / "work"
    root.mkdir()
    _write_settings(home / "lab-settings")
    jupyter_path = home / "jupyter-path"
    (jupyter_path / "labextensions").mkdir(parents=True)
    (jupyter_path / "labextensions" / LABEXTENSION_NAME).symlink_to(built_labextension)
    config = home / "jupyter-config"
    write_server_config(config, collaboration)
    runtime = home / "jupyter-runtime"
    env = {
        **env,
        "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"),
        "JUPYTER_PATH": str(jupyter_path),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(runtime),
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
    log = (home / "jupyterlab.log").open("wb")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    server = LabServer(url=f"http://127.0.0.1:{port}/", root=root, prefix="", runtime_dir=runtime, process=process)

    def answering() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{app} exited; see {home / 'jupyterlab.log'}")
        try:
            server.api("api/status")
        except (urllib.error.URLError, ConnectionError):
            return False
        return True

    try:
        wait_until(answering, f"{app} to answer on {server.url}", 120, every=0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="session")
def browser_home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The data and config home every browser test shares with the shared JupyterLab."""
    home = tmp_path_factory.mktemp("larik-browser-home")
    return {"data": home / "data", "config": home / "config"}


@pytest.fixture(autouse=True)
def larik_dirs(browser_home: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Browser tests share the shared server's data and config home (its kernels write there;
    each test's sessions are its own folder's); personal config never outlives a test."""
    monkeypatch.setenv("LARIK_DATA_DIR", str(browser_home["data"]))
    monkeypatch.setenv("LARIK_CONFIG_DIR", str(browser_home["config"]))
    for var in MODEL_VARS:
        monkeypatch.delenv(var, raising=False)
    yield browser_home
    shutil.rmtree(browser_home["config"], ignore_errors=True)


@pytest.fixture(scope="session")
def shared_lab(
    tmp_path_factory: pytest.TempPathFactory, built_labextension: Path, browser_home: dict[str, Path]
) -> Iterator[LabServer]:
    """The JupyterLab every browser test of this process shares."""
    env = {key: value for key, value in os.environ.items() if key not in MODEL_VARS}
    env |= {"LARIK_DATA_DIR": str(browser_home["data"]), "LARIK_CONFIG_DIR": str(browser_home["config"])}
    with _running_server(tmp_path_factory.mktemp("shared-lab"), built_labextension, "jupyterlab", env) as server:
        yield server


_folders = itertools.count(1)


@pytest.fixture
def lab_server(request: pytest.FixtureRequest, tmp_path: Path, built_labextension: Path) -> Iterator[LabServer]:
    """This test's view of a JupyterLab: its own folder of the shared server (or, for a test
    marked `own_lab`, a server of its own rooted at `tmp_path/"work"`)."""
    own = request.node.get_closest_marker("own_lab")
    if own:
        collaboration: bool | str = own.kwargs.get("collaboration", False)
        with _running_server(
            tmp_path, built_labextension, "jupyterlab", dict(os.environ), collaboration=collaboration
        ) as server:
            yield server
        return
    shared: LabServer = request.getfixturevalue("shared_lab")
    prefix = f"t{next(_folders)}"
    server = replace(shared, root=shared.root / prefix, prefix=prefix)
    server.root.mkdir()
    try:
        yield server
    finally:
        server.shut_down_kernels()
        _write_settings(shared.root.parent / "lab-settings")
        shutil.rmtree(shared.root.parent / "lab-workspaces", ignore_errors=True)


@pytest.fixture
def notebook7_server(tmp_path: Path, built_labextension: Path) -> Iterator[LabServer]:
    """A fresh Notebook 7 (the `notebook` package's own shell) rooted at `tmp_path/"work"`."""
    with _running_server(tmp_path, built_labextension, "notebook", dict(os.environ)) as server:
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
    """A page with JupyterLab loaded on the test's folder, in a workspace of its own; screenshotted
    into artifacts/ at the end."""
    context = lab_browser.new_context(
        accept_downloads=True, viewport={"width": 1400, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    mine = f"workspaces/{lab_server.prefix}/tree/{lab_server.prefix}" if lab_server.prefix else ""
    page.goto(f"{lab_server.url}lab/{mine}")
    page.wait_for_function("!!window.jupyterapp", timeout=120_000)
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
