"""Train an MLP on scikit-learn's 8x8 digits with the tracing API, natively.

    python examples/mlp_digits.py            # full run: > 95% test accuracy
    python examples/mlp_digits.py --quick    # a few epochs

The loss is an ordinary Python function of a parameter dict; ``rlx.value_and_grad``
traces it once, differentiates it with the ``--autodiff`` pass and compiles it to
native code. Adam is numpy. Writes ``mlp_digits_loss.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from example_utils import Adam, dense_init, load_digits_split, minibatches, plot_losses

import rlx_mlir as rlx
from rlx_mlir.progress import ProgressBar


def init_mlp(rng: np.random.Generator, sizes=(64, 128, 10)) -> dict[str, np.ndarray]:
    """``{"w0", "b0", "w1", "b1", ...}`` for a ReLU MLP with these layer sizes."""
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        params[f"w{i}"] = dense_init(rng, a, (a, b))
        params[f"b{i}"] = np.zeros(b, np.float32)
    return params


def logits(params: dict, x):
    """The MLP: ReLU hidden layers, linear output."""
    layers = len(params) // 2
    for i in range(layers):
        x = x @ params[f"w{i}"] + params[f"b{i}"]
        if i < layers - 1:
            x = rlx.nn.relu(x)
    return x


def loss_fn(params: dict, x, labels):
    """Mean softmax cross-entropy of a batch."""
    return rlx.nn.cross_entropy(logits(params, x), labels)


predict = rlx.jit(logits)


def accuracy(params: dict, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of ``x`` classified correctly."""
    return float((np.argmax(predict(params, x), axis=1) == y).mean())


def train(epochs: int = 30, batch: int = 64, lr: float = 3e-3, seed: int = 0,
          out: Path | None = Path("mlp_digits_loss.png")) -> dict:
    """Train; return ``{"losses", "test_accuracy", "params"}``."""
    x_train, y_train, x_test, y_test = load_digits_split(seed=seed)
    rng = np.random.default_rng(seed)
    params = init_mlp(rng)
    step = rlx.value_and_grad(loss_fn)
    opt = Adam(params, lr)
    t0 = time.perf_counter()
    step(params, x_train[:batch], y_train[:batch])  # trace + compile once
    print(f"traced, differentiated and compiled the step in {time.perf_counter() - t0:.1f} s")
    losses: list[float] = []
    bar = ProgressBar(epochs * (len(x_train) // batch), "train")
    for _ in range(epochs):
        for idx in minibatches(len(x_train), batch, rng):
            loss, grads = step(params, x_train[idx], y_train[idx])
            opt.step(params, grads)
            losses.append(float(loss))
            bar.update(loss=float(loss))
    acc = accuracy(params, x_test, y_test)
    print(f"loss {np.mean(losses[:10]):.3f} -> {np.mean(losses[-10:]):.3f}; "
          f"test accuracy {acc:.2%}")
    if out is not None:
        plot_losses(losses, out, "MLP on digits, native rlx-mlir")
        print(f"plot: {out}")
    return {"losses": losses, "test_accuracy": acc, "params": params}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 epochs")
    parser.add_argument("--out", type=Path, default=Path("mlp_digits_loss.png"))
    args = parser.parse_args()
    train(3 if args.quick else args.epochs, out=args.out)


if __name__ == "__main__":
    main()
