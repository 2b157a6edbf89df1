"""Where a cold compile of a model's gradient goes, phase by phase (not a test).

    python bench/compile_profile.py transformer [--rounds 3]

Phases: ``grad_with_loss``; xDSL's ``lower-to-linalg`` and the hand-off text; each
upstream stage (wall and CPU seconds: the nested passes after outlining use every core);
printing the LLVM dialect; parallel LLVM code generation (``native.compile_objects``, the
threads ``rlx_mlir.compile`` would use). Each round runs in this process with the disk cache off, so rounds after
the first skip the one-time imports; the median is printed.
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
    """``{phase: (wall s, cpu s)}`` of one compile of ``workload``'s gradient."""
    from common import model_dims
    from mlir import ir
    from mlir.passmanager import PassManager
    from peer_rlx import ENTRIES, build_model

    import rlx_mlir as rlx
    from rlx_mlir.lowering import upstream
    from rlx_mlir.lowering.to_linalg import lower_module
    from rlx_mlir.runtime import jit, native

    phases: dict[str, tuple[float, float]] = {}

    def timed(name, fn, *args):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args)
        phases[name] = (time.perf_counter() - wall, time.process_time() - cpu)
        return result

    module = build_model(workload, model_dims(workload, quick=False))
    grad = timed("grad_with_loss", rlx.grad_with_loss, module, ENTRIES[workload])
    lowered = jit.reachable_module(module, grad.sym_name.data).clone()
    timed("xdsl lower-to-linalg", lower_module, lowered)
    text = timed("xdsl hand-off text", upstream.handoff_text, lowered, True)
    with ir.Context():
        upstream_module = timed("upstream parse", upstream._parse_upstream, ir, text)
        for stage in upstream.pipeline_stages():
            timed(f"stage {stage.name}", upstream._run_stage, PassManager, upstream_module, stage)
        llvm_text = timed("print LLVM dialect", str, upstream_module)
    jobs = native.codegen_jobs(llvm_text)
    timed(f"LLVM codegen ({jobs} jobs)", native.compile_objects, llvm_text, jobs, jit.opt_level())
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
    print(f"{'phase':34s} {'wall s':>8s} {'cpu s':>8s}  (median of {args.rounds})")
    for name, values in samples.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        total += wall
        print(f"{name:34s} {wall:8.3f} {cpu:8.3f}")
    print(f"{'total':34s} {total:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
