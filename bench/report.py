"""Tables, checks, machine description and the figure of a benchmark run (bench/run.py)."""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import shlex
import subprocess
import sys
from typing import Any

from common import PEERS

OLD_RUN_PEAK_PER_CORE = 117.4
"""The Zen 4 host's FMA peak, for results.json files written before the run measured it."""
LOSS_RTOL, GRAD_RTOL = 1e-3, 1e-2
POLICY_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
RUN = ".venv/bin/python bench/run.py"


# ---------------------------------------------------------------- lookups


def ok_cases(cells: list[dict], workload: str) -> dict[tuple[str, int, str], dict]:
    """``{(case, threads, peer): case entry}`` of a workload's successful cases."""
    found = {}
    for cell in cells:
        spec = cell["spec"]
        if spec["workload"] != workload or cell["status"] != "ok":
            continue
        for case in cell["cases"]:
            if case["status"] == "ok":
                found[(case["case"], spec["threads"], spec["peer"])] = case
    return found


def failures(cells: list[dict]) -> list[str]:
    """One line per failed cell or case."""
    lines = []
    for cell in cells:
        spec = cell["spec"]
        where = f"{spec['workload']} / {spec['peer']} / {spec['threads']} thread(s)"
        if "phase" in spec:
            where += f" / {spec['phase']}"
        if cell["status"] != "ok":
            lines.append(f"{where}: {cell['error']}{_signal_hint(cell['error'])}")
            continue
        lines += [f"{where} / {c['case']}: {c['error']}" for c in cell["cases"]
                  if c["status"] != "ok"]
    return lines


def _signal_hint(error: str) -> str:
    if "exit code -9" in error:
        return " (SIGKILL: most likely the out-of-memory killer)"
    if "exit code -6" in error:
        return " (SIGABRT: an assertion in native code)"
    return ""


def row_keys(cells: list[dict], workload: str) -> list[tuple[str, int]]:
    """(case, threads) rows in run order."""
    keys: list[tuple[str, int]] = []
    for cell in cells:
        spec = cell["spec"]
        if spec["workload"] != workload:
            continue
        for case in cell["cases"]:
            key = (case["case"], spec["threads"])
            if key not in keys:
                keys.append(key)
    return sorted(keys, key=lambda k: (k[1], keys.index(k)))


def peers_of(cells: list[dict], workload: str) -> list[str]:
    present = {c["spec"]["peer"] for c in cells if c["spec"]["workload"] == workload}
    return [p for p in PEERS if p in present]


def cell_error(cells: list[dict], workload: str, case: str, threads: int, peer: str) -> str:
    for cell in cells:
        spec = cell["spec"]
        if (spec["workload"], spec["threads"], spec["peer"]) != (workload, threads, peer):
            continue
        if cell["status"] != "ok":
            return "error"
        for entry in cell["cases"]:
            if entry["case"] == case and entry["status"] != "ok":
                return "error"
    return "—"


# ---------------------------------------------------------------- checks


def check_models(cells: list[dict], models: tuple[str, ...]) -> dict[str, Any]:
    """Compare each peer's loss and gradient norms with the reference peer (numpy first)."""
    out: dict[str, Any] = {"warnings": [], "comparisons": []}
    for workload in models:
        found = ok_cases(cells, workload)
        for case, threads in row_keys(cells, workload):
            peers = {p: found[(case, threads, p)] for p in PEERS if (case, threads, p) in found}
            if len(peers) < 2:
                continue
            ref_name = "numpy" if "numpy" in peers else next(iter(peers))
            for name, entry in peers.items():
                if name != ref_name:
                    out["comparisons"].append(
                        _compare(workload, threads, ref_name, peers[ref_name], name, entry, out))
    return out


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-30)


def _compare(workload, threads, ref_name, ref, name, entry, out) -> dict[str, Any]:
    loss_rel = _rel(entry["loss"], ref["loss"])
    grad_rel = max((_rel(a, b) for a, b in zip(entry["grad_norms"], ref["grad_norms"],
                                                strict=False)), default=0.0)
    if len(entry["grad_norms"]) != len(ref["grad_norms"]):
        grad_rel = float("inf")
    where = f"{workload} ({threads} thread(s)): {name} vs {ref_name}"
    if loss_rel > LOSS_RTOL:
        out["warnings"].append(f"{where}: loss {entry['loss']:.6g} vs {ref['loss']:.6g} "
                               f"(relative difference {loss_rel:.2e} > {LOSS_RTOL:g})")
    if grad_rel > GRAD_RTOL:
        out["warnings"].append(f"{where}: gradient norms differ by {grad_rel:.2e} (relative)")
    return {"workload": workload, "threads": threads, "peer": name, "reference": ref_name,
            "loss": entry["loss"], "reference_loss": ref["loss"], "loss_rel": loss_rel,
            "grad_norm_rel": grad_rel}


# ---------------------------------------------------------------- machine


