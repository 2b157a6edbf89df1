"""Scan backward ops (SPEC 3.8): ``rlx.scan_backward`` (d init) and
``rlx.scan_backward_xs`` (d xs_i), each carrying the body's VJP as a region.

Operands: ``init, trajectory, upstream``, then ``num_bcast`` broadcast inputs (the same
every step, as the scan's) and the per-step inputs ``xs...``; regions: ``body_vjp``
``(carry, bcasts..., x_t..., d_output) -> (dcarry, dbcasts..., dx_t...)`` and, for a
checkpointed scan (``0 < num_checkpoints < length``), ``forward_body``
``(carry, bcasts..., x_t...) -> carry`` used to recompute the carries between checkpoints.
The gradient of a broadcast input is summed over the steps as the sweep runs, so a weight
the scan closes over is never materialised ``length`` times (RLX copied it per step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
)
from xdsl.traits import IsolatedFromAbove, Pure

from rlx_mlir.dialects.base import RlxOp, ShapeError, dtype_of, optional, require, shape_of, tensor
from rlx_mlir.dialects.control import (
    _pack,
    _step_type,
    _unpack,
    check_block,
    checkpoint_steps,
    run_region,
    trajectory_rows,
)
from rlx_mlir.rules import INTERPRET, JVP, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder, Tensor
    from rlx_mlir.transforms.jvp import JvpContext


def _layout(types: Sequence[TensorType], attrs) -> tuple[int, int, list[TensorType]]:
    """``(length, K, body input types after the carry)`` after checking operands and
    attributes: the broadcast inputs' own types, then one step of each per-step input."""
    length = require(attrs, "length", int)
    k = optional(attrs, "num_checkpoints", int, 0)
    nb = optional(attrs, "num_bcast", int, 0)
    if length < 1 or not 0 <= k <= length:
        raise ShapeError(f"need length >= 1 and 0 <= num_checkpoints <= length, got "
                         f"{length}, {k}")
    if len(types) < 3:
        raise ShapeError("expected operands (init, trajectory, upstream, bcasts..., xs...)")
    if not 0 <= nb <= len(types) - 3:
        raise ShapeError(f"num_bcast = {nb} but the op has {len(types) - 3} inputs after "
                         "upstream")
    init, traj, upstream, *inputs = types
    bcasts, xs = inputs[:nb], inputs[nb:]
    carry = shape_of(init)
    rows = trajectory_rows(length, k)
    if shape_of(traj) != (rows, *carry) or shape_of(upstream) != shape_of(traj):
        raise ShapeError(f"trajectory and upstream must be [{rows}, {', '.join(map(str, carry))}]"
                         f" for length {length} with {k} checkpoints")
    steps = list(bcasts)
    for x in xs:
        shape = shape_of(x)
        if not shape or shape[0] != length:
            raise ShapeError(f"per-step input {x} must have leading dimension {length}")
        steps.append(tensor(shape[1:], dtype_of(x)))
    return length, k, steps


class ScanBackwardBase(RlxOp):
    TAKES_STORAGE: ClassVar[bool] = True
    init = operand_def(TensorType)
    trajectory = operand_def(TensorType)
    upstream = operand_def(TensorType)
    xs = var_operand_def(TensorType)
    result = result_def(TensorType)
    bodies = var_region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove())  # CSE must not hoist into the regions
    ATTRS: ClassVar[dict[str, str]] = {
        "length": "i64, the forward scan's length",
        "num_checkpoints": "i64 K of the forward scan (0 = every carry stored)",
        "num_bcast": "i64, how many inputs after upstream are broadcast (default 0)",
    }

    @property
    def num_bcast(self) -> int:
        return self.attr("num_bcast", 0)

    def verify_(self) -> None:
        super().verify_()
        types = self.in_types()
        length, k, steps = _layout(types, self.py_attrs())
        carry = types[0]
        checkpointed = trajectory_rows(length, k) != length
        if len(self.bodies) != 1 + checkpointed:
            raise ShapeError("expected a body_vjp region" +
                             (" and a forward_body region (checkpointed)" if checkpointed else ""))
        check_block(self.bodies[0].block, [carry, *steps, carry], [carry, *steps], "body_vjp")
        if checkpointed:
            check_block(self.bodies[1].block, [carry, *steps], [carry], "forward_body")


