"""Train a small CNN on scikit-learn's 8x8 digits with the tracing API, natively.

    python examples/cnn_digits.py            # full run
    python examples/cnn_digits.py --quick    # 3 epochs

conv2d(1->8, 3x3, pad 1) -> relu -> max_pool2d(2) -> conv2d(8->16, 3x3, pad 1) -> relu
-> max_pool2d(2) -> linear(64->10), trained with ``rlx.value_and_grad`` and numpy Adam
on NCHW images ``[N, 1, 8, 8]``. Writes ``cnn_digits_loss.png``.
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


def init_cnn(rng: np.random.Generator, c1: int = 8, c2: int = 16) -> dict[str, np.ndarray]:
    """Parameters of the two conv layers (OIHW) and the linear classifier."""
    return {
        "conv1": dense_init(rng, 9, (c1, 1, 3, 3)), "bias1": np.zeros(c1, np.float32),
        "conv2": dense_init(rng, 9 * c1, (c2, c1, 3, 3)), "bias2": np.zeros(c2, np.float32),
        "w": dense_init(rng, 4 * c2, (4 * c2, 10)), "b": np.zeros(10, np.float32),
    }


def logits(params: dict, images):
    """``[N, 1, 8, 8]`` images -> ``[N, 10]`` logits."""
    h = rlx.nn.relu(rlx.nn.conv2d(images, params["conv1"], params["bias1"], padding=(1, 1)))
    h = rlx.nn.max_pool2d(h, (2, 2))                                   # [N, c1, 4, 4]
    h = rlx.nn.relu(rlx.nn.conv2d(h, params["conv2"], params["bias2"], padding=(1, 1)))
    h = rlx.nn.max_pool2d(h, (2, 2))                                   # [N, c2, 2, 2]
    return h.reshape(h.shape[0], -1) @ params["w"] + params["b"]


def loss_fn(params: dict, images, labels):
    """Mean softmax cross-entropy of a batch."""
    return rlx.nn.cross_entropy(logits(params, images), labels)


predict = rlx.jit(logits)


def accuracy(params: dict, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of ``x`` classified correctly."""
    return float((np.argmax(predict(params, x), axis=1) == y).mean())


def train(epochs: int = 15, batch: int = 64, lr: float = 3e-3, seed: int = 0,
          out: Path | None = Path("cnn_digits_loss.png")) -> dict:
    """Train; return ``{"losses", "test_accuracy", "params"}``."""
    x_train, y_train, x_test, y_test = load_digits_split(seed=seed, images=True)
    rng = np.random.default_rng(seed)
    params = init_cnn(rng)
    return fit_classifier(loss_fn, params, (x_train, y_train, x_test, y_test), accuracy,
                          epochs, batch, lr, rng, out, "CNN on digits, native rlx-mlir")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="3 epochs")
    parser.add_argument("--out", type=Path, default=Path("cnn_digits_loss.png"))
    args = parser.parse_args()
    train(3 if args.quick else args.epochs, out=args.out)


if __name__ == "__main__":
    main()
