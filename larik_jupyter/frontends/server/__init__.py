"""Jupyter server extension: a REST API under `/larik/api/` over the on-disk session store."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "larik_jupyter.frontends.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from larik_jupyter.frontends.server.handlers import setup_handlers

    setup_handlers(serverapp.web_app, serverapp.root_dir)
    serverapp.log.info("larik_jupyter: session API at %slarik/api/", serverapp.base_url)
