"""Loss backward ops (SPEC 3, row 20): the logits gradient of softmax cross-entropy.

    %dz = rlx.softmax_cross_entropy_backward %z, %t, %dl
            : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    expect_float,
    expect_index,
    expect_rank,
    shape_of,
    tensor,
)
from rlx_mlir.dialects.nn import label_indices
from rlx_mlir.rules import INTERPRET


@irdl_op_definition
class SoftmaxCrossEntropyBackwardOp(RlxOp):
    """``dz[n, k] = (softmax(z_n)[k] - [k == label_n]) * d_loss[n]``.

    Operands ``logits [N, C]``, ``labels [N]`` (i32, i64 or f32-encoded, as the
    forward), ``d_loss [N]`` (the logits' dtype); the result has the logits' type.
    A label outside ``[0, C)`` has an all-zero one-hot row, as in the forward, so
    its gradient is ``softmax(z_n) * d_loss[n]``.

    Example::

        %dz = rlx.softmax_cross_entropy_backward %z, %t, %dl
                : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
    """

    name = "rlx.softmax_cross_entropy_backward"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    d_loss = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        logits, labels, d_loss = types
        dtype = expect_float(logits, f"'{cls.name}' logits")
        rows = expect_rank(logits, (2,), f"'{cls.name}' logits ([N, C])")[0]
        expect_index(labels, f"'{cls.name}' labels")
        if shape_of(labels) != (rows,):
            raise ShapeError(
                f"'{cls.name}' labels must be [N] = [{rows}] (one class per row), got {labels}"
            )
        want = tensor((rows,), dtype)
        if d_loss != want:
            raise ShapeError(f"'{cls.name}' d_loss must be {want} (one per row), got {d_loss}")
        return [logits]


@INTERPRET.register(SoftmaxCrossEntropyBackwardOp)
def _interpret_softmax_cross_entropy_backward(
    op: SoftmaxCrossEntropyBackwardOp, logits: np.ndarray, labels: np.ndarray,
    d_loss: np.ndarray,
) -> np.ndarray:
    index, valid = label_indices(labels, logits.shape[1])
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    one_hot = np.zeros_like(logits)
    rows = np.arange(logits.shape[0])
    one_hot[rows, index] = valid
    return (probs - one_hot) * d_loss[:, None]


OPS = [SoftmaxCrossEntropyBackwardOp]


# ---------------------------------------------------------------- LOWER rules

from typing import Any  # noqa: E402

from xdsl.ir import SSAValue  # noqa: E402

from rlx_mlir.dialects.nn import element_of, label_hit, row_softmax_stats  # noqa: E402
from rlx_mlir.rules import LOWER  # noqa: E402


@LOWER.register(SoftmaxCrossEntropyBackwardOp)
def _lower_softmax_cross_entropy_backward(op: SoftmaxCrossEntropyBackwardOp, e: Any,
                                          logits: SSAValue, labels: SSAValue,
                                          d_loss: SSAValue) -> SSAValue:
    """Row max and ``sum(exp(z - max))``, then one parallel pass over ``[N, C]``:
    ``(exp(z - max) / sum - [class == label]) * d_loss`` (``linalg.index`` of the class)."""
    rows, classes = shape_of(logits.type)
    peak, total = row_softmax_stats(e, logits, keep_dims=True)

    def body(s: Any, z: Any, label: Any, m: Any, t: Any, dl: Any) -> Any:
        _, hit = label_hit(s, label, classes, 1)
        one_hot = s.select(hit, s.scalar(1.0, z.type), 0.0)
        return s.mul(s.sub(s.div(s.exp(s.sub(z, m)), t), one_hot), dl)

    column = [e.reshape(v, [rows, 1]) for v in (labels, d_loss)]
    return e.elementwise([logits, column[0], peak, total, column[1]], element_of(logits), body)


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# ``dz = (softmax(z) - onehot) * d``: linear in d; in z, the softmax JVP scaled by d
# (needed for Hessian-vector products through cross-entropy).

from typing import TYPE_CHECKING  # noqa: E402

from rlx_mlir.dialects.nn import vmap_fold_rows  # noqa: E402
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.jvp import JvpContext


@JVP.register(SoftmaxCrossEntropyBackwardOp)
def _jvp_softmax_cross_entropy_backward(ctx: JvpContext, op: SoftmaxCrossEntropyBackwardOp,
                                        tz: Tensor | None, _t_labels: Tensor | None,
                                        td: Tensor | None) -> list[Tensor | None]:
    """``p * (t_z - sum(p * t_z)) * d + op(z, labels, t_d)`` with ``p = softmax(z)``."""
    z, labels, d = ctx.inputs(op)
    b = ctx.b
    in_d = None if td is None else b.softmax_cross_entropy_backward(z, labels, td)
    in_z = None
    if tz is not None:
        p = b.softmax(z, axis=1)
        in_z = p * (tz - b.reduce_sum(p * tz, axes=[1], keep_dims=True)) * d.reshape(-1, 1)
    return [ctx.add(in_z, in_d)]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# RLX panics (2-D logits only, SPEC 6.4); rows are independent, so B folds into N.

VMAP.register(SoftmaxCrossEntropyBackwardOp)(vmap_fold_rows)


# ---------------------------------------------------------------- VJP (second derivatives)

from rlx_mlir.rules import VJP  # noqa: E402


@VJP.register(SoftmaxCrossEntropyBackwardOp)
def _vjp_sce_backward(ctx, op, g):
    """``out = (p - onehot) * d`` per row: logits get ``d * p * (g - sum(g * p))`` (the
    softmax Jacobian is symmetric), ``d`` gets ``sum(g * (p - onehot))``; labels none."""
    logits, labels, d_loss = ctx.inputs(op)
    rows = (logits.shape[0], 1)
    p = ctx.b.softmax(logits, axis=-1)
    centred = g - ctx.b.reduce_sum(g * p, axes=[1], keep_dims=True)
    d_logits = p * centred * ctx.b.reshape(d_loss, rows)
    ones = ctx.b.full((logits.shape[0],), 1.0, logits.dtype)
    residual = ctx.b.softmax_cross_entropy_backward(logits, labels, ones)
    return [d_logits, None, ctx.b.reduce_sum(g * residual, axes=[1])]
