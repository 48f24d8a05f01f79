"""`larik-jupyter mcp`: serve larik's kernel tools to an outside agent (Claude Code, Codex,
Jupyter AI, any MCP client) over stdio, attached to a running kernel."""

from __future__ import annotations

import argparse
import asyncio
import os


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp",
        help="MCP server (stdio) that lets an outside agent work in a running kernel",
        description=(
            "Serve larik's kernel tools (notebook_read, notebook_edit, notebook_run, notebook_check, "
            "python; views of your session's variable report, undo list and transcript; undo) to an "
            "MCP client over stdio, in the kernel of a notebook open in a running Jupyter server, or "
            "of a kernel connection file. Each connection is a larik session of its own, named after "
            "the client; every call is a turn of it, undoable from the notebook, and asks the person "
            "in the open notebook where larik's own turns would ask."
        ),
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--notebook", metavar="PATH",
                       help="the notebook whose kernel to attach to (open in a running Jupyter server)")
    which.add_argument("--connection-file", metavar="FILE",
                       help="a kernel connection file (path, or name in Jupyter's runtime folder)")
    p.add_argument("--url", help="the Jupyter server's URL (default: found from its runtime files)")
    p.add_argument("--token", default=os.environ.get("JUPYTER_TOKEN"),
                   help="the Jupyter server's token (default: $JUPYTER_TOKEN, or from its runtime files)")
    p.set_defaults(func=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    from larik_jupyter.frontends.mcp.attach import from_connection_file, from_notebook
    from larik_jupyter.frontends.mcp.server import OutsideServer

    if args.connection_file:
        target = from_connection_file(args.connection_file)
    else:
        target = from_notebook(args.notebook, url=args.url, token=args.token)
    asyncio.run(OutsideServer(target).run())
    return 0
