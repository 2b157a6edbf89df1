"""Per-example gradients of the digits MLP with ``rlx.vmap(rlx.grad(loss))``.

    python examples/per_example_grads.py            # batch of 64
    python examples/per_example_grads.py --quick    # batch of 8

``rlx.grad(loss)`` is the gradient of one example's loss; ``rlx.vmap`` with
``in_axes=(None, 0, 0)`` maps it over a batch of examples with the parameters
shared, in one natively compiled function (the ``--autodiff`` pass, then the
``--vmap`` pass). The result is checked against a Python loop of single-example
gradients, and used for what per-example gradients are for: each example's
gradient norm (DP-SGD clipping, data attribution). Writes a histogram PNG.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from example_utils import load_digits_split
from mlp_digits import init_mlp, logits

import rlx_mlir as rlx
from rlx_mlir.progress import ProgressBar


def example_loss(params: dict, x, label):
    """Cross-entropy of one example: ``x`` is ``[64]``, ``label`` a scalar."""
    return rlx.nn.cross_entropy(logits(params, x[None]), label[None])


per_example_grads = rlx.vmap(rlx.grad(example_loss), in_axes=(None, 0, 0))
single_grad = rlx.grad(example_loss)


def loop_grads(params: dict, xs: np.ndarray, labels: np.ndarray) -> dict:
    """The reference: one ``rlx.grad`` call per example, stacked."""
    bar = ProgressBar(len(xs), "loop")
    rows = []
    for x, label in zip(xs, labels, strict=True):
        rows.append(single_grad(params, x, label))
        bar.update()
    return {k: np.stack([r[k] for r in rows]) for k in params}


def max_difference(a: dict, b: dict) -> float:
    """Largest absolute difference between two gradient dicts."""
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def run(batch: int = 64, seed: int = 0, out: Path | None = Path("per_example_grads.png")
        ) -> dict:
    """Compute per-example gradients both ways; return both and their difference."""
    x_train, y_train, _, _ = load_digits_split(seed=seed)
    params = init_mlp(np.random.default_rng(seed))
    xs, labels = x_train[:batch], y_train[:batch]
    t0 = time.perf_counter()
    batched = per_example_grads(params, xs, labels)
    print(f"vmap(grad(loss)) over {batch} examples: {time.perf_counter() - t0:.1f} s "
          "(trace, autodiff, vmap, compile, run)")
    looped = loop_grads(params, xs, labels)
    diff = max_difference(batched, looped)
    norms = np.sqrt(sum((batched[k].reshape(batch, -1) ** 2).sum(1) for k in batched))
    print(f"max |vmap - loop| = {diff:.2e}; per-example gradient norms: "
          f"min {norms.min():.3f}, median {np.median(norms):.3f}, max {norms.max():.3f}")
    if out is not None:
        plot_norms(norms, out)
        print(f"plot: {out}")
    return {"batched": batched, "looped": looped, "max_difference": diff, "norms": norms}


def plot_norms(norms: np.ndarray, path: Path) -> None:
    """A histogram of per-example gradient norms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(norms, bins=min(30, len(norms)))
    ax.set(xlabel="per-example gradient norm", ylabel="examples",
           title="vmap(grad(loss)) on the digits MLP")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="8 examples")
    parser.add_argument("--out", type=Path, default=Path("per_example_grads.png"))
    args = parser.parse_args()
    result = run(8 if args.quick else args.batch, out=args.out)
    if result["max_difference"] > 1e-4:
        raise SystemExit("per-example gradients disagree with the loop")


if __name__ == "__main__":
    main()
