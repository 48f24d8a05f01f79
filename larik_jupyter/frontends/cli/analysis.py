"""`larik-jupyter notebook|replay|diff`: a branch as a notebook, replayed without the model, or
compared with another branch."""

from __future__ import annotations

import argparse
import os

from larik_jupyter.frontends.cli.sessions import _ID_HELP, _directory, add_at


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _cmd_notebook(args: argparse.Namespace) -> int:
    from larik_jupyter.api import write_notebook

    print(write_notebook(
        args.id, args.path, prompt_number=args.prompt_number, include_shell=args.include_shell, cwd=os.getcwd(),
        include_undone=args.include_undone,
    ))
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from larik_jupyter.api import replay_branch

    report = replay_branch(
        args.id, prompt_number=args.prompt_number, cwd=args.cwd, timeout=args.timeout,
        stop_on_fail=args.stop_on_fail, in_place=args.in_place, force=args.force, include_shell=args.include_shell, rtol=args.rtol,
        lookup=os.getcwd(), network=args.network,
    )
    print(report.table())
    return report.exit_status


def _cmd_diff(args: argparse.Namespace) -> int:
    from larik_jupyter.api import diff_branches

    result = diff_branches(args.id_a, args.id_b, cwd=os.getcwd(), rtol=args.rtol)
    print(result.render())
    return 1 if result.differs else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the analysis commands to the `larik-jupyter` parser."""
    p = sub.add_parser(
        "notebook",
        help="write a branch as a new runnable notebook",
        description="Write the session (up to prompt N with --at) as a new .ipynb: prompts and replies as "
        "Markdown, the code the agent ran with its outputs, the files it wrote as %%%%writefile cells. "
        "Default PATH: <session directory>/<id>.ipynb (or <id>-2.ipynb, …). Never overwrites.",
    )
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    p.add_argument("path", metavar="PATH", nargs="?", help="output .ipynb (refused if it exists)")
    add_at(p, "stop")
    p.add_argument("--include-shell", action="store_true", help="add shell commands as !cmd cells (default: a note)")
    p.add_argument("--include-undone", action="store_true",
                   help="keep the code of undone prompts as Markdown cells marked undone, not run (default: a note)")
    p.set_defaults(func=_cmd_notebook)

    p = sub.add_parser(
        "replay",
        help="re-run a branch's code without the model and compare the outputs",
        description="Run the session's python calls, file writes and notebook_run sources in order in a fresh "
        "kernel, in a scratch copy of the project (--in-place: the real one), and print a table of calls: "
        "same, changed (with a short diff), failed (with the error) or skipped. No model is asked. "
        "In a copy, changes outside it (absolute paths, symlinks out of the project) and shell commands are "
        "refused. In place, changes stay inside the project, a file changed since the session is left alone "
        "(--force replays over it), and shell commands run only with --include-shell. "
        "The kernel and its processes are confined by the operating system where it can (Landlock): "
        "they write only where the replay may, and have no network unless --network. "
        "Exit status 0: everything matched; 1: some output changed; 2: a call failed.",
    )
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    add_at(p, "stop")
    p.add_argument("--cwd", metavar="DIR", type=_directory, help="project directory to replay against (default: the session's)")
    p.add_argument("--timeout", metavar="S", type=_positive_float, default=600.0, help="seconds per call before it is interrupted (default 600)")
    p.add_argument("--stop-on-fail", action="store_true", help="stop at the first call that fails")
    p.add_argument("--in-place", action="store_true", help="run in the project directory itself, not a scratch copy")
    p.add_argument("--force", action="store_true",
                   help="with --in-place: replay over files changed since the session (those changes are lost)")
    p.add_argument("--include-shell", action="store_true",
                   help="with --in-place: run the session's shell commands and the ! lines of its code (default: skipped)")
    p.add_argument("--network", action="store_true", help="let the replayed code connect to other machines (default: no network)")
    p.add_argument("--rtol", metavar="R", type=float, default=1e-6, help="relative tolerance for numbers (default 1e-6)")
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser(
        "diff",
        help="compare two branches: common prefix, then prompts and outputs side by side",
        description="Show the prompts two sessions share, then each one's own prompts and the outputs of their "
        "python calls side by side, marking outputs that differ. Exit status 1 when some output differs.",
    )
    p.add_argument("id_a", metavar="ID_A", help=_ID_HELP)
    p.add_argument("id_b", metavar="ID_B", help=_ID_HELP)
    p.add_argument("--rtol", metavar="R", type=float, default=1e-6, help="relative tolerance for numbers (default 1e-6)")
    p.set_defaults(func=_cmd_diff)
