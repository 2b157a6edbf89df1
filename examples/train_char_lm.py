"""Train a small character-level transformer language model natively, then sample.

    python examples/train_char_lm.py --steps 300
    python examples/train_char_lm.py --quick                 # tiny model, 40 steps
    python examples/train_char_lm.py --temperature 0.5 --top-k 5 --prompt "A pass "

The model (``rlx_mlir.models.char_lm_loss``) is built with the builder, its
gradient function comes from the ``--autodiff`` pass, and both run as native code
through the JIT; Adam is a few lines of numpy (``example_utils.Adam``). Sampling
uses temperature and top-k. Writes ``char_lm_loss.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from example_utils import Adam, plot_losses

import rlx_mlir as rlx
from rlx_mlir.models import char_lm_logits, char_lm_loss
from rlx_mlir.progress import ProgressBar

TEXT = Path(__file__).resolve().parent / "data" / "compilers.txt"
QUICK = dict(batch=4, seq=16, d_model=32, heads=2, layers=1)
"""The ``--quick`` model: small enough to compile fast on a loaded machine."""


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


class Sampler:
    """Autoregressive sampling from the trained model, compiled once.

    ``temperature`` < 1 sharpens the distribution, ``top_k`` keeps only the k most
    likely characters (0: all of them).
    """

    def __init__(self, params: dict, chars: list[str], seq: int, cfg: dict):
        module = char_lm_logits(seq, len(chars), cfg["d_model"], cfg["heads"], cfg["layers"])
        self.run = rlx.compile(module, entry="lm_logits")
        self.names = [a.name for a in rlx.runtime.signature.Signature.of(
            rlx.ir.find_func(module, "lm_logits")).args if a.name != "tokens"]
        self.params, self.chars, self.seq = params, chars, seq

    def next_probs(self, context: list[int]) -> np.ndarray:
        """The model's distribution over the character after ``context``."""
        window = context[-self.seq:]
        pos = len(window) - 1
        tokens = np.array([window + [0] * (self.seq - len(window))], np.int32)
        out = self.run(tokens, **{n: self.params[n] for n in self.names})
        return np.asarray(out[0] if isinstance(out, (list, tuple)) else out)[0, pos]

    def __call__(self, prompt: str, length: int, rng: np.random.Generator,
                 temperature: float = 0.8, top_k: int = 0) -> str:
        """``prompt`` followed by ``length`` sampled characters."""
        context = [self.chars.index(c) for c in prompt if c in self.chars] or [0]
        for _ in range(length):
            context.append(pick(self.next_probs(context), rng, temperature, top_k))
        return "".join(self.chars[i] for i in context)


def pick(probs: np.ndarray, rng: np.random.Generator, temperature: float = 1.0,
         top_k: int = 0) -> int:
    """Sample an index from ``probs`` reshaped by temperature and top-k."""
    logp = np.log(np.maximum(probs.astype(np.float64), 1e-30)) / max(temperature, 1e-6)
    if 0 < top_k < len(logp):
        logp[np.argsort(logp)[:-top_k]] = -np.inf
    p = np.exp(logp - logp.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def train(steps: int, batch: int = 16, seq: int = 32, d_model: int = 64, heads: int = 4,
          layers: int = 2, out: Path | None = Path("char_lm_loss.png"), seed: int = 0,
          prompt: str = "The compiler ", sample_length: int = 80, temperature: float = 0.8,
          top_k: int = 10) -> list[float]:
    """Train for ``steps`` Adam steps, plot the loss, print a sample; return the losses."""
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
    opt = Adam(params, lr=3e-3)
    losses = []
    bar = ProgressBar(steps, "train")
    for _, (x, y) in zip(range(steps), batches(data, batch, seq, rng), strict=False):
        loss, *grads = step_fn(tokens=x, targets=y, d_output=np.float32(1), **params)
        opt.step(params, dict(zip(names, grads, strict=True)))
        losses.append(float(loss))
        bar.update(loss=float(loss))
    print(f"loss {np.mean(losses[:10]):.3f} -> {np.mean(losses[-10:]):.3f}")
    if out is not None:
        plot_losses(losses, out, "char LM, native rlx-mlir", "cross-entropy (nats/char)")
        print(f"plot: {out}")
    if sample_length:
        sampler = Sampler(params, chars, seq, cfg)
        text = sampler(prompt, sample_length, rng, temperature, top_k)
        print(f"sample (temperature {temperature}, top-k {top_k}): {text!r}")
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--quick", action="store_true",
                        help="a tiny model for 40 steps (a smoke test)")
    parser.add_argument("--out", type=Path, default=Path("char_lm_loss.png"))
    parser.add_argument("--prompt", default="The compiler ")
    parser.add_argument("--length", type=int, default=80, help="characters to sample")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=10)
    args = parser.parse_args()
    sampling = dict(prompt=args.prompt, sample_length=args.length,
                    temperature=args.temperature, top_k=args.top_k)
    if args.quick:
        train(40, **QUICK, out=args.out, **sampling)
    else:
        train(args.steps, out=args.out, **sampling)


if __name__ == "__main__":
    main()
