"""One benchmark cell in its own process: ``python bench/worker.py '<json spec>'``.

The spec names a workload, a peer and a thread count. The driver has already set the
thread environment variables (they must precede the libraries' import); this process
imports only its peer's library, times every case of the workload and prints one
``BENCH_RESULT {json}`` line. A failing case becomes an ``error`` entry, never a crash.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from functools import partial
from types import SimpleNamespace
from typing import Any

from common import (
    emit_result,
    fingerprint,
    gemm_cases,
    gemm_inputs,
    measure,
    model_dims,
    model_inputs,
)

MODEL_NAMES = ("mlp", "transformer", "llama")


def load_peer(peer: str, threads: int) -> SimpleNamespace:
    """``prepare(workload, case, inputs)``, ``to_numpy`` and ``library_info`` of a peer."""
    module_name = {"torch_compile": "peer_torch"}.get(peer, f"peer_{peer}")
    module = importlib.import_module(module_name)
    prepare = module.prepare
    if module_name == "peer_torch":
        module.configure(threads)
        prepare = partial(module.prepare, compiled=peer == "torch_compile")
    return SimpleNamespace(prepare=prepare, to_numpy=module.to_numpy,
                           library_info=module.library_info, module=module)


def error_entry(case: str, exc: BaseException) -> dict[str, Any]:
    """A failed case: the exception's first line plus the tail of its traceback."""
    first = (str(exc).strip().splitlines() or [""])[0]
    tail = traceback.format_exception(exc)[-3:]
    return {"case": case, "status": "error", "error": f"{type(exc).__name__}: {first}"[:400],
            "traceback": "".join(tail)[-1500:]}


def time_case(peer: SimpleNamespace, workload: str, case: Any, inputs: dict,
              budget_s: float) -> dict[str, Any]:
    """Prepare (rlx compiles here) then time one case."""
    started = time.perf_counter()
    fn = peer.prepare(workload, case, inputs)
    prepare_ms = (time.perf_counter() - started) * 1e3
    timing, outputs = measure(fn, budget_s)
    entry = {"status": "ok", "prepare_ms": round(prepare_ms, 3), **timing.as_dict()}
    if workload != "gemm":
        entry.update(fingerprint(peer.to_numpy(outputs)))
    return entry


def run_gemm(peer: SimpleNamespace, spec: dict) -> list[dict]:
    cases = []
    for label, (m, k, n) in gemm_cases(spec["quick"]).items():
        a, b = gemm_inputs(m, k, n, spec["seed"])
        try:
            entry = time_case(peer, "gemm", (m, k, n), {"a": a, "b": b}, spec["budget_s"])
            entry["gflops"] = round(2.0 * m * k * n / (entry["median_ms"] * 1e6), 3)
        except Exception as exc:  # noqa: BLE001 - reported as an error cell
            entry = error_entry(label, exc)
        cases.append({"case": label, "mkn": [m, k, n], **entry})
    return cases


def run_model(peer: SimpleNamespace, spec: dict) -> list[dict]:
    workload = spec["workload"]
    dims = model_dims(workload, spec["quick"])
    inputs = model_inputs(workload, dims, spec["seed"])
    try:
        entry = time_case(peer, workload, dims, inputs, spec["budget_s"])
    except Exception as exc:  # noqa: BLE001 - reported as an error cell
        entry = error_entry(workload, exc)
    return [{"case": workload, "dims": dims, **entry}]


def run_compile(peer: SimpleNamespace, spec: dict) -> list[dict]:
    """rlx only: IR -> native phases of each model (cold or disk-warm per the spec), after
    a warm-up compile of a tiny model that takes the process's one-time costs."""
    cases = []
    warm_up_s = peer.module.warm_up()
    for workload in MODEL_NAMES:
        dims = model_dims(workload, spec["quick"])
        try:
            phases = peer.module.compile_phases(workload, dims, model_inputs(workload, dims))
            entry = {"status": "ok", **phases, "process_warm_up_s": round(warm_up_s, 4)}
        except Exception as exc:  # noqa: BLE001 - reported as an error cell
            entry = error_entry(workload, exc)
        cases.append({"case": workload, "phase": spec["phase"], **entry})
    return cases


def pin_to_cores(threads: int) -> list[int]:
    """Run on the first ``threads`` allowed CPUs (a 1-thread cell gets one core: JAX's
    1-thread flags still leave XLA a second busy thread); returns the CPUs in use."""
    allowed = sorted(os.sched_getaffinity(0))
    if 0 < threads < len(allowed):
        os.sched_setaffinity(0, allowed[:threads])
    return sorted(os.sched_getaffinity(0))


def main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    cpus = pin_to_cores(spec["threads"])  # before any library starts its threads
    started = time.perf_counter()
    peer = load_peer(spec["peer"], spec["threads"])
    import_s = time.perf_counter() - started
    runner = {"gemm": run_gemm, "compile": run_compile}.get(spec["workload"], run_model)
    cases = runner(peer, spec)
    emit_result({"spec": spec, "import_s": round(import_s, 3), "cases": cases,
                 "library": peer.library_info(), "pid": os.getpid(), "cpus": cpus})


if __name__ == "__main__":
    main(sys.argv)