def machine_info(args, started: float, finished: float) -> dict[str, Any]:
    lscpu = _lscpu()
    cores = int(lscpu.get("Core(s) per socket", "0") or 0) * int(lscpu.get("Socket(s)", "1"))
    return {
        "date_utc": datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat(
            timespec="seconds"),
        "duration_s": round(finished - started, 1),
        "command": " ".join(shlex.quote(a) for a in ["bench/run.py", *sys.argv[1:]]),
        "cpu_model": lscpu.get("Model name", platform.processor()),
        "cpu_family": f"family {lscpu.get('CPU family', '?')}, model {lscpu.get('Model', '?')}",
        "physical_cores": cores or os.cpu_count(),
        "threads_per_core": lscpu.get("Thread(s) per core"),
        "caches": {k: lscpu.get(k) for k in ("L1d cache", "L2 cache", "L3 cache")},
        "hypervisor": lscpu.get("Hypervisor vendor"),
        "avx512": "avx512f" in lscpu.get("Flags", ""),
        "fma_peak": getattr(args, "fma_peak", None),
        "python": platform.python_version(), "kernel": platform.release(),
        "policy_env": {k: os.environ.get(k, "(unset)") for k in POLICY_VARS},
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "quick": args.quick, "budget_s": args.budget, "threads": args.threads,
        "rounds": args.rounds,
        "workloads": args.only, "peers": args.peers,
    }


def measure_fma_peak() -> dict[str, Any] | None:
    """bench/peak.py's figures (GFLOP/s on one core and on all), from a subprocess that
    imports only MLIR; None (with a warning) if it fails."""
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("peak.py"))],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"WARNING: bench/peak.py failed: {done.stderr.strip()[-500:]}", flush=True)
        return None
    return json.loads(done.stdout)


def best_fma_peak(first: dict | None, second: dict | None) -> dict | None:
    """The higher of two peak measurements, figure by figure (load only lowers them)."""
    if not first or not second:
        return first or second
    return {**first, **{k: max(first[k], second[k]) for k in ("per_core", "all_cores")}}


def peak_gflops(meta: dict[str, Any], threads: int) -> float:
    """The measured FMA peak of ``threads`` cores (older results: the Zen 4 host's figure)."""
    peak = meta.get("fma_peak")
    if not peak:
        return threads * meta.get("measured_peak_gflops_per_core", OLD_RUN_PEAK_PER_CORE)
    if threads >= peak["cores"]:
        return peak["all_cores"] * threads / peak["cores"]
    return peak["per_core"] * threads


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def library_versions(cells: list[dict]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for cell in cells:
        for key, value in cell.get("library", {}).items():
            if key in ("rlx_mlir", "torch", "jax", "numpy", "blas", "erf", "devices"):
                merged[key] = value
    return merged


# ---------------------------------------------------------------- tables


def fmt_ms(ms: float) -> str:
    """Three significant digits, no exponent: 0.0123, 1.23, 12.3, 1234."""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.3g}"


def fmt_time(entry: dict) -> str:
    return (f"{fmt_ms(entry['median_ms'])} ({fmt_ms(entry['min_ms'])}–"
            f"{fmt_ms(entry['max_ms'])})")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def time_table(cells: list[dict], workload: str) -> str:
    """Median ms (min–max) per (case, threads) row and peer column."""
    found, peers = ok_cases(cells, workload), peers_of(cells, workload)
    rows = []
    for case, threads in row_keys(cells, workload):
        row = [case, str(threads)]
        for p in peers:
            entry = found.get((case, threads, p))
            row.append(fmt_time(entry) if entry else cell_error(cells, workload, case,
                                                                 threads, p))
        rows.append(row)
    return markdown_table(["case", "threads", *peers], rows)


def gflops_table(cells: list[dict], meta: dict[str, Any]) -> str:
    """GFLOP/s and the fraction of the measured peak of the cores in use."""
    found, peers = ok_cases(cells, "gemm"), peers_of(cells, "gemm")
    rows = []
    for case, threads in row_keys(cells, "gemm"):
        peak = peak_gflops(meta, threads)
        row = [case, str(threads), f"{peak:.1f}"]
        for p in peers:
            entry = found.get((case, threads, p))
            row.append(f"{entry['gflops']:.1f} ({100 * entry['gflops'] / peak:.0f}%)"
                       if entry else cell_error(cells, "gemm", case, threads, p))
        rows.append(row)
    return markdown_table(["case", "threads", "peak GFLOP/s", *peers], rows)


def ratio_table(cells: list[dict], workload: str) -> str:
    """rlx median time / peer median time (below 1: rlx is faster)."""
    found = ok_cases(cells, workload)
    others = [p for p in peers_of(cells, workload) if p != "rlx"]
    rows = []
    for case, threads in row_keys(cells, workload):
        mine = found.get((case, threads, "rlx"))
        row = [case, str(threads)]
        for p in others:
            theirs = found.get((case, threads, p))
            row.append(f"{mine['median_ms'] / theirs['median_ms']:.2f}"
                       if mine and theirs else "—")
        rows.append(row)
    return markdown_table(["case", "threads", *(f"rlx/{p}" for p in others)], rows)


