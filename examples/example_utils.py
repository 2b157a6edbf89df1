"""Shared helpers for the examples: the digits data set, parameter init, Adam, plots.

>>> # from example_utils import load_digits_split, Adam, plot_losses
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_digits_split(test_fraction: float = 0.25, seed: int = 0, images: bool = False):
    """scikit-learn's bundled 8x8 digits (no download), scaled to [0, 1] and split.

    Returns ``(x_train, y_train, x_test, y_test)``: float32 ``[N, 64]`` (or
    ``[N, 1, 8, 8]`` when ``images``) and int32 labels.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    if images:
        x = x.reshape(-1, 1, 8, 8)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_fraction))
    return x[:cut], y[:cut], x[cut:], y[cut:]


def minibatches(n: int, batch: int, rng: np.random.Generator):
    """Index arrays of exactly ``batch`` rows (a fixed shape: one compiled program)."""
    order = rng.permutation(n)
    for start in range(0, n - batch + 1, batch):
        yield order[start:start + batch]


def dense_init(rng: np.random.Generator, fan_in: int, shape) -> np.ndarray:
    """He-normal initialisation, float32."""
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


class Adam:
    """Adam on a dict (pytree of one level) of numpy parameters."""

    def __init__(self, params: dict[str, np.ndarray], lr: float = 1e-3):
        self.lr, self.t = lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Update ``params`` in place."""
        self.t += 1
        for k, g in grads.items():
            self.m[k] = 0.9 * self.m[k] + 0.1 * g
            self.v[k] = 0.999 * self.v[k] + 0.001 * g * g
            m_hat = self.m[k] / (1 - 0.9**self.t)
            v_hat = self.v[k] / (1 - 0.999**self.t)
            params[k] = (params[k] - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(
                np.float32)


def plot_losses(losses: list[float], path: Path, title: str,
                ylabel: str = "cross-entropy") -> None:
    """A PNG of the per-step loss and its moving average (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=1, alpha=0.5, label="loss")
    window = max(1, len(losses) // 20)
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    ax.plot(range(window - 1, len(losses)), smooth, lw=2, label=f"mean of {window}")
    ax.set(xlabel="step", ylabel=ylabel, title=title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fit_classifier(loss_fn, params: dict, data: tuple, accuracy, epochs: int, batch: int,
                   lr: float, rng: np.random.Generator, out: Path | None, title: str) -> dict:
    """Adam on ``rlx.value_and_grad(loss_fn)`` over minibatches; returns
    ``{"losses", "test_accuracy", "params"}`` and plots the loss curve to ``out``."""
    import time

    import rlx_mlir as rlx
    from rlx_mlir.progress import ProgressBar

    x_train, y_train, x_test, y_test = data
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
        plot_losses(losses, out, title)
        print(f"plot: {out}")
    return {"losses": losses, "test_accuracy": acc, "params": params}
