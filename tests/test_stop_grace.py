"""A Stop's own kernel interrupt landing after the turn it stopped is let go: the Stop button
both sends its stop on the widget's comm and interrupts the kernel, and when the comm ended the
turn first, the late SIGINT hit ipykernel while it sent the cell's reply (the cell kept [*] with
the kernel idle: a clean-clone run of tests/browser/test_i39_small_in_lab.py). Later, or after a
turn nobody stopped, an interrupt goes where it went before."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from larik_jupyter.frontends.notebook.interrupt import STOP_GRACE, sigint_stops


@pytest.fixture
def default_sigint() -> Iterator[None]:
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # as ipykernel has it in a cell
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def test_a_stops_late_interrupt_is_let_go_and_a_later_one_is_delivered(default_sigint: None) -> None:
    stops: list[int] = []
    with sigint_stops(lambda: stops.append(1), reading_input=lambda: False) as interrupts:
        interrupts.stopped = True  # the turn ended stopped by the Stop button's comm
    signal.raise_signal(signal.SIGINT)  # the Stop's interrupt, after the turn: let go
    assert stops == [] and signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    time.sleep(STOP_GRACE)
    with pytest.raises(KeyboardInterrupt):  # past the grace: the person's own interrupt
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.1)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupt_during_the_turn_stops_it_and_one_right_after_is_let_go(default_sigint: None) -> None:
    stops: list[int] = []
    with sigint_stops(lambda: stops.append(1), reading_input=lambda: False):
        signal.raise_signal(signal.SIGINT)  # the toolbar's interrupt: Stop
        time.sleep(0.01)
    assert stops == [1]
    signal.raise_signal(signal.SIGINT)  # a second click's interrupt, late: let go
    time.sleep(0.01)


def test_after_a_turn_nobody_stopped_an_interrupt_is_delivered_at_once(default_sigint: None) -> None:
    # The made-false twin: no stop, no grace.
    with sigint_stops(lambda: None, reading_input=lambda: False):
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.1)