def util_table(cells: list[dict]) -> str:
    """CPU time / wall time of the timed loops: the cores each peer really used."""
    columns = sorted({(c["spec"]["workload"], c["spec"]["threads"]) for c in cells
                      if c["spec"]["workload"] != "compile"}, key=lambda k: (k[0], k[1]))
    rows = []
    for peer in PEERS:
        row, seen = [peer], False
        for workload, threads in columns:
            utils = [case["cpu_util"] for cell in cells if cell["status"] == "ok"
                     and (cell["spec"]["workload"], cell["spec"]["threads"],
                          cell["spec"]["peer"]) == (workload, threads, peer)
                     for case in cell["cases"] if case["status"] == "ok"]
            seen |= bool(utils)
            row.append(f"{max(utils):.2f}" if utils else "—")
        if seen:
            rows.append(row)
    return markdown_table(["peer", *(f"{w} t={t}" for w, t in columns)], rows)


def compile_cases(cells: list[dict]) -> dict[tuple[str, str], dict]:
    """``{(model, phase): entry}`` of the rlx compile workload's successful cases."""
    found = {}
    for cell in cells:
        if cell["spec"]["workload"] == "compile" and cell["status"] == "ok":
            for case in cell["cases"]:
                if case["status"] == "ok":
                    found[(case["case"], cell["spec"]["phase"])] = case
    return found


def compile_table(cells: list[dict]) -> str:
    """rlx cold / warm compile against JAX jit and torch.compile first-call overheads."""
    rlx = compile_cases(cells)
    rows = []
    for model in ("mlp", "transformer", "llama"):
        found = ok_cases(cells, model)
        rlx_cells = _rlx_compile_cells(rlx.get((model, "cold")), rlx.get((model, "disk")))
        if rlx_cells[0] == "—":
            rlx_cells[0] = _prepare_fallback(found, model)
        rows.append([model, *rlx_cells,
                     _first_call(found, model, "jax"), _first_call(found, model, "torch_compile")])
    header = ["model", "rlx cold total s", "grad / lower / codegen / 1st-call extra s",
              "rlx warm (memory) ms", "rlx warm (disk) s", "jax jit s", "torch.compile s"]
    return markdown_table(header, rows)


def _rlx_compile_cells(cold: dict | None, disk: dict | None) -> list[str]:
    disk_text = "—"
    if disk:
        disk_text = f"{disk['total_s']:.2f}" + ("" if disk.get("disk_cache_hit") else
                                                " (cache miss)")
    if cold is None:
        return ["—", "—", "—", disk_text]
    parts = " / ".join(f"{cold.get(k, 0):.2f}" for k in
                       ("grad_with_loss_s", "lowering_s", "llvm_codegen_s", "first_call_extra_s"))
    hit = "" if cold.get("memory_hit_same_engine") else " (cache miss)"
    return [f"{cold['total_s']:.2f}", parts, f"{cold['memory_hit_s'] * 1e3:.3f}{hit}",
            disk_text]


def _prepare_fallback(found: dict, model: str) -> str:
    """rlx's compile inside its model cell (fresh cache dir) when the compile cell failed."""
    entries = sorted((t, v) for (c, t, p), v in found.items() if c == model and p == "rlx")
    if not entries:
        return "—"
    return f"{entries[0][1]['prepare_ms'] / 1e3:.2f} (model cell t={entries[0][0]})"


def _first_call(found: dict, model: str, peer: str) -> str:
    """Compile time = first call - steady median, from the highest thread count's cell
    (the cores rlx's cold compile uses)."""
    entries = sorted((t, v) for (c, t, p), v in found.items() if c == model and p == peer)
    return f"{entries[-1][1]['compile_ms'] / 1e3:.2f} (t={entries[-1][0]})" if entries else "—"


def print_summary(data: dict[str, Any]) -> None:
    """The main tables on stdout (also in --no-write mode)."""
    cells = data["cells"]
    workloads = [w for w in ("gemm", "mlp", "transformer", "llama")
                 if any(c["spec"]["workload"] == w for c in cells)]
    for workload in workloads:
        print(f"\n## {workload}: median ms (min–max)\n{time_table(cells, workload)}")
        print(f"\n{ratio_table(cells, workload)}")
    if any(c["spec"]["workload"] == "gemm" for c in cells):
        print(f"\n## gemm GFLOP/s\n{gflops_table(cells, data['meta'])}")
    if any(c["spec"]["workload"] == "compile" for c in cells):
        print(f"\n## compile\n{compile_table(cells)}")
    for line in failures(cells):
        print(f"FAILED {line}")


def build_report(data: dict[str, Any], docs: pathlib.Path) -> None:
    """docs/benchmarks.md and docs/benchmarks.png."""
    from report_doc import render_markdown, render_png

    docs.mkdir(parents=True, exist_ok=True)
    (docs / "benchmarks.md").write_text(render_markdown(data))
    render_png(data, docs / "benchmarks.png")