def step_inputs(op: ScanBackwardBase, inputs: Sequence[np.ndarray], t: int) -> list[np.ndarray]:
    """The body's inputs after the carry at step ``t``: the broadcasts, then ``x[t]``."""
    nb = op.num_bcast
    return [*inputs[:nb], *(x[t] for x in inputs[nb:])]


def backward_sweep(op: ScanBackwardBase, init: np.ndarray, traj: np.ndarray,
                   upstream: np.ndarray, inputs: Sequence[np.ndarray]):
    """Yield ``(t, outputs of body_vjp at step t)`` for t = length-1 ... 0 (SPEC 3.8)."""
    length, k = op.attr("length"), op.attr("num_checkpoints", 0)
    steps = checkpoint_steps(length, k)
    row_of = {s: r for r, s in enumerate(steps)}
    carry_at = _carry_source(op, init, traj, inputs, steps, length)
    dcarry = np.zeros_like(init)
    for t in range(length - 1, -1, -1):
        if t in row_of:
            dcarry = dcarry + upstream[row_of[t]]
        outs = run_region(op.bodies[0].block, [carry_at(t), *step_inputs(op, inputs, t), dcarry])
        dcarry = outs[0]
        yield t, outs


def _carry_source(op, init, traj, inputs, steps: list[int], length: int):
    """``carry_at(t)``: the carry entering step t, recomputed per segment when checkpointed."""
    if len(steps) == length:
        return lambda t: init if t == 0 else traj[t - 1]
    cache: dict[int, np.ndarray] = {}

    def carry_at(t: int) -> np.ndarray:
        if t not in cache:
            cache.clear()
            k = next(i for i, s in enumerate(steps) if s >= t)
            start = steps[k - 1] + 1 if k else 0
            carry = traj[k - 1] if k else init
            for step in range(start, steps[k] + 1):
                cache[step] = carry
                carry = run_region(op.bodies[1].block,
                                   [carry, *step_inputs(op, inputs, step)])[0]
        return cache[t]

    return carry_at


@irdl_op_definition
class ScanBackwardOp(ScanBackwardBase):
    """The gradient of a (trajectory-form) scan with respect to its ``init``."""

    name = "rlx.scan_backward"

    @classmethod
    def infer(cls, types, attrs, out):
        _layout(types, attrs)
        return [types[0]]


@INTERPRET.register(ScanBackwardOp)
def _interpret_scan_backward(op, init, traj, upstream, *xs):
    dcarry = np.zeros_like(init)
    for _, outs in backward_sweep(op, init, traj, upstream, xs):
        dcarry = outs[0]
    return dcarry


@irdl_op_definition
class ScanBackwardXsOp(ScanBackwardBase):
    """The gradient of a (trajectory-form) scan with respect to input ``xs_idx`` (counted
    after upstream, broadcasts first): per step for a per-step input, summed over the
    steps for a broadcast one."""

    name = "rlx.scan_backward_xs"
    ATTRS: ClassVar[dict[str, str]] = {
        **ScanBackwardBase.ATTRS, "xs_idx": "i64, which input after upstream (0-based)"}

    @classmethod
    def infer(cls, types, attrs, out):
        _layout(types, attrs)
        index = require(attrs, "xs_idx", int)
        if not 0 <= index < len(types) - 3:
            raise ShapeError(f"xs_idx {index} out of range for {len(types) - 3} per-step inputs")
        return [types[3 + index]]


@INTERPRET.register(ScanBackwardXsOp)
def _interpret_scan_backward_xs(op, init, traj, upstream, *inputs):
    index = op.attr("xs_idx")
    dxs = np.zeros_like(inputs[index])
    for t, outs in backward_sweep(op, init, traj, upstream, inputs):
        if index < op.num_bcast:
            dxs += outs[1 + index]
        else:
            dxs[t] = outs[1 + index]
    return dxs


