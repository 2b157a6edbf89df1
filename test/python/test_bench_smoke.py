"""Smoke test of the benchmark harness (bench/run.py): tiny sizes, no timing asserted.

The benchmarks themselves are never part of the test suite; this only checks that the
driver, one worker subprocess per peer and the report tables work, and that
``--no-write`` leaves docs/ and bench/results.json alone.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTPUTS = [ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "benchmarks.png",
           ROOT / "bench" / "results.json"]


def _stamps():
    return {p: p.stat().st_mtime_ns if p.exists() else None for p in OUTPUTS}


def test_quick_gemm_numpy_rlx_runs_and_writes_nothing():
    before = _stamps()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--only", "gemm",
         "--peers", "numpy,rlx", "--no-write"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "| case | threads | rlx | numpy |" in out
    assert "ERROR" not in out and "FAILED" not in out, out
    assert "GFLOP/s" in out
    assert _stamps() == before


def test_rounds_are_merged_by_the_median_of_their_medians():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from run import merge_rounds
    finally:
        sys.path.pop(0)

    def cell(median, reps, status="ok"):
        case = {"case": "c", "status": "ok", "median_ms": median, "min_ms": median - 1,
                "max_ms": median + 1, "reps": reps, "loss": 2.5, "ok_flag": True}
        return {"spec": {"workload": "w"}, "status": status, "wall_s": 1.0, "cases": [case]}

    merged = merge_rounds([cell(10.0, 5), cell(30.0, 5), cell(11.0, 6), cell(1.0, 9, "error")])
    (case,) = merged["cases"]
    assert case["median_ms"] == 11.0 and case["round_medians_ms"] == [10.0, 30.0, 11.0]
    assert (case["min_ms"], case["max_ms"], case["reps"]) == (9.0, 31.0, 16)
    assert case["ok_flag"] is True and merged["rounds"] == 3 and merged["wall_s"] == 4.0
    assert merge_rounds([cell(1.0, 1, "error")])["status"] == "error"


def test_compile_profile_names_every_phase():
    """bench/compile_profile.py: one round of the MLP gradient, every stage listed."""
    from rlx_mlir.lowering.upstream import pipeline_stages

    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "compile_profile.py"), "mlp", "--rounds", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    named = {line.split("  ")[0].strip() for line in lines[1:]}
    assert {"grad_with_loss", "xdsl lower-to-linalg", "verify + print LLVM dialect",
            "total"} <= named
    assert {f"stage {s.name}" for s in pipeline_stages()} <= named
    assert any(line.startswith("LLVM codegen (") for line in lines)


def test_fma_peak_loop_computes_its_chains_and_reports_gflops():
    """bench/peak.py: the compiled FMA loop computes what it says (so LLVM did not fold it
    away), and the peak it reports is a positive figure per core and for all cores."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import peak
    finally:
        sys.path.pop(0)
    loop = peak.compiled_loop(8)
    x = np.float64(0.5) + np.arange(peak.CHAINS) / 64
    for _ in range(50):
        x = x * 0.999 + 0.001
    assert np.isclose(loop(50), 8 * x.sum(), rtol=1e-5)
    assert loop(0) == np.float32(8 * (0.5 + np.arange(peak.CHAINS) / 64).sum())
    assert 0 < peak.gflops(loop, 1, 8) and peak.widest_lanes() in (8, 16)
