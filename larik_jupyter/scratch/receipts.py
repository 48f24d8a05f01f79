"""Receipts in a scratch kernel (replay, `/check`): every cell it runs is watched, and its
operands and results named, as the agent's code is in the live kernel (`tools/kernel/receipts.py`'s
`watch_receipts` and `receipts_found`, the watch entered before the cell and left after it
through IPython's `pre_run_cell` and `post_run_cell` events), and the last cell's receipts are
read back as JSON. A scratch kernel whose Python has no larik_jupyter gives none, and nothing is
compared."""

from __future__ import annotations

import json

import msgspec

from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.scratch.kernel import ScratchKernel

# Sent once as source; the kernel keeps the last cell's receipts in `__larik_receipts__`.
SETUP = """
def __larik_watch():
    try:
        import msgspec
        from larik_jupyter.tools.kernel import receipts_found, watch_receipts
    except ImportError:
        return
    shell = get_ipython()
    ns, held = shell.user_ns, {}

    def before(*_):
        held["watch"] = watch_receipts(ns, this_thread=False).__enter__()

    def after(*_):
        watch = held.pop("watch", None)
        if watch is not None:
            watch.__exit__(None, None, None)
            ns["__larik_receipts__"] = msgspec.json.encode(receipts_found(watch, ns)[0]).decode()

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)
    ns["__larik_receipts__"] = "[]"


__larik_watch()
del __larik_watch
"""
_READ = "print(globals().get('__larik_receipts__', 'null'))"


def watch_receipts(kernel: ScratchKernel, timeout: float) -> None:
    """Watch every later cell of `kernel` for receipts."""
    kernel.run(SETUP, timeout=timeout, history=False)


def last_receipts(kernel: ScratchKernel, timeout: float) -> list[Receipt] | None:
    """The receipts of the cell `kernel` ran last, or None where it cannot say (no larik there)."""
    run = kernel.run(_READ, timeout=timeout, history=False)
    try:
        found = json.loads(run.stdout.strip() or "null")
    except json.JSONDecodeError:
        return None
    if not isinstance(found, list):
        return None
    try:
        return msgspec.convert(found, list[Receipt])
    except msgspec.ValidationError:
        return None