# ---------------------------------------------------------------- JVP rules (forward over reverse)
# The tangent of a reverse sweep is the same sweep over [primal, tangent] pairs stacked on a
# new axis of size 2 (as in the JVP of rlx.scan): carry, trajectory and upstream rows and
# dcarry become pairs, the broadcast inputs are followed by their tangents (as broadcasts),
# the per-step inputs by theirs, and both regions are replaced by their JVPs. A checkpointed sweep stays checkpointed: the carry tangents between
# checkpoints are recomputed by forward_body's JVP from the checkpoint tangents.


def _with_tangents(values: Sequence, tangents: Sequence, nb: int) -> list:
    """``(b..., x...)`` and their tangents as ``(b..., tb..., x..., tx...)``."""
    return [*values[:nb], *tangents[:nb], *values[nb:], *tangents[nb:]]


def _paired_region(b: Builder, block: Block, pair: TensorType,
                   steps: Sequence[TensorType], nb: int) -> Region:
    """``block`` ``(carry, b..., x..., [d]) -> (carry', db..., dx...)`` (``nb``
    broadcasts) differentiated forward, as ``(pair, b..., tb..., x..., tx..., [d pair])
    -> (pair', db..., tdb..., dx..., tdx...)``."""
    from rlx_mlir.transforms.jvp import jvp_block

    n = len(steps)

    def body(inner: Builder, carry: Tensor, *rest: Tensor) -> list[Tensor]:
        (c, tc), *d = [_unpack(inner, p) for p in (carry, *rest[2 * n:])]
        primals = [*rest[:nb], *rest[2 * nb:n + nb]]
        tangents = [*rest[nb:2 * nb], *rest[n + nb:2 * n]]
        outs, touts = jvp_block(inner, block, [c, *primals, *(p for p, _ in d)],
                                [tc, *tangents, *(t for _, t in d)])
        touts = [t if t is not None else inner.full(o.shape, 0.0, o.dtype)
                 for o, t in zip(outs, touts, strict=True)]
        return [_pack(inner, outs[0], touts[0]), *_with_tangents(outs[1:], touts[1:], nb)]

    with_d = len(block.args) == n + 2
    return b.region([pair, *_with_tangents(steps, steps, nb), *[pair] * with_d], body)


def _jvp_scan_backward(ctx: JvpContext, op: ScanBackwardBase, t_init: Tensor | None,
                       t_traj: Tensor | None, t_upstream: Tensor | None,
                       *t_xs: Tensor | None) -> list[Tensor]:
    """The sweep over (primal, tangent) pairs: the tangent half of its d init pair, or its
    gradient of the tangent of xs ``xs_idx``. Along ``upstream`` alone (the op is linear
    in it) the op itself on ``t_upstream``."""
    b = ctx.b
    if t_init is None and t_traj is None and all(t is None for t in t_xs):
        clone = op.clone(value_mapper={op.upstream: t_upstream.value})
        b.block.add_op(clone)
        return [b.wrap(clone.result)]
    init, traj, upstream, *xs = ctx.inputs(op)
    nb = op.num_bcast
    pair = tensor((2, *init.shape), init.dtype)
    steps = [x.type for x in xs[:nb]] + [_step_type(x) for x in xs[nb:]]
    regions = [_paired_region(b, r.block, pair, steps, nb) for r in op.bodies]
    t_xs = [ctx.or_zeros(t, x) for t, x in zip(t_xs, xs, strict=True)]
    operands = [_pack(b, init, ctx.or_zeros(t_init, init)),
                *(_pack(b, v, ctx.or_zeros(t, v), axis=1)
                  for v, t in ((traj, t_traj), (upstream, t_upstream))),
                *_with_tangents(xs, t_xs, nb)]
    attrs = op.py_attrs()
    if nb:
        attrs["num_bcast"] = 2 * nb
    if isinstance(op, ScanBackwardXsOp):
        attrs["xs_idx"] += nb if attrs["xs_idx"] < nb else len(xs)
        return [b._emit_with_regions("scan_backward_xs", operands, regions, **attrs)]
    return [_unpack(b, b._emit_with_regions("scan_backward", operands, regions, **attrs))[1]]


JVP.register(ScanBackwardOp, ScanBackwardXsOp)(_jvp_scan_backward)


# ---------------------------------------------------------------- batching rules (SPEC 6.3)


