"""Train a mixture-of-experts classifier on scikit-learn's 8x8 digits, natively.

    python examples/moe_digits.py            # full run: > 95% test accuracy
    python examples/moe_digits.py --quick    # a few epochs

A router picks the top-2 of 4 expert MLP layers for each image (``rlx.nn.top_k`` on its
softmax); ``rlx.nn.grouped_matmul`` multiplies each image by its experts' weights, one
matmul per expert over the images routed to it, and the two outputs are mixed by the
router's renormalised probabilities. An auxiliary load-balancing loss (Switch Transformer)
keeps every expert in use. Writes ``moe_digits_loss.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from example_utils import dense_init, fit_classifier, load_digits_split

import rlx_mlir as rlx

EXPERTS, TOP_K, HIDDEN = 4, 2, 64


def init_moe(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Router ``[64, E]``, experts ``[E, 64, H]`` with biases, and the output layer."""
    return {"router": dense_init(rng, 64, (64, EXPERTS)),
            "experts": np.stack([dense_init(rng, 64, (64, HIDDEN)) for _ in range(EXPERTS)]),
            "expert_b": np.zeros((EXPERTS, HIDDEN), np.float32),
            "out": dense_init(rng, HIDDEN, (HIDDEN, 10)), "out_b": np.zeros(10, np.float32)}


def moe_layer(params: dict, x):
    """``(hidden, balance)``: the top-2 mixture of ReLU experts and the Switch load-balancing
    term ``E * sum_e (fraction routed to e) * (mean router probability of e)``."""
    probs = rlx.nn.softmax(x @ params["router"])
    gates, ids = rlx.nn.top_k(probs, TOP_K)
    gates = gates / gates.sum(axis=1, keepdims=True)
    hidden = 0.0
    for slot in range(TOP_K):
        expert = ids[:, slot]
        h = rlx.nn.grouped_matmul(x, params["experts"], expert) + \
            rlx.nn.embedding(params["expert_b"], expert)
        hidden = hidden + rlx.nn.relu(h) * gates[:, slot:slot + 1]
    routed = rlx.nn.one_hot(ids[:, 0], EXPERTS).mean(axis=0)
    balance = EXPERTS * (routed * probs.mean(axis=0)).sum()
    return hidden, balance


def logits(params: dict, x):
    return moe_layer(params, x)[0] @ params["out"] + params["out_b"]


def loss_fn(params: dict, x, labels):
    """Cross-entropy plus 0.1 times the load-balancing term."""
    hidden, balance = moe_layer(params, x)
    return rlx.nn.cross_entropy(hidden @ params["out"] + params["out_b"], labels) + \
        0.1 * balance


predict = rlx.jit(logits)
expert_of = rlx.jit(lambda params, x: rlx.nn.argmax(x @ params["router"], axis=1))


def accuracy(params: dict, x: np.ndarray, y: np.ndarray) -> float:
    return float((np.argmax(predict(params, x), axis=1) == y).mean())


def train(epochs: int = 40, batch: int = 64, lr: float = 3e-3, seed: int = 0,
          out: Path | None = Path("moe_digits_loss.png")) -> dict:
    """Train; return ``{"losses", "test_accuracy", "params", "expert_share"}``."""
    x_train, y_train, x_test, y_test = load_digits_split(seed=seed)
    rng = np.random.default_rng(seed)
    result = fit_classifier(loss_fn, init_moe(rng), (x_train, y_train, x_test, y_test),
                            accuracy, epochs, batch, lr, rng, out,
                            "Top-2 mixture of experts on digits, native rlx-mlir")
    first = expert_of(result["params"], x_test)
    result["expert_share"] = np.bincount(first, minlength=EXPERTS) / len(first)
    print("test images per top expert:", np.round(result["expert_share"], 2).tolist())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="4 epochs")
    parser.add_argument("--out", type=Path, default=Path("moe_digits_loss.png"))
    args = parser.parse_args()
    train(4 if args.quick else args.epochs, out=args.out)


if __name__ == "__main__":
    main()
