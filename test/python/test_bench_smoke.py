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
