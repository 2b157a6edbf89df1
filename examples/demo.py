"""The main demo (``make demo``): build models with the builder, print their rlx IR,
differentiate them and run them, then train a transformer language model natively.

1. An MLP and a pre-norm transformer block, built op by op with ``rlx_mlir.Builder``.
2. Their rlx IR, and the interpreter's outputs on seeded random inputs.
3. ``--autodiff`` on the MLP loss, checked against finite differences.
4. A character-level transformer LM trained for 300 steps as native code (JIT), with
   a progress bar, a falling loss, a sample, and ``char_lm_loss.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import rlx_mlir as rlx
from rlx_mlir.models import mlp_loss, transformer_block
from rlx_mlir.runtime.signature import Signature
from rlx_mlir.testing import check_grads
from rlx_mlir.tools.rlx_run import random_input


def banner(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def random_args(module, entry: str, seed: int = 0, int_high: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sig = Signature.of(rlx.ir.find_func(module, entry))
    return {a.name: random_input(a, rng, int_high) * (0.3 if a.is_param else 1.0)
            if a.dtype.kind == "f" else random_input(a, rng, int_high) for a in sig.args}


def transformer_module() -> rlx.Builder:
    b = rlx.Builder("block")
    x = b.input("x", (2, 8, 32))
    y = transformer_block(b, x, prefix="", heads=4)
    b.ret(y)
    return b.module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps of the LM")
    parser.add_argument("--quick", action="store_true", help="30 training steps")
    parser.add_argument("--out", type=Path, default=Path("char_lm_loss.png"),
                        help="where the loss curve goes")
    options = parser.parse_args()
    mlp = mlp_loss(batch=8, sizes=(16, 32, 4))
    banner("An MLP loss, built with rlx_mlir.Builder")
    print(mlp)
    args = random_args(mlp, "mlp_loss")
    print("interpreter: loss =", rlx.interpret(mlp, **args)[0])

    block = transformer_module()
    banner("A pre-norm transformer block (causal attention, layer_norm, GELU MLP)")
    print(block)
    out = rlx.interpret(block, **random_args(block, "block"))[0]
    print(f"interpreter: output {out.shape}, mean {out.mean():+.6f}, std {out.std():.6f}")

    banner("--autodiff: the MLP's gradient function, checked against finite differences")
    grad = rlx.grad_with_loss(mlp)
    print(f"added @{grad.sym_name.data} with results {[str(t) for t in grad.function_type.outputs]}")
    loss, *grads = rlx.interpret(mlp, entry="mlp_loss_grad", **args, d_output=np.float32(1))
    print(f"loss {loss:.6f}; gradient norms " + ", ".join(f"{np.linalg.norm(g):.4f}" for g in grads))
    print(check_grads(mlp, "mlp_loss", int_high=4))

    banner("Training a character-level transformer LM natively (examples/train_char_lm.py)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_char_lm import train

    train(30 if options.quick else options.steps, out=options.out)


if __name__ == "__main__":
    main()
