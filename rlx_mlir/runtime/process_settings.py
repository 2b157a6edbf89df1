"""Process-wide settings a compile changes while it runs, restored after.

* **The cyclic garbage collector, paused** (:func:`collector_paused`). A compile builds
  hundreds of thousands of short-lived Python objects (xDSL operations, attributes,
  upstream bindings' handles). Each of the collector's generation-2 passes walks every
  live object, so it ran ever more often over an ever larger heap: on an 8-layer char-LM
  gradient, xDSL's lowering took 0.66 s of CPU with the collector and 0.38 s without (the
  transformer-block gradient's 45 against 38 ms). Reference counting still frees almost
  everything at once; the few cycles a compile leaves are collected at the next
  collection after it.
* **A short GIL switch interval** (:func:`gil_switch_interval`) while a function's halves
  are lowered on two threads (:mod:`rlx_mlir.lowering.upstream`).

Compiles may overlap on several threads: the value the process had before the first of
them is restored when the last one ends (unless the program set another one meanwhile).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any


class ProcessSetting:
    """A process-wide setting (read and written by two callables) changed while any of
    overlapping blocks runs; the value before the first block is restored when the last
    one ends, unless something else set another value meanwhile (that one stays).

    >>> interval = ProcessSetting(sys.getswitchinterval, sys.setswitchinterval)
    >>> with interval.changed(lambda before: before / 10):
    ...     pass
    """

    def __init__(self, read: Callable[[], Any], write: Callable[[Any], None]):
        self._read, self._write = read, write
        self._lock = threading.Lock()
        self._depth = 0
        self._before: Any = None
        self._set: Any = None

    @contextlib.contextmanager
    def changed(self, value: Callable[[Any], Any]) -> Iterator[None]:
        """The setting is ``value(setting before)`` in the block."""
        with self._lock:
            if not self._depth:
                self._before = self._read()
                self._set = value(self._before)
                if self._set != self._before:  # (an interval written back may round)
                    self._write(self._set)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if not self._depth and self._read() == self._set != self._before:
                    self._write(self._before)


_COLLECTOR = ProcessSetting(gc.isenabled, lambda on: gc.enable() if on else gc.disable())
_SWITCH_INTERVAL = ProcessSetting(sys.getswitchinterval, sys.setswitchinterval)


def collector_paused() -> contextlib.AbstractContextManager[None]:
    """Run the body with ``gc`` disabled, then restore it (a collector the user disabled
    stays disabled).

    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    """
    return _COLLECTOR.changed(lambda before: False)


def gil_switch_interval(seconds: float) -> contextlib.AbstractContextManager[None]:
    """``sys.setswitchinterval`` at most ``seconds`` in the body."""
    return _SWITCH_INTERVAL.changed(lambda before: min(before, seconds))
