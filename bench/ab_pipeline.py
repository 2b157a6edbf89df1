"""In-process A/B of compile-time knobs: each variant compiles the same workloads with its
environment, then the variants' calls alternate in rounds, so machine noise hits all of
them alike. Prints compile seconds and the median call time of each variant, with its
ratio to the first.

    python bench/ab_pipeline.py transformer,mlp,gemm512x512x512 \\
        RLX_LLVM_UNROLL=1 RLX_LLVM_UNROLL=0 [--rounds 9]

A variant is ``NAME=VALUE[,NAME=VALUE...]`` (``-`` for the environment as it is); the knob
must be read when a module is compiled (it then also changes the cache key). Results of
every variant are checked against the first one's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import common  # noqa: E402
import peer_rlx  # noqa: E402


def parse_variant(text: str) -> dict[str, str]:
    """``"A=1,B=2"`` -> ``{"A": "1", "B": "2"}``; ``"-"`` -> ``{}``."""
    if text == "-":
        return {}
    pairs = [item.split("=", 1) for item in text.split(",")]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit(f"variant {text!r}: expected NAME=VALUE[,NAME=VALUE...]")
    return dict(pairs)  # type: ignore[arg-type]


def workload_case(name: str) -> tuple[str, object, dict]:
    """``gemmMxKxN`` or a model name -> (workload, case, inputs), the benchmark's inputs."""
    if name.startswith("gemm"):
        sizes = name[4:].split("x")
        if len(sizes) != 3 or not all(s.isdigit() and int(s) > 0 for s in sizes):
            raise SystemExit(f"workload {name!r}: expected gemmMxKxN, e.g. gemm512x512x512")
        m, k, n = map(int, sizes)
        a, b = common.gemm_inputs(m, k, n)
        return "gemm", (m, k, n), {"a": a, "b": b}
    if name not in common.MODELS:
        raise SystemExit(f"workload {name!r}: expected one of {', '.join(common.MODELS)} "
                         "or gemmMxKxN")
    dims = common.model_dims(name, quick=False)
    return name, dims, common.model_inputs(name, dims)


def compile_with(env: dict[str, str], workload: str, case: object,
                 inputs: dict) -> tuple[Callable[[], list], float]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        started = time.perf_counter()
        run = peer_rlx.prepare(workload, case, inputs)
        return run, time.perf_counter() - started
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", help="comma-separated: mlp,transformer,llama,gemmMxKxN")
    parser.add_argument("variants", nargs="+", help="NAME=VALUE[,...] or - per variant")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("RLX_CACHE_DIR", "off")
    variants = [parse_variant(v) for v in args.variants]
    runs: dict[tuple[str, int], Callable[[], list]] = {}
    for name in args.workloads.split(","):
        workload, case, inputs = workload_case(name)
        for i, env in enumerate(variants):
            runs[name, i], seconds = compile_with(env, workload, case, inputs)
            print(f"{name} [{args.variants[i]}] compile {seconds:.2f} s", flush=True)
        first = runs[name, 0]()
        for i in range(1, len(variants)):
            for a, b in zip(first, runs[name, i](), strict=True):
                np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4)
    times: dict[tuple[str, int], list[float]] = {key: [] for key in runs}
    for _ in range(args.rounds):
        for key, run in runs.items():
            times[key].append(common.median_call_s(run, calls=10, warmup=2))
    for name in args.workloads.split(","):
        base = statistics.median(times[name, 0])
        cells = [f"[{v}] {statistics.median(times[name, i]) * 1e3:.3f} ms "
                 f"({statistics.median(times[name, i]) / base:.3f})"
                 for i, v in enumerate(args.variants)]
        print(f"{name}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
