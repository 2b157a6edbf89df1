"""The examples' quick modes: they train (loss falls, accuracy beats chance), sample,
and compute per-example gradients equal to a loop.

Each runs in a subprocess so that a native-code crash fails one test, not the session.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(code: str, tmp_path: Path, env: dict | None = None) -> dict:
    """Run ``code`` with the examples importable; it prints one JSON line last."""
    script = f"import json, sys\nsys.path.insert(0, {str(EXAMPLES)!r})\n{code}"
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def falls(losses: list[float], factor: float) -> bool:
    head, tail = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    return tail < factor * head


def test_mlp_digits_quick_from_the_command_line(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "mlp_digits.py"), "--quick",
                           "--out", "loss.png"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    accuracy = float(proc.stdout.split("test accuracy ")[1].split("%")[0])
    assert accuracy > 80
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"


def test_mlp_digits_quick_training_converges(tmp_path):
    out = run_example("""
import mlp_digits
r = mlp_digits.train(epochs=3, out=None)
print(json.dumps({"losses": r["losses"], "acc": r["test_accuracy"]}))
""", tmp_path)
    assert falls(out["losses"], 0.5)
    assert out["acc"] > 0.8  # chance is 0.1


def test_moe_digits_quick_trains_every_expert(tmp_path):
    """The top-2 mixture of experts learns, and the load-balancing loss keeps every expert
    chosen first for some test images."""
    out = run_example("""
import moe_digits
r = moe_digits.train(epochs=4, out=None)
print(json.dumps({"losses": r["losses"], "acc": r["test_accuracy"],
                  "share": r["expert_share"].tolist()}))
""", tmp_path)
    assert falls(out["losses"], 0.5)
    assert out["acc"] > 0.8
    assert min(out["share"]) > 0.02, out["share"]


CNN = """
import cnn_digits
r = cnn_digits.train(epochs=3, out="cnn.png")
print(json.dumps({"losses": r["losses"], "acc": r["test_accuracy"]}))
"""


def check_cnn(out: dict, tmp_path: Path) -> None:
    assert falls(out["losses"], 0.8)
    assert out["acc"] > 0.3  # chance is 0.1
    assert (tmp_path / "cnn.png").exists()


def test_cnn_digits_quick_training_converges(tmp_path):
    check_cnn(run_example(CNN, tmp_path), tmp_path)


def test_char_lm_quick_trains_and_samples(tmp_path):
    out = run_example("""
import numpy as np
import train_char_lm as lm
losses = lm.train(40, **lm.QUICK, out="lm.png", sample_length=0)
chars = sorted(set(lm.TEXT.read_text()))
cfg = {k: lm.QUICK[k] for k in ("d_model", "heads", "layers")}
params = lm.init_params(lm.char_lm_loss(2, lm.QUICK["seq"], len(chars), **cfg), "lm_loss",
                        np.random.default_rng(0))
sampler = lm.Sampler(params, chars, lm.QUICK["seq"], cfg)
rng = np.random.default_rng(0)
probs = sampler.next_probs([chars.index("T")])
text = sampler("The ", 20, rng, temperature=0.5, top_k=3)
greedy = lm.pick(np.array([0.1, 0.7, 0.2]), rng, temperature=1e-3)
print(json.dumps({"losses": losses, "text": text, "psum": float(probs.sum()),
                  "greedy": greedy}))
""", tmp_path)
    assert falls(out["losses"], 0.9)
    assert out["text"].startswith("The ") and len(out["text"]) == 24
    assert abs(out["psum"] - 1) < 1e-4
    assert out["greedy"] == 1
    assert (tmp_path / "lm.png").exists()


def test_per_example_grads_equal_the_loop(tmp_path):
    out = run_example("""
import per_example_grads as peg
r = peg.run(batch=8, out="norms.png")
print(json.dumps({"diff": r["max_difference"], "n": len(r["norms"]),
                  "shapes": {k: list(v.shape) for k, v in r["batched"].items()},
                  "scale": max(float(abs(v).max()) for v in r["looped"].values())}))
""", tmp_path)
    assert out["n"] == 8
    assert out["shapes"]["w0"] == [8, 64, 128] and out["shapes"]["b1"] == [8, 10]
    assert out["scale"] > 1e-3 and out["diff"] < 1e-5 * max(1.0, out["scale"])
