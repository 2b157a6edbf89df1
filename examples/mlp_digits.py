"""Train an MLP on scikit-learn's 8x8 digits with the tracing API, natively.

    python examples/mlp_digits.py            # full run: > 95% test accuracy
    python examples/mlp_digits.py --quick    # a few epochs

The loss is an ordinary Python function of a parameter dict; ``rlx.value_and_grad``
traces it once, differentiates it with the ``--autodiff`` pass and compiles it to
native code. Adam is numpy. Writes ``mlp_digits_loss.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from example_utils import (
    dense_init,
    fit_classifier,
    load_digits_split,
)

import rlx_mlir as rlx


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
    return fit_classifier(loss_fn, params, (x_train, y_train, x_test, y_test), accuracy,
                          epochs, batch, lr, rng, out, "MLP on digits, native rlx-mlir")


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
