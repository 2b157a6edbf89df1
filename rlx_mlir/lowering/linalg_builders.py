"""Builders of upstream ``linalg`` ops for the in-place rewrites of the fast pipeline.

``from mlir.dialects import linalg`` runs the opdsl table of every named op (about 36 ms,
paid by every process's first compile); these build the few ops the rewrites need from
the generated op classes and fill their bodies with MLIR's own region builder::

    init = tensor.EmptyOp([4, 3], f32).result
    t = transpose(x, outs=[init], permutation=[1, 0])   # linalg.transpose, body filled
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlir._mlir_libs._mlirDialectsLinalg import fill_builtin_region
from mlir.dialects._linalg_ops_gen import (
    BatchMatmulOp,
    FillOp,
    GenericOp,
    MatmulOp,
    TransposeOp,
    YieldOp,
)

__all__ = ["GenericOp", "YieldOp", "batch_matmul", "fill", "matmul", "transpose"]


def _filled(op: Any) -> Any:
    fill_builtin_region(op.operation)
    return op.results[0]


def matmul(a: Any, b: Any, *, outs: Sequence[Any], indexing_maps: Any = None) -> Any:
    """``linalg.matmul ins(a, b) outs(outs[0])`` (optional explicit ``indexing_maps``)."""
    return _filled(MatmulOp([outs[0].type], [a, b], [outs[0]], indexing_maps=indexing_maps))


def batch_matmul(a: Any, b: Any, *, outs: Sequence[Any]) -> Any:
    """``linalg.batch_matmul ins(a, b) outs(outs[0])``."""
    return _filled(BatchMatmulOp([outs[0].type], [a, b], [outs[0]]))


def transpose(value: Any, *, outs: Sequence[Any], permutation: Sequence[int]) -> Any:
    """``linalg.transpose ins(value) outs(outs[0]) permutation = ...``."""
    return _filled(TransposeOp([outs[0].type], value, outs[0], list(permutation)))


def fill(scalar: Any, *, outs: Sequence[Any]) -> Any:
    """``linalg.fill ins(scalar) outs(outs[0])``."""
    return _filled(FillOp([outs[0].type], [scalar], [outs[0]]))
