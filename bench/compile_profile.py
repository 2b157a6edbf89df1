"""Where a cold compile of a model's gradient goes, phase by phase (not a test).

    python bench/compile_profile.py transformer [--rounds 3]

Phases: ``grad_with_loss``; ``lower_to_llvm`` (wall and CPU seconds) with, indented, the
phases it records: xDSL's ``lower-to-linalg``, then either the hand-off text, each
upstream stage and printing, or -- a function big enough to be cut in two
(``rlx_mlir/lowering/split.py``) -- both halves lowered and compiled to object code on two
threads, with each half's own stages (wall seconds on threads that shared the cores);
then, when not split, the parallel LLVM code generation (``native.compile_objects``).
Each round runs in this process with the disk cache off, so rounds after the first skip
the one-time imports; the median is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))
os.environ["RLX_CACHE_DIR"] = "off"


def profile_once(workload: str) -> dict[str, tuple[float, float]]:
    """``{phase: (wall s, cpu s)}`` of one compile of ``workload``'s gradient (phases whose
    name starts with a space ran inside the one before: wall only, not in the total)."""
    from common import model_dims
    from peer_rlx import ENTRIES, build_model

    import rlx_mlir as rlx
    from rlx_mlir.lowering.upstream import lower_to_llvm
    from rlx_mlir.runtime import jit, native

    phases: dict[str, tuple[float, float]] = {}

    def timed(name, fn, *args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args, **kwargs)
        phases[name] = (time.perf_counter() - wall, time.process_time() - cpu)
        return result

    module = build_model(workload, model_dims(workload, quick=False))
    grad = timed("grad_with_loss", rlx.grad_with_loss, module, ENTRIES[workload])
    lowered = jit.reachable_module(module, grad.sym_name.data).clone()
    jit.prefix_function_symbols(lowered)
    inner: dict[str, float] = {}
    objects: list[bytes] = []
    llvm_text = timed("lower_to_llvm", lower_to_llvm, lowered, phases=inner, objects=objects,
                      opt_level=jit.opt_level())
    phases.update({f" {name}": (seconds, 0.0) for name, seconds in inner.items()})
    if not objects:  # not split: the engine compiles the text in parallel parts
        jobs = native.codegen_jobs(llvm_text)
        timed(f"LLVM codegen ({jobs} jobs)", native.compile_objects, llvm_text, jobs,
              jit.opt_level())
    return phases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["mlp", "transformer", "llama"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    samples: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(args.rounds):
        for name, value in profile_once(args.workload).items():
            samples[name].append(value)
    total = 0.0
    print(f"{'phase':60s} {'wall s':>8s} {'cpu s':>8s}  (median of {args.rounds})")
    for name, values in samples.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        total += 0.0 if name.startswith(" ") else wall
        print(f"{name[:60]:60s} {wall:8.3f} {cpu:8.3f}")
    print(f"{'total':60s} {total:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
