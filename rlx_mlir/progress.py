"""A minimal progress bar for the examples (no dependency).

>>> bar = ProgressBar(3, "train")
>>> for _ in range(3):
...     bar.update(loss=1.0)   # doctest: +SKIP
"""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """``train  42% |########            | 126/300 loss 2.31 12.1 it/s``."""

    def __init__(self, total: int, label: str = "", width: int = 28, stream=None):
        self.total, self.label, self.width = total, label, width
        self.stream = stream or sys.stdout
        self.count = 0
        self.start = time.perf_counter()

    def update(self, **values: float) -> None:
        self.count += 1
        done = self.count / self.total
        filled = int(done * self.width)
        rate = self.count / max(time.perf_counter() - self.start, 1e-9)
        shown = " ".join(f"{k} {v:.4f}" for k, v in values.items())
        line = (f"\r{self.label} {done:4.0%} |{'#' * filled}{' ' * (self.width - filled)}| "
                f"{self.count}/{self.total} {shown} {rate:.1f} it/s")
        self.stream.write(line)
        if self.count == self.total:
            self.stream.write("\n")
        self.stream.flush()
