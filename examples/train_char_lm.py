"""Train a small character-level transformer language model natively, then sample.

    python examples/train_char_lm.py --steps 300

The model (``rlx_mlir.models.char_lm_loss``) is built with the builder, its
gradient function comes from the ``--autodiff`` pass, and both run as native code
through the JIT; Adam is a few lines of numpy. Writes ``char_lm_loss.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import rlx_mlir as rlx
from rlx_mlir.models import char_lm_logits, char_lm_loss
from rlx_mlir.progress import ProgressBar

TEXT = Path(__file__).resolve().parent / "data" / "compilers.txt"


class Adam:
    """Adam on a dict of numpy parameters."""

    def __init__(self, params: dict[str, np.ndarray], lr: float = 3e-3):
        self.lr, self.t = lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        for k, g in grads.items():
            self.m[k] = 0.9 * self.m[k] + 0.1 * g
            self.v[k] = 0.999 * self.v[k] + 0.001 * g * g
            m_hat = self.m[k] / (1 - 0.9**self.t)
            v_hat = self.v[k] / (1 - 0.999**self.t)
            params[k] -= (self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)


def init_params(module, entry: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    sig = rlx.runtime.signature.Signature.of(rlx.ir.find_func(module, entry))
    params = {}
    for a in sig.args:
        if not a.is_param:
            continue
        if a.name.endswith(("_g",)):
            params[a.name] = np.ones(a.shape, np.float32)
        elif a.name.endswith(("_b", "b1", "b2")) or len(a.shape) == 1:
            params[a.name] = np.zeros(a.shape, np.float32)
        else:
            params[a.name] = (rng.standard_normal(a.shape) / np.sqrt(a.shape[0])).astype(
                np.float32)
    return params


def batches(data: np.ndarray, batch: int, seq: int, rng: np.random.Generator):
    while True:
        starts = rng.integers(0, len(data) - seq - 1, batch)
        x = np.stack([data[s:s + seq] for s in starts]).astype(np.int32)
        y = np.stack([data[s + 1:s + seq + 1] for s in starts]).astype(np.int32)
        yield x, y


def sample(params, chars: list[str], seq: int, cfg: dict, length: int, rng) -> str:
    module = char_lm_logits(seq, len(chars), cfg["d_model"], cfg["heads"], cfg["layers"])
    run = rlx.compile(module, entry="lm_logits")
    names = [a.name for a in rlx.runtime.signature.Signature.of(
        rlx.ir.find_func(module, "lm_logits")).args if a.name != "tokens"]
    context = [chars.index(c) for c in "The compiler "]
    for _ in range(length):
        window = (context[-seq:] + [0] * seq)[:seq] if len(context) < seq else context[-seq:]
        pos = min(len(context), seq) - 1
        probs = run(np.array([window], np.int32), **{n: params[n] for n in names})[0][0, pos]
        probs = probs.astype(np.float64) ** 1.5
        context.append(int(rng.choice(len(chars), p=probs / probs.sum())))
    return "".join(chars[i] for i in context)


def plot(losses: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=1, alpha=0.5, label="loss")
    window = max(1, len(losses) // 20)
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    ax.plot(range(window - 1, len(losses)), smooth, lw=2, label=f"mean of {window}")
    ax.set(xlabel="step", ylabel="cross-entropy (nats/char)", title="char LM, native rlx-mlir")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def train(steps: int, batch: int = 16, seq: int = 32, d_model: int = 64, heads: int = 4,
          layers: int = 2, out: Path = Path("char_lm_loss.png"), seed: int = 0) -> list[float]:
    text = TEXT.read_text()
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text])
    cfg = dict(d_model=d_model, heads=heads, layers=layers)
    module = char_lm_loss(batch, seq, len(chars), **cfg)
    rlx.grad_with_loss(module, "lm_loss")
    t0 = time.perf_counter()
    step_fn = rlx.compile(module, entry="lm_loss_grad")
    print(f"compiled the training step natively in {time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(seed)
    params = init_params(module, "lm_loss", rng)
    names = list(params)
    opt = Adam(params)
    losses = []
    bar = ProgressBar(steps, "train")
    for _, (x, y) in zip(range(steps), batches(data, batch, seq, rng), strict=False):
        loss, *grads = step_fn(tokens=x, targets=y, d_output=np.float32(1), **params)
        opt.step(params, dict(zip(names, grads, strict=True)))
        losses.append(float(loss))
        bar.update(loss=float(loss))
    plot(losses, out)
    print(f"loss {np.mean(losses[:10]):.3f} -> {np.mean(losses[-10:]):.3f}; plot: {out}")
    print("sample:", repr(sample(params, chars, seq, cfg, 80, rng)))
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("char_lm_loss.png"))
    args = parser.parse_args()
    train(args.steps, out=args.out)


if __name__ == "__main__":
    main()
