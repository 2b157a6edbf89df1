"""Benchmarks of rlx-mlir against numpy, PyTorch (eager, torch.compile) and JAX.

``make bench`` runs everything and writes bench/results.json, docs/benchmarks.md and
docs/benchmarks.png. Every (workload, peer, threads) cell runs in its own subprocess
(bench/worker.py) with the thread environment set before any import; a failing or
hanging cell becomes an error cell of the report, never a crash of the run::

    python bench/run.py --only gemm --peers rlx,numpy --threads 1
    python bench/run.py --quick --only gemm --peers numpy,rlx --no-write   # smoke test

The whole cell list runs ``--rounds`` times (default 3) and a case's time is the median
of its rounds' medians: a burst of load from other tenants of this shared machine spoils
one round of a cell, not the cell.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from common import MODELS, PEERS, RESULT_MARKER, WORKLOADS

BENCH_DIR = pathlib.Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RLX_NUM_THREADS")
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads of {','.join(WORKLOADS)}")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated peers of {','.join(PEERS)}")
    parser.add_argument("--threads", default=None, help="thread counts (default 1,2; quick: 1)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, tiny time budget")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of timed calls per case and round (default 0.5; quick: 0.05)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="runs of the whole cell list; a case's time is the median of "
                             "its rounds' medians (default 3; quick: 1)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per subprocess")
    parser.add_argument("--no-write", action="store_true",
                        help="print the tables; write neither results.json nor docs/")
    parser.add_argument("--json", default=str(BENCH_DIR / "results.json"),
                        help="raw results path")
    parser.add_argument("--docs", default=str(ROOT / "docs"), help="where the report goes")
    parser.add_argument("--from-json", default=None,
                        help="re-render the report from saved results instead of running")
    args = parser.parse_args(argv)
    args.only = _split(args.only, WORKLOADS, "workload")
    args.peers = _split(args.peers, PEERS, "peer")
    args.threads = [int(t) for t in (args.threads or ("1" if args.quick else "1,2")).split(",")]
    args.budget = args.budget if args.budget is not None else (0.05 if args.quick else 0.5)
    args.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    return args


def _split(value: str, known: tuple[str, ...], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in items if v not in known]
    if unknown:
        raise SystemExit(f"unknown {what}(s) {unknown}; known: {', '.join(known)}")
    return [k for k in known if k in items]


# ---------------------------------------------------------------- the plan


def plan_cells(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One spec per subprocess: (workload, peer, threads[, compile phase])."""
    base = {"quick": args.quick, "budget_s": args.budget, "seed": 0}
    cells = []
    for workload in args.only:
        if workload == "compile":
            if "rlx" in args.peers:
                for phase in ("cold", "disk"):
                    cells.append({**base, "workload": workload, "peer": "rlx",
                                  "threads": max(args.threads), "phase": phase})
            continue
        for threads in args.threads:
            for peer in args.peers:
                cells.append({**base, "workload": workload, "peer": peer, "threads": threads})
    return cells


def cell_env(spec: dict[str, Any], scratch: pathlib.Path, round_: int = 0) -> dict[str, str]:
    """The subprocess environment: thread knobs, private caches, import path. Every
    torch.compile cell starts with an empty inductor cache (a cold compile at each thread
    count); rlx's compile cache is per round (the disk cell reuses what the round's cold
    cell wrote), every other rlx cell gets an empty one."""
    env = dict(os.environ)
    threads = str(spec["threads"])
    env.update(dict.fromkeys(THREAD_VARS, threads))
    env.pop("XLA_FLAGS", None)
    if spec["threads"] == 1:
        env["XLA_FLAGS"] = XLA_ONE_THREAD
    env["JAX_PLATFORMS"] = "cpu"
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"inductor-{round_}-", dir=scratch)
    cache = scratch / f"rlx-compile-{round_}" if spec["workload"] == "compile" else pathlib.Path(
        tempfile.mkdtemp(prefix="rlx-cache-", dir=scratch))
    env["RLX_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH_DIR), str(ROOT),
                                                      env.get("PYTHONPATH")]))
    return env


