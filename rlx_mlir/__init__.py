"""rlx-mlir: a Python compiler for ML programs on MLIR.

Trace a Python function, or build/parse an ``rlx`` module; transform it (autodiff,
jvp, vmap); lower it through upstream MLIR and run it natively, numpy in and out::

    import numpy as np, rlx_mlir as rlx

    @rlx.jit
    def f(x):
        return rlx.nn.relu(x).sum()

    f(np.array([-1.0, 2.0], np.float32))          # 2.0, natively compiled
"""

import functools
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from rlx_mlir import audio as audio  # rlx.audio (re-exported)
from rlx_mlir import fft as fft  # rlx.fft (re-exported)
from rlx_mlir import ir, linalg, nn
from rlx_mlir import quant as quant  # rlx.quant (re-exported)
from rlx_mlir import random as random  # rlx.random (re-exported)
from rlx_mlir.builder import Builder, Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.frontend import (
    cond,
    custom_vjp,
    fori_loop,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jit,
    scan,
    trace,
    value_and_grad,
    vjp,
    while_loop,
)
from rlx_mlir.frontend.einsum import dot_general as _dot_general
from rlx_mlir.frontend.einsum import einsum as _einsum
from rlx_mlir.frontend.einsum import tensordot as _tensordot
from rlx_mlir.frontend.trees import tree_leaves, tree_map
from rlx_mlir.interpreter import interpret
from rlx_mlir.ir import to_text, verify
from rlx_mlir.runtime.jit import compile  # noqa: A004
from rlx_mlir.tools.view_graph import view
from rlx_mlir.transforms.autodiff import grad_with_loss

einsum = nn._eager(nn._half_in_f32(_einsum))
_dot_general_half = nn._half_in_f32(_dot_general)


def _dot_general_dispatch(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                          preferred_element_type: Any = None) -> Any:
    """Half operands compute in f32 and round back, unless ``preferred_element_type``
    names the result's dtype (then the operands are cast to it, as ``jax.lax``)."""
    fn = _dot_general if preferred_element_type is not None else _dot_general_half
    return fn(lhs, rhs, dimension_numbers, precision, preferred_element_type)


dot_general = nn._eager(functools.wraps(_dot_general)(_dot_general_dispatch))
tensordot = nn._eager(nn._half_in_f32(_tensordot))


def parse(text: str, filename: str = "<string>", **options: Any) -> ModuleOp:
    """Parse and verify ``rlx`` text into a module; errors carry ``file:line:col``
    (``options``: :func:`rlx_mlir.ir.parse`'s ``line_offset``, ``all_errors``)."""
    if not isinstance(text, str):
        raise RlxError(f"parse: expected the module's text as a str; got "
                       f"{type(text).__name__} (read the file first: "
                       "rlx.parse(open(path).read(), path))",
                       loc=loc_from_attr(_user_location()))
    if not isinstance(filename, str):
        raise RlxError(f"parse: filename must be a str; got {type(filename).__name__}",
                       loc=loc_from_attr(_user_location()))
    return ir.parse(text, filename, **options)


def jvp(target: Any, *args: Any, **kwargs: Any) -> Any:
    """``jvp(module, func=None, wrt=None)``: the ``--jvp`` pass (adds ``@f_jvp``);
    ``jvp(fn, primals, tangents)``: JAX-style forward mode on a Python function."""
    if isinstance(target, ModuleOp):
        from rlx_mlir.transforms.jvp import jvp as jvp_pass

        return jvp_pass(target, *args, **kwargs)
    from rlx_mlir.frontend import jvp as jvp_trace

    return jvp_trace(target, *args, **kwargs)


def vmap(target: Any, *args: Any, **kwargs: Any) -> Any:
    """``vmap(module, func, batched, size)``: the ``--vmap`` pass (adds ``@f_vmap``);
    ``vmap(fn, in_axes=0, out_axes=0)``: JAX-style batching of a Python function."""
    if isinstance(target, ModuleOp):
        from rlx_mlir.transforms.vmap import vmap as vmap_pass

        return vmap_pass(target, *args, **kwargs)
    from rlx_mlir.frontend import vmap as vmap_trace

    return vmap_trace(target, *args, **kwargs)


__all__ = [
    "Builder", "RlxError", "Tensor", "compile", "cond", "custom_vjp", "dot_general", "einsum", "fori_loop", "grad",
    "grad_with_loss",
    "hessian", "interpret", "jacfwd", "jacrev", "jit", "jvp", "linalg", "nn", "parse", "scan", "to_text", "trace", "tree_leaves", "tree_map", "value_and_grad", "vjp",
    "tensordot", "verify", "view", "vmap", "while_loop",
]
__version__ = "0.1.0"


_LAZY_MODULES = ("testing", "progress", "models")
"""Submodules loaded on first use (``rlx.testing.check_grads`` without an import)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"rlx_mlir.{name}")
    raise AttributeError(f"module 'rlx_mlir' has no attribute '{name}'")