def _vmap_scan_backward(ctx, op, xs, batched):
    """Everything batched: init and broadcasts ``[B, ...]``, trajectory/upstream/xs as
    ``[rows, B, ...]``, ``body_vjp`` (and ``forward_body``, checkpointing kept: SPEC 9.16)
    batched recursively; per-step ``scan_backward_xs`` results go back to ``[B, L, ...]``."""
    from rlx_mlir.dialects.control import _steps_first, _vmap_region

    lifted = ctx.lift_all(xs, batched)
    nb = op.num_bcast
    init, traj, upstream, *inputs = lifted
    traj, upstream = (_steps_first(ctx, t, True) for t in (traj, upstream))
    per_step = [*inputs[:nb], *(_steps_first(ctx, x, True) for x in inputs[nb:])]
    steps = [x.type for x in per_step[:nb]] + [tensor(x.shape[1:], x.dtype)
                                               for x in per_step[nb:]]
    carry = init.type
    regions = [_vmap_region(ctx, op.bodies[0].block, [carry, *steps, carry],
                            [True] * (len(steps) + 2))]
    if len(op.bodies) > 1:
        regions.append(_vmap_region(ctx, op.bodies[1].block, [carry, *steps],
                                    [True] * (len(steps) + 1)))
    out = ctx.b._emit_with_regions(op.name.removeprefix("rlx."), [init, traj, upstream, *per_step],
                                   regions, **op.py_attrs())
    if isinstance(op, ScanBackwardXsOp) and op.attr("xs_idx") >= nb:
        out = ctx.b.transpose(out, perm=[1, 0, *range(2, out.ndim)])
    return [out]


VMAP.register(ScanBackwardOp, ScanBackwardXsOp)(_vmap_scan_backward)


OPS = [ScanBackwardOp, ScanBackwardXsOp]


# ---------------------------------------------------------------- LOWER rules
# A reverse ``scf.for`` (t = length-1 ... 0) carrying dcarry (and d xs_i); the carry
# entering step t is read from the trajectory, or recomputed from its segment's anchor
# with ``forward_body`` when checkpointed: O(K + 1) carries in memory, O(L^2 / K) steps.

from rlx_mlir.dialects.control import RowSchedule, rg, scan_step  # noqa: E402
from rlx_mlir.rules import LOWER  # noqa: E402


def _carry_entering(op: ScanBackwardBase, e, schedule: RowSchedule, t, init, traj, inputs):
    """The carry entering step ``t``: init or ``traj[t-1]``, else recomputed."""
    if schedule.every_step:
        return rg.if_else(e, rg.index_cmp(e, "eq", t, 0), [init.type], lambda s: [init],
                          lambda s: [rg.extract_row(s, traj, rg.index_sub(s, t, 1))])[0]
    segment = schedule.stored_before(e, t)
    anchor = rg.if_else(e, rg.index_cmp(e, "eq", segment, 0), [init.type], lambda s: [init],
                        lambda s: [rg.extract_row(s, traj, rg.index_sub(s, segment, 1))])[0]
    forward, nb = op.bodies[1].block, op.num_bcast
    return rg.for_loop(e, schedule.segment_start(e, segment), t, [anchor],
                       lambda s, step, c: [scan_step(s, forward, c, inputs[:nb], inputs[nb:],
                                                     step)])[0]


def _add_upstream(e, schedule: RowSchedule, t, dcarry, upstream):
    """``dcarry + upstream[row of t]`` when step ``t`` is stored."""
    def add(s):
        row = rg.extract_row(s, upstream, schedule.stored_before(s, t))
        return [s.elementwise([dcarry, row], dcarry.type.element_type,
                              lambda b, a, c: b.add(a, c))]
    if schedule.every_step:
        return add(e)[0]
    return rg.if_else(e, schedule.is_stored(e, t), [dcarry.type], add, lambda s: [dcarry])[0]


