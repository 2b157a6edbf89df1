"""Where a compile's time went, phase by phase (``RLX_TIMING=1``, like ``-mlir-timing``).

Every cold compile records its phases in ``Executable.engine.phases`` (seconds, in
order): xDSL's ``lower-to-linalg`` and hand-off text, each upstream stage, printing, and
LLVM code generation. A phase whose name starts with a space ran inside the one before
it (each half's stages, when a function is lowered in two halves on two threads: see
:mod:`rlx_mlir.lowering.split`) and is not added to the total. With ``RLX_TIMING=1`` the
report goes to stderr as well::

    ===---------------------------------------------===
      rlx compile timing: 1.121 s
    ===---------------------------------------------===
      0.059 (  5.3%)  xdsl lower-to-linalg
      ...
      0.488 ( 43.5%)  llvm codegen (2 jobs)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

Phases = dict[str, float]


@contextlib.contextmanager
def phase(phases: Phases | None, name: str) -> Iterator[None]:
    """Add the wall time of the ``with`` body to ``phases[name]`` (no-op for None)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        if phases is not None:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


def timing_requested() -> bool:
    """``RLX_TIMING=1``: print each cold compile's phases to stderr."""
    return os.environ.get("RLX_TIMING", "") not in ("", "0")


def report(phases: Phases, title: str = "rlx compile timing") -> str:
    """The phases as a table, in the order they ran, with their share of the total."""
    total = sum(seconds for name, seconds in phases.items() if not name.startswith(" "))
    rule = "===" + "-" * 45 + "==="
    lines = [rule, f"  {title}: {total:.3f} s", rule]
    for name, seconds in phases.items():
        share = 100 * seconds / total if total else 0.0
        lines.append(f"  {seconds:.3f} ({share:5.1f}%)  {name}")
    return "\n".join(lines)


def print_report(phases: Phases, title: str = "rlx compile timing") -> None:
    print(report(phases, title), file=sys.stderr)