def run_cell(spec: dict[str, Any], scratch: pathlib.Path, timeout: float,
             round_: int = 0) -> dict[str, Any]:
    """Run one subprocess; any failure (crash, timeout, no result line) is an error cell."""
    command = [sys.executable, str(BENCH_DIR / "worker.py"), json.dumps(spec)]
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    # its own session, killed as a group at the end: helpers a peer leaves behind
    # (torch.compile's inductor compile workers) never compete with the next cell
    proc = subprocess.Popen(command, env=cell_env(spec, scratch, round_), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return _failed(spec, f"timeout after {timeout:.0f} s", "", started)
    finally:
        _kill_group(proc.pid)
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            result = json.loads(line[len(RESULT_MARKER):])
            result.update(status="ok", wall_s=round(time.perf_counter() - started, 2),
                          load_average_before=load)
            return result
    reason = f"exit code {proc.returncode}, no result line"
    return _failed(spec, reason, stderr, started)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _failed(spec: dict, reason: str, stderr: str, started: float) -> dict[str, Any]:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    detail = lines[-1] if lines else ""
    return {"spec": spec, "status": "error", "error": f"{reason}: {detail}"[:400],
            "stderr_tail": "\n".join(lines[-15:]), "cases": [],
            "wall_s": round(time.perf_counter() - started, 2)}


def describe(cell: dict[str, Any]) -> str:
    """A one-line progress summary of a finished cell."""
    spec = cell["spec"]
    head = f"{spec['workload']:<11} {spec['peer']:<13} t={spec['threads']}"
    if "phase" in spec:
        head += f" {spec['phase']}"
    if cell["status"] != "ok":
        return f"{head}  ERROR {cell['error']}"
    parts = []
    for case in cell["cases"]:
        if case["status"] != "ok":
            parts.append(f"{case['case']}: ERROR {case['error'][:120]}")
        elif "median_ms" in case:
            parts.append(f"{case['case']}: {case['median_ms']:.3f} ms")
        else:
            parts.append(f"{case['case']}: {case.get('total_s', 0):.2f} s")
    return f"{head}  " + "; ".join(parts) + f"  [{cell['wall_s']} s]"


def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    cells = plan_cells(args)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="rlx-bench-"))
    runs: list[list[dict[str, Any]]] = [[] for _ in cells]
    try:
        for r in range(args.rounds):
            for i, spec in enumerate(cells):
                cell = run_cell(spec, scratch, args.timeout, r)
                print(f"[round {r + 1}/{args.rounds}, {i + 1}/{len(cells)}] {describe(cell)}",
                      flush=True)
                runs[i].append(cell)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [merge_rounds(r) for r in runs]


def merge_rounds(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell from its rounds: per case the median of each number over the rounds that
    succeeded (min_ms / max_ms: the extremes, reps: the sum); an error cell if none did."""
    ok = [c for c in runs if c["status"] == "ok"]
    if not ok:
        return runs[-1]
    merged = {**ok[0], "rounds": len(ok), "wall_s": round(sum(c["wall_s"] for c in runs), 2)}
    merged["cases"] = [_merge_case([c["cases"][j] for c in ok if j < len(c["cases"])])
                       for j in range(len(ok[0]["cases"]))]
    return merged


_COMBINE = {"min_ms": min, "max_ms": max, "reps": sum}


def _merge_case(entries: list[dict[str, Any]]) -> dict[str, Any]:
    good = [e for e in entries if e.get("status") == "ok"]
    if not good:
        return entries[0]
    out = dict(good[0])
    for key, value in good[0].items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        values = [e[key] for e in good if key in e]
        out[key] = _COMBINE.get(key, statistics.median)(values)
    if "median_ms" in out:
        out["round_medians_ms"] = [e["median_ms"] for e in good]
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from report import (
        best_fma_peak,
        build_report,
        check_models,
        machine_info,
        measure_fma_peak,
        print_summary,
    )

    if args.from_json:
        data = json.loads(pathlib.Path(args.from_json).read_text())
        print_summary(data)
        build_report(data, pathlib.Path(args.docs))
        return 0
    started, load_start = time.time(), [round(x, 2) for x in os.getloadavg()]
    peak_before = measure_fma_peak()
    cells = run_all(args)
    args.fma_peak = best_fma_peak(peak_before, measure_fma_peak())
    checks = check_models(cells, MODELS)
    for warning in checks["warnings"]:
        print(f"WARNING: {warning}", flush=True)
    meta = machine_info(args, started, time.time())
    meta["load_average_start"] = load_start
    data = {"meta": meta, "checks": checks, "cells": cells}
    print_summary(data)
    if not args.no_write:
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
        build_report(data, pathlib.Path(args.docs))
        print(f"wrote {args.json}, {args.docs}/benchmarks.md, {args.docs}/benchmarks.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
