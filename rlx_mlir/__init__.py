"""rlx-mlir: a Python compiler for ML programs on MLIR.

Build or parse an ``rlx`` module, transform it (autodiff, jvp, vmap), lower it
through upstream MLIR and run it natively, numpy in and out::

    import numpy as np, rlx_mlir as rlx
    b = rlx.Builder("f")
    x = b.input("x", (3,))
    b.ret(b.relu(x))
    rlx.interpret(b.module, np.array([-1, 0, 2], np.float32))
"""

from rlx_mlir.builder import Builder, Tensor
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.interpreter import interpret
from rlx_mlir.ir import parse, to_text, verify
from rlx_mlir.runtime.jit import compile  # noqa: A004
from rlx_mlir.transforms.autodiff import grad_with_loss
from rlx_mlir.transforms.jvp import jvp
from rlx_mlir.transforms.vmap import vmap

__all__ = [
    "Builder", "Tensor", "RlxError", "compile", "grad_with_loss", "interpret", "jvp", "parse", "to_text", "verify", "vmap",
]
__version__ = "0.1.0"