def backward_loop(op: ScanBackwardBase, e, init, traj, upstream, inputs,
                  wanted: Sequence[int] = ()):
    """``[d init, *(d input_i for i in wanted)]`` of one reverse sweep: a per-step input's
    gradient is written row by row, a broadcast one's accumulated."""
    length, nb = op.attr("length"), op.num_bcast
    schedule = RowSchedule.of(length, op.attr("num_checkpoints", 0))
    body_vjp = op.bodies[0].block

    def step(s, i, dcarry, *dxs):
        t = rg.index_sub(s, length - 1, i)
        dcarry = _add_upstream(s, schedule, t, dcarry, upstream)
        carry = _carry_entering(op, s, schedule, t, init, traj, inputs)
        rows = [rg.extract_row(s, x, t) for x in inputs[nb:]]
        outs = rg.inline_block(s, body_vjp, [carry, *inputs[:nb], *rows, dcarry])
        return [outs[0], *(_accumulate(s, d, outs[1 + i]) if i < nb
                           else rg.insert_row(s, outs[1 + i], d, t)
                           for i, d in zip(wanted, dxs, strict=True))]

    zeros = e.fresh(shape_of(init.type), init.type.element_type, 0)
    dxs = [_gradient_buffer(e, inputs[i].type, i < nb) for i in wanted]
    return rg.for_loop(e, 0, length, [zeros, *dxs], step)


def _gradient_buffer(e, t, summed: bool):
    """Zeros to accumulate a broadcast input's gradient into, else rows to fill; fresh
    tensors, so that two gradients of one shape never share a buffer."""
    return e.fresh(shape_of(t), t.element_type, 0 if summed else None)


def _accumulate(e, total, step_gradient):
    return e.elementwise([total, step_gradient], total.type.element_type,
                         lambda b, a, c: b.add(a, c))


def same_sweep(a: ScanBackwardBase, b: ScanBackwardBase) -> bool:
    """Whether ``a`` and ``b`` run the same reverse sweep (operands, attributes but
    ``xs_idx``, and regions): autodiff emits one op per gradient of a scan."""
    def attrs(op):
        return {k: v for k, v in op.attributes.items() if k != "xs_idx"}
    return (a is not b and list(a.operands) == list(b.operands) and attrs(a) == attrs(b)
            and len(a.bodies) == len(b.bodies)
            and all(r.is_structurally_equivalent(q) for r, q in zip(a.bodies, b.bodies,
                                                                    strict=True)))


def _lower_sweeps(op: ScanBackwardBase, e, init, traj, upstream, *inputs):
    """One reverse loop for ``op`` and every later op of its block running the same sweep
    (``d init`` and each ``d input_i`` wanted): they are replaced and erased here. With a
    loop per op, a scan's k differentiated inputs re-ran its body's VJP k + 1 times."""
    siblings = [o for o in op.parent_block().ops
                if isinstance(o, ScanBackwardBase) and same_sweep(op, o)]
    group = [op, *siblings]
    wanted = sorted({o.attr("xs_idx") for o in group if isinstance(o, ScanBackwardXsOp)})
    dcarry, *dxs = backward_loop(op, e, init, traj, upstream, inputs, wanted)
    results = [dcarry if isinstance(o, ScanBackwardOp) else dxs[wanted.index(o.attr("xs_idx"))]
               for o in group]
    for sibling, value in zip(siblings, results[1:], strict=True):
        sibling.result.replace_all_uses_with(value)
        sibling.detach()
        sibling.erase(safe_erase=False)
    return results[0]


LOWER.register(ScanBackwardOp, ScanBackwardXsOp)(_lower_sweeps)


# ---------------------------------------------------------------- VJP rules (reverse over reverse)
# The reverse sweep re-expressed as rlx.scan ops (the frontend's jax.lax-style scan, traced
# into a scratch block), then differentiated by the reverse walk, so the gradient of a
# gradient through a scan reuses rlx.scan's own VJP. The carries entering each step are
# read from the trajectory or, when checkpointed, recomputed by a forward scan of
# forward_body restarted at every stored carry (its anchors are gathered from init and the
# trajectory, so their cotangents reach both).


