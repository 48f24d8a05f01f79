"""Receipts of a `python` or `notebook_run` call (`frames/receipt_watch.py`): the operands and
results named as the kernel's variables, and the lines the model reads in the call's result."""

from __future__ import annotations

import threading
from typing import Any

from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.frames.receipt_watch import ReceiptWatch
from larik_jupyter.plural import counted
from larik_jupyter.session.receipts import RECEIPTS_HEAD, receipt_text
from larik_jupyter.tools.kernel.variable_watch import is_user_name


def _name_in(namespace: dict[str, Any], value: object) -> str | None:
    return next((n for n, v in list(namespace.items()) if v is value and is_user_name(n, v)), None)


def watch_receipts(namespace: dict[str, Any], this_thread: bool = True) -> ReceiptWatch:
    """A watch over the code about to run in `namespace`: in this thread only, or (a cell the
    kernel runs itself, `this_thread=False`) in whichever runs it."""
    return ReceiptWatch(lambda value: _name_in(namespace, value) or "",
                        threading.get_ident() if this_thread else None)


def receipts_found(watch: ReceiptWatch, namespace: dict[str, Any]) -> tuple[list[Receipt], str]:
    """The call's receipts, each result named by the variable now holding it, and the part of
    the result the model reads ("" for none)."""
    receipts = watch.receipts(lambda value: _name_in(namespace, value))
    if not receipts:
        return [], ""
    lines = [f"  {receipt_text(r)}" for r in receipts]
    if watch.left_out:
        lines.append(f"  [{counted(watch.left_out, 'more operation')} not listed]")
    return receipts, RECEIPTS_HEAD + "\n" + "\n".join(lines)