def _entering_carries(b: Builder, op: ScanBackwardBase, init: Tensor, traj: Tensor,
                      bcasts: Sequence[Tensor], xs: Sequence[Tensor]) -> Tensor:
    """``[length, *C]``: the carry entering each step of the forward scan."""
    from rlx_mlir.frontend.control import scan

    length, k = op.attr("length"), op.attr("num_checkpoints", 0)
    first = b.reshape(init, (1, *init.shape))
    if trajectory_rows(length, k) == length:
        if length == 1:
            return first
        return b.concat(first, b.narrow(traj, axis=0, start=0, length=length - 1), axis=0)
    stored = checkpoint_steps(length, k)
    segment = [next(i for i, s in enumerate(stored) if s >= t) for t in range(length)]
    restarts = np.array([t == 0 or segment[t] != segment[t - 1] for t in range(length)])
    anchors = b.concat(first, traj, axis=0)[np.array(segment)]
    forward = op.bodies[1].block

    def step(carry: Tensor, per_step: tuple) -> tuple[Tensor, Tensor]:
        restart, anchor, *x_t = per_step
        entering = carry.builder.where(restart, anchor, carry)
        return _inline(forward, [entering, *_captured(carry, bcasts), *x_t])[0], entering

    return scan(step, init, (b.constant(restarts), anchors, *xs))[1]


def _step_upstream(b: Builder, op: ScanBackwardBase, upstream: Tensor) -> Tensor:
    """``[length, *C]``: the upstream row added to dcarry at each step (0 if not stored)."""
    length, k = op.attr("length"), op.attr("num_checkpoints", 0)
    if trajectory_rows(length, k) == length:
        return upstream
    rows = {s: r for r, s in enumerate(checkpoint_steps(length, k))}
    zero = b.full((1, *upstream.shape[1:]), 0.0, upstream.dtype)
    padded = b.concat(upstream, zero, axis=0)
    return padded[np.array([rows.get(t, k) for t in range(length)])]


def _captured(local: Tensor, outer: Sequence[Tensor]) -> list[Tensor]:
    """``outer`` tensors as used by ``local``'s builder (a scan step being traced captures
    them as broadcast inputs)."""
    b = local.builder
    return [b.wrap(b._value(t)) for t in outer]


def _inline(block: Block, args: Sequence[Tensor]) -> list[Tensor]:
    from rlx_mlir.transforms.autodiff import mirror_prepared

    return mirror_prepared(args[0].builder, block, args, prepare=False)


def _sweep_as_scans(b: Builder, op: ScanBackwardBase, init: Tensor, traj: Tensor,
                    upstream: Tensor, *inputs: Tensor) -> Tensor:
    """The op's result computed by rlx.scan ops (``b`` is the innermost trace meanwhile);
    the steps close over the broadcast inputs."""
    from rlx_mlir.frontend.control import scan

    index = op.attr("xs_idx") if isinstance(op, ScanBackwardXsOp) else None
    body_vjp = op.bodies[0].block
    bcasts, xs = inputs[:op.num_bcast], inputs[op.num_bcast:]

    def step(dcarry: Tensor, per_step: tuple) -> tuple[Tensor, Tensor | None]:
        carry, u, *x_t = per_step
        outs = _inline(body_vjp, [carry, *_captured(carry, bcasts), *x_t, dcarry + u])
        return outs[0], None if index is None else outs[1 + index]

    per_step = (_entering_carries(b, op, init, traj, bcasts, xs),
                _step_upstream(b, op, upstream), *xs)
    zeros = b.full(init.shape, 0.0, init.dtype)
    dcarry, dxs = scan(step, zeros, per_step, reverse=True)
    if index is None:
        return dcarry
    return dxs.sum(axis=0) if index < len(bcasts) else dxs


def _vjp_scan_backward(ctx, op: ScanBackwardBase, g: Tensor) -> list[Tensor | None]:
    """The reverse sweep as rlx.scan ops, differentiated in reverse."""
    from rlx_mlir.frontend.tracing import _active
    from rlx_mlir.transforms.autodiff import vjp_block

    inputs = ctx.inputs(op)

    def as_scans(fb: Builder, *operands: Tensor) -> Tensor:
        stack = _active()
        stack.append(fb)
        try:
            return _sweep_as_scans(fb, op, *operands)
        finally:
            stack.pop()

    fn = ctx.b.region([x.type for x in inputs], as_scans)
    return vjp_block(ctx.b, fn.block, inputs, [g])


VJP.register(ScanBackwardOp, ScanBackwardXsOp)(_vjp_scan_backward)
