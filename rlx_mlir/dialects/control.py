"""Control family: ``rlx.scan``, ``rlx.if``, ``rlx.while``, ``rlx.custom_fn`` and
``rlx.yield`` (SPEC 2.1.21, 2.2.5-2.2.8).

Bodies are regions; their block arguments replace RLX's "NodeId order"::

    %c = rlx.scan %init, %xs {length = 4 : i64, num_xs = 1 : i64}
           : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32> ({
    ^bb0(%carry: tensor<3xf32>, %x: tensor<3xf32>):
      %next = rlx.add %carry, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      rlx.yield %next : (tensor<3xf32>) -> ()
    })

Values from above: ``rlx.scan`` is IsolatedFromAbove (its body uses only its block
arguments; CSE never reaches into it). The regions of ``rlx.if``, ``rlx.while`` and
``rlx.custom_fn`` may use values defined above the op (as ``scf.if`` does; ``--cse``
creates such uses by merging a constant in a region with an identical one above it), and
autodiff, JVP and vmap treat a captured value like an operand. The derivative regions of a
``rlx.custom_fn`` give derivatives for its primals only: differentiating a value its
``fwd`` region captures is an error (pass that value as a primal), as in JAX.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure

from rlx_mlir.diagnostics import RlxError, loc_of
from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    dtype_of,
    numpy_dtype,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET, JVP, PREPARE_AD, VJP, VMAP, no_gradient
from rlx_mlir.runtime.signature import arg_names
from rlx_mlir.tools.rlx_opt_hooks import STAGE_HOOKS

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder, Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

# ---------------------------------------------------------------- yield


@irdl_op_definition
class YieldOp(RlxOp):
    """Terminator of every rlx region: the region's results."""

    TAKES_STORAGE: ClassVar[bool] = True

    name = "rlx.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), Pure())

    @classmethod
    def infer(cls, types, attrs, out):
        return []


def yielded_types(block: Block) -> list[TensorType]:
    last = block.last_op
    if not isinstance(last, YieldOp):
        raise ShapeError("region must end with rlx.yield")
    return [v.type for v in last.values]  # type: ignore[misc]


def check_block(block: Block, args: Sequence[TensorType], results: Sequence[TensorType],
                what: str) -> None:
    """The block takes ``args`` and yields ``results``; ShapeError otherwise."""
    got = [a.type for a in block.args]
    if got != list(args):
        raise ShapeError(f"{what} takes ({', '.join(map(str, got))}) but must take "
                         f"({', '.join(map(str, args))})")
    yielded = yielded_types(block)
    if yielded != list(results):
        raise ShapeError(f"{what} yields ({', '.join(map(str, yielded))}) but must yield "
                         f"({', '.join(map(str, results))})")


def run_region(block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    from rlx_mlir.interpreter import run_block

    return run_block(None, block, list(args))


# ---------------------------------------------------------------- scan


def checkpoint_steps(length: int, k: int) -> list[int]:
    """Steps whose carries a K-checkpoint scan stores (SPEC 2.2.7, ceil form).

    >>> checkpoint_steps(6, 2), checkpoint_steps(4, 3), checkpoint_steps(3, 0)
    ([2, 5], [1, 2, 3], [0, 1, 2])
    """
    if k in (0, length):
        return list(range(length))
    return [min(math.ceil((i + 1) * length / k) - 1, length - 1) for i in range(k)]


def scan_layout(op_types: Sequence[TensorType], attrs) -> tuple[int, int, int, bool, int]:
    """``(length, num_bcast, num_xs, save_trajectory, K)`` after checking the attributes."""
    length = require(attrs, "length", int)
    num_xs = optional(attrs, "num_xs", int, 0)
    save = optional(attrs, "save_trajectory", bool, False)
    k = optional(attrs, "num_checkpoints", int, 0)
    if length < 1:
        raise ShapeError(f"length must be >= 1, got {length}")
    num_bcast = len(op_types) - 1 - num_xs
    if num_xs < 0 or num_bcast < 0:
        raise ShapeError(f"num_xs = {num_xs} but the scan has {len(op_types) - 1} inputs")
    if not 0 <= k <= length:
        raise ShapeError(f"num_checkpoints must be in [0, length = {length}], got {k}")
    return length, num_bcast, num_xs, save, k


def scan_body_types(op_types: Sequence[TensorType], attrs) -> list[TensorType]:
    """Block argument types of a scan body: carry, bcasts, one step of each xs."""
    length, num_bcast, _, _, _ = scan_layout(op_types, attrs)
    args = list(op_types[: 1 + num_bcast])
    for t in op_types[1 + num_bcast:]:
        shape = shape_of(t)
        if not shape or shape[0] != length:
            raise ShapeError(f"per-step input {t} must have leading dimension length = {length}")
        args.append(tensor(shape[1:], dtype_of(t)))
    return args


def trajectory_rows(length: int, k: int) -> int:
    return length if k in (0, length) else k


@irdl_op_definition
class ScanOp(RlxOp):
    """A bounded loop with one carry: ``c_{t+1} = body(c_t, bcasts..., xs_1[t], ...)``.

    Operands: ``init``, then ``num_bcast`` broadcast inputs (the same every step),
    then ``num_xs`` per-step inputs shaped ``[length, ...]``. The result is the final
    carry, or with ``save_trajectory`` the stacked carries ``[rows, *C]`` where row
    t is the carry after step t+1 (only the K checkpoint steps of
    :func:`checkpoint_steps` when ``0 < num_checkpoints < length``).
    """

    TAKES_STORAGE: ClassVar[bool] = True

    name = "rlx.scan"
    init = operand_def(TensorType)
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove())  # CSE must not hoist into the body
    ATTRS: ClassVar[dict[str, str]] = {
        "length": "i64, the number of steps (>= 1)",
        "num_xs": "i64, how many trailing operands are per-step inputs (default 0)",
        "save_trajectory": "bool, return every (checkpointed) carry (default false)",
        "num_checkpoints": "i64 K, 0 = store every step; 0 < K < length stores K carries",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        length, _, _, save, k = scan_layout(types, attrs)
        carry = types[0]
        if not save:
            return [carry]
        return [tensor((trajectory_rows(length, k), *shape_of(carry)), dtype_of(carry))]

    def verify_(self) -> None:
        super().verify_()
        types = self.in_types()
        check_block(self.body.block, scan_body_types(types, self.py_attrs()), [types[0]],
                    "scan body")


@INTERPRET.register(ScanOp)
def _interpret_scan(op: ScanOp, init: np.ndarray, *inputs: np.ndarray) -> np.ndarray:
    length, num_bcast, _, save, k = scan_layout(op.in_types(), op.py_attrs())
    bcasts, xs = inputs[:num_bcast], inputs[num_bcast:]
    stored = set(checkpoint_steps(length, k))
    carry, rows = init, []
    for t in range(length):
        carry = run_region(op.body.block, [carry, *bcasts, *(x[t] for x in xs)])[0]
        if save and t in stored:
            rows.append(carry)
    return np.stack(rows) if save else carry


# ---------------------------------------------------------------- if / while


def check_predicate(t: TensorType, what: str) -> None:
    if dtype_of(t) != "i1" or int(np.prod(shape_of(t))) != 1:
        raise ShapeError(f"{what} must be a one-element i1 tensor, got {t}")


@irdl_op_definition
class IfOp(RlxOp):
    """``pred ? then(captured...) : else(captured...)``; both regions take the captured
    operands as block arguments and yield the results."""

    TAKES_STORAGE: ClassVar[bool] = True

    name = "rlx.if"
    pred = operand_def(TensorType)
    captured = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    branches = var_region_def("single_block")
    RESULT_FROM_TYPE: ClassVar[bool] = True

    @classmethod
    def infer(cls, types, attrs, out):
        check_predicate(types[0], "the predicate")
        if out is None:
            raise ShapeError("'rlx.if' needs its result types")
        return list(out)

    def verify_(self) -> None:
        super().verify_()
        if len(self.branches) != 2:
            raise ShapeError("'rlx.if' needs two regions (then, else)")
        args = self.in_types()[1:]
        results = [r.type for r in self.results]
        for region, what in zip(self.branches, ("then", "else"), strict=True):
            check_block(region.block, args, results, f"{what} branch")


@INTERPRET.register(IfOp)
def _interpret_if(op: IfOp, pred: np.ndarray, *captured: np.ndarray) -> list[np.ndarray]:
    branch = op.branches[0] if bool(pred.reshape(-1)[0]) else op.branches[1]
    return run_region(branch.block, captured)


@irdl_op_definition
class WhileOp(RlxOp):
    """``while cond(state): state = body(state)``, at most ``max_iterations`` times.

    Regions: ``cond`` (state -> one-element i1) and ``body`` (state -> state).
    Reverse-mode autodiff runs it as an ``rlx.scan`` of ``max_iterations`` steps, each
    masked by ``cond`` (``s = where(cond(s), body(s), s)``), so an early exit is
    differentiated exactly; ``max_iterations`` is then required. Forward mode (``--jvp``)
    keeps one loop over ``[state; tangent]``, bounded or not, as JAX does.
    """

    TAKES_STORAGE: ClassVar[bool] = True

    name = "rlx.while"
    init = operand_def(TensorType)
    result = result_def(TensorType)
    cond = region_def("single_block")
    body = region_def("single_block")
    ATTRS: ClassVar[dict[str, str]] = {"max_iterations": "i64, optional bound (>= 0)"}

    @classmethod
    def infer(cls, types, attrs, out):
        bound = optional(attrs, "max_iterations", int, None)
        if bound is not None and bound < 0:
            raise ShapeError(f"max_iterations must be >= 0, got {bound}")
        return [types[0]]

    def verify_(self) -> None:
        super().verify_()
        state = self.in_types()[0]
        block = self.cond.block
        if [a.type for a in block.args] != [state]:
            raise ShapeError(f"cond region must take ({state})")
        yielded = yielded_types(block)
        if len(yielded) != 1:
            raise ShapeError("cond region must yield one predicate")
        check_predicate(yielded[0], "cond's result")
        check_block(self.body.block, [state], [state], "body")


@INTERPRET.register(WhileOp)
def _interpret_while(op: WhileOp, state: np.ndarray) -> np.ndarray:
    bound = op.attr("max_iterations")
    steps = 0
    while bound is None or steps < bound:
        if not bool(run_region(op.cond.block, [state])[0].reshape(-1)[0]):
            break
        state = run_region(op.body.block, [state])[0]
        steps += 1
    return state


# ---------------------------------------------------------------- custom_fn


@irdl_op_definition
class CustomFnOp(RlxOp):
    """A function with a user-given derivative (SPEC 2.2.8).

    Regions: ``fwd`` (primals -> result), then optional ``vjp`` (primals...,
    primal_output, d_output -> one gradient per primal) and optional ``jvp``
    (primals..., tangents... -> result tangent); ``has_vjp``/``has_jvp`` say which
    follow. Without a vjp region autodiff differentiates the inlined ``fwd``.
    """

    TAKES_STORAGE: ClassVar[bool] = True

    name = "rlx.custom_fn"
    primals = var_operand_def(TensorType)
    result = result_def(TensorType)
    bodies = var_region_def("single_block")
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {
        "has_vjp": "bool, a vjp region follows fwd (default false)",
        "has_jvp": "bool, a jvp region follows (default false)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        optional(attrs, "has_vjp", bool, False)
        optional(attrs, "has_jvp", bool, False)
        if out is None:
            raise ShapeError("'rlx.custom_fn' needs its result type")
        return list(out)

    def region(self, kind: str):
        """The ``fwd``, ``vjp`` or ``jvp`` region (None when absent)."""
        order = ["fwd"] + [k for k in ("vjp", "jvp") if self.attr(f"has_{k}", False)]
        return self.bodies[order.index(kind)] if kind in order else None

    def verify_(self) -> None:
        super().verify_()
        primals = self.in_types()
        out = self.result.type
        expected = 1 + self.attr("has_vjp", False) + self.attr("has_jvp", False)
        if len(self.bodies) != expected:
            raise ShapeError(f"expected {expected} regions (fwd, then vjp/jvp as flagged), "
                             f"got {len(self.bodies)}")
        check_block(self.region("fwd").block, primals, [out], "fwd region")
        if self.region("vjp") is not None:
            check_block(self.region("vjp").block, [*primals, out, out], primals, "vjp region")
        if self.region("jvp") is not None:
            check_block(self.region("jvp").block, [*primals, *primals], [out], "jvp region")


@INTERPRET.register(CustomFnOp)
def _interpret_custom_fn(op: CustomFnOp, *primals: np.ndarray) -> np.ndarray:
    return run_region(op.region("fwd").block, primals)[0]


# ---------------------------------------------------------------- autodiff (SPEC 4.4, 5.11, 5.12)


def _inline(b: Builder, region, args: Sequence[Tensor],
            renames: Mapping[SSAValue, SSAValue] | None = None) -> list[Tensor]:
    """``region``'s ops copied (and prepared for autodiff) into ``b`` with its arguments
    bound to ``args`` and the values it uses from above renamed by ``renames``."""
    from rlx_mlir.transforms.autodiff import mirror_prepared

    return mirror_prepared(b, region.block, args, renames=renames)


def _scalar_predicate(b: Builder, pred: Tensor) -> Tensor:
    return pred if pred.shape == () else b.reshape(pred, ())


@PREPARE_AD.register(IfOp)
def _prepare_if(b: Builder, op: IfOp, operands: list[Tensor]) -> list[Tensor]:
    """Both branches are evaluated and selected with ``where`` (SPEC 4.4 step 4)."""
    pred, *captured = operands
    p = _scalar_predicate(b, pred)
    then_out = _inline(b, op.branches[0], captured)
    else_out = _inline(b, op.branches[1], captured)
    return [b.where(p, t, e) for t, e in zip(then_out, else_out, strict=True)]


@PREPARE_AD.register(WhileOp)
def _prepare_while(b: Builder, op: WhileOp, operands: list[Tensor]) -> list[Tensor]:
    """A scan of ``max_iterations`` steps, each masked by ``cond`` so that an early exit
    is honoured exactly: ``s = where(cond(s), body(a), s)``, where ``a`` is the last state
    ``cond`` held for (``s`` while looping), carried next to ``s``. After the exit the
    masked steps thus rerun a step the loop really took, not the body on a state it never
    saw (``s + exp(s)`` there overflows, and its zero cotangent times an infinite
    derivative was NaN). Values the regions use from above become broadcast inputs of the
    scan; its VJP then gives the gradients, with one body in the IR whatever the bound
    (it was unrolled, at a compile time quadratic in it).
    """
    from rlx_mlir.transforms.autodiff import region_captures

    bound = op.attr("max_iterations")
    if bound is None:
        raise RlxError("'rlx.while' needs a max_iterations attribute to be differentiated "
                       "(autodiff runs it as a masked scan of that many steps): "
                       "rlx.while_loop(..., max_iterations=N), or a fori_loop with Python "
                       "int bounds (a scan)", op=op)
    (state,) = operands
    if bound == 0:
        return [state]
    captures = region_captures([op.cond, op.body])

    def step(sb: Builder, carried: Tensor, *captured: Tensor) -> Tensor:
        renames = dict(zip(captures, (c.value for c in captured), strict=True))
        s, anchor = _unpack(sb, carried)
        (p,) = _inline(sb, op.cond, [s], renames)
        looping = _scalar_predicate(sb, p)
        anchor = sb.where(looping, s, anchor)
        (nxt,) = _inline(sb, op.body, [anchor], renames)
        return _pack(sb, sb.where(looping, nxt, s), anchor)

    trajectory = b.scan(_pack(b, state, state), step, length=bound,
                        bcasts=[b.wrap(c) for c in captures], save_trajectory=True)
    last = b.reshape(b.narrow(trajectory, axis=0, start=bound - 1, length=1),
                     trajectory.shape[1:])
    return [_unpack(b, last)[0]]


@PREPARE_AD.register(CustomFnOp)
def _prepare_custom_fn(b: Builder, op: CustomFnOp, operands: list[Tensor]) -> list[Tensor]:
    """Without a vjp region the ``fwd`` body is inlined and differentiated naturally."""
    if op.region("vjp") is None:
        return _inline(b, op.region("fwd"), operands)
    clone = op.clone(value_mapper=dict(zip(op.operands, [t.value for t in operands],
                                           strict=True)))
    b.block.add_op(clone)
    return [b.wrap(clone.result)]


@PREPARE_AD.register(ScanOp)
def _prepare_scan(b: Builder, op: ScanOp, operands: list[Tensor]) -> list[Tensor]:
    """The scan saves its (checkpointed) trajectory; a final-carry scan reads the last
    row, which is always the final carry (SPEC 4.4 step 8, and the fix of SPEC 9.15).
    Broadcast inputs stay broadcast: ``rlx.scan_backward_xs`` sums their gradient over
    the steps (SPEC 4.4 copies them ``length`` times, a weight of an RNN included)."""
    length, num_bcast, num_xs, save, k = scan_layout(op.in_types(), op.py_attrs())
    init, *inputs = operands
    region = op.body.clone()
    traj = b._emit_with_regions(
        "scan", [init, *inputs], [region], length=length, num_xs=num_xs or None,
        save_trajectory=True, num_checkpoints=k or None)
    if save:
        return [traj]
    rows = traj.shape[0]
    last = b.narrow(traj, axis=0, start=rows - 1, length=1)
    return [b.reshape(last, init.shape)]


def body_vjp_region(body) -> Region:
    """``(carry, xs..., d_output) -> (dcarry, dxs...)``: the scan body's VJP as a region.

    Every body input gets a gradient (zeros when it does not reach the next carry: RLX
    used STRICT mode here and panicked, SPEC 9.17); an integer input (token ids) gets
    integer zeros.
    """
    from rlx_mlir.transforms.autodiff import (
        GradOptions,
        build_grad_func,
        is_differentiable_type,
    )

    f = region_as_func(body.block, "scan_body")
    floats = [is_differentiable_type(a.type) for a in f.body.block.args]
    wrt = tuple(n for n, is_float in zip(arg_names(f), floats, strict=True) if is_float)
    g = build_grad_func(f, GradOptions(wrt, zero_missing_wrt=True, with_loss=False))
    return func_as_region(_with_integer_zeros(g, f.body.block.args, floats))


def _with_integer_zeros(g: func.FuncOp, args: Sequence[SSAValue],
                        floats: Sequence[bool]) -> func.FuncOp:
    """``g`` (gradients of the float ``args``) returning one value per arg: zeros of the
    arg's type at the integer positions."""
    from rlx_mlir.builder import Builder

    if all(floats):
        return g
    block = g.body.block
    ret = block.last_op
    block.detach_op(ret)
    b = Builder(block=block)
    grads = iter(ret.operands)
    values = [next(grads) if is_float else b.full(shape_of(a.type), 0, dtype_of(a.type)).value
              for a, is_float in zip(args, floats, strict=True)]
    block.add_op(func.ReturnOp(*values))
    return g


def _differentiable(x: Tensor) -> bool:
    from rlx_mlir.transforms.autodiff import is_differentiable_type

    return is_differentiable_type(x.type)


@VJP.register(ScanOp)
def _vjp_scan(ctx: VjpContext, op: ScanOp, g: Tensor) -> list[Tensor | None]:
    """d init and d input_i through ``rlx.scan_backward`` / ``rlx.scan_backward_xs``."""
    length, num_bcast, num_xs, save, k = scan_layout(op.in_types(), op.py_attrs())
    if not save:
        raise RlxError("internal error: scan reached the VJP without being prepared", op=op)
    init, *xs = ctx.inputs(op)
    (traj,) = ctx.outputs(op)
    attrs = dict(length=length, num_checkpoints=k or None, num_bcast=num_bcast or None)
    regions = lambda: [body_vjp_region(op.body)] + (  # noqa: E731
        [op.body.clone()] if trajectory_rows(length, k) != length else [])
    operands = [init, traj, g, *xs]
    grads = [ctx.b._emit_with_regions("scan_backward", operands, regions(), **attrs)]
    grads += [ctx.b._emit_with_regions("scan_backward_xs", operands, regions(), xs_idx=i,
                                       **attrs) if _differentiable(xs[i]) else None
              for i in range(num_bcast + num_xs)]
    return grads


@VJP.register(CustomFnOp)
def _vjp_custom_fn(ctx: VjpContext, op: CustomFnOp, g: Tensor) -> list[Tensor | None]:
    """The user's vjp region, inlined with (primals..., primal_output, d_output)."""
    region = op.region("vjp")
    if region is None:
        raise RlxError("internal error: custom_fn without vjp reached the VJP", op=op)
    _check_captures(op, "vjp", lambda v: v in ctx.active)
    (y,) = ctx.outputs(op)
    return _inline(ctx.b, region, [*ctx.inputs(op), y, g])


def _check_captures(op: CustomFnOp, kind: str, differentiated: Callable[[SSAValue], bool]) -> None:
    """Refuse to differentiate a value the ``fwd`` region captures: the user's ``kind``
    region only gives derivatives for the primals."""
    from rlx_mlir.transforms.autodiff import is_differentiable_type, region_captures

    for v in region_captures([op.region("fwd")]):
        if is_differentiable_type(v.type) and differentiated(v):
            what = f"%{v.name_hint}" if v.name_hint else "a value"
            raise RlxError(f"the fwd region of this 'rlx.custom_fn' uses {what}, defined "
                           f"outside it and being differentiated, but its {kind} region only "
                           f"gives derivatives for the primals: pass that value as a primal "
                           f"operand", op=op)


def region_as_func(block: Block, name: str) -> func.FuncOp:
    """A function with ``block``'s arguments and ops (its yield becomes a return)."""
    region = Region(Block(arg_types=[a.type for a in block.args]))
    new_block = region.block
    mapping = dict(zip(block.args, new_block.args, strict=True))
    for arg, new in zip(block.args, new_block.args, strict=True):
        new.name_hint = arg.name_hint
    for op in block.ops:
        if op is block.last_op:
            new_block.add_op(func.ReturnOp(*[mapping[v] for v in op.operands]))
        else:
            new_block.add_op(op.clone(value_mapper=mapping))
    types = [a.type for a in new_block.args]
    results = [v.type for v in block.last_op.operands]
    return func.FuncOp(name, (types, results), region)


def func_as_region(f: func.FuncOp) -> Region:
    """``f``'s body as a region ending in ``rlx.yield`` (the function is consumed)."""
    block = f.body.detach_block(0)
    ret = block.last_op
    block.add_op(YieldOp.create(operands=list(ret.operands)))
    block.erase_op(ret)
    return Region(block)


VJP.register(YieldOp)(no_gradient)


# ---------------------------------------------------------------- --autodiff-report


def scan_memory_report(module) -> list[str]:
    """One line per trajectory scan: how many carries it stores for the backward pass."""
    lines = []
    for op in module.walk():
        if not isinstance(op, ScanOp) or not op.attr("save_trajectory", False):
            continue
        length, k = op.attr("length"), op.attr("num_checkpoints", 0)
        rows = trajectory_rows(length, k)
        carry = op.init.type
        size = int(np.prod(shape_of(carry))) * numpy_dtype(carry).itemsize
        where = loc_of(op) or "<unknown>"
        lines.append(f"{where}: scan of length {length} with {k} checkpoints stores {rows} "
                     f"carries of {size} bytes = {rows * size} bytes for the backward pass")
    return lines


def _autodiff_report_stage(stage: str, module, args) -> None:
    """``rlx-opt --autodiff --autodiff-report``: print the scan memory estimates (stderr)."""
    import sys

    for line in scan_memory_report(module) or ["no trajectory scans"]:
        print(f"autodiff-report: {line}", file=sys.stderr)
    return None


STAGE_HOOKS["autodiff-report"] = _autodiff_report_stage


# ---------------------------------------------------------------- JVP rules


def _pack(b: Builder, first: Tensor, second: Tensor, axis: int = 0) -> Tensor:
    """``[2, *shape]`` (the pair on ``axis``): a primal and its tangent carried together."""
    halves = [b.reshape(v, (*v.shape[:axis], 1, *v.shape[axis:])) for v in (first, second)]
    return b.concat(*halves, axis=axis)


def _unpack(b: Builder, pair: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
    shape = pair.shape[:axis] + pair.shape[axis + 1:]
    return tuple(b.reshape(b.narrow(pair, axis=axis, start=i, length=1), shape)  # type: ignore
                 for i in (0, 1))


@JVP.register(ScanOp)
def _jvp_scan(ctx: JvpContext, op: ScanOp, t_init, *t_inputs) -> list[Tensor | None]:
    """A second scan carrying ``[carry, tangent]``; its body is the body's JVP."""
    from rlx_mlir.transforms.jvp import jvp_block

    length, num_bcast, num_xs, save, k = scan_layout(op.in_types(), op.py_attrs())
    init, *inputs = ctx.inputs(op)
    t_inputs = [ctx.or_zeros(t, x) for t, x in zip(t_inputs, inputs, strict=True)]
    bcasts, xs = inputs[:num_bcast], inputs[num_bcast:]
    t_bcasts, t_xs = t_inputs[:num_bcast], t_inputs[num_bcast:]

    def body(b: Builder, pair: Tensor, *rest: Tensor) -> Tensor:
        c, tc = _unpack(b, pair)
        nb = num_bcast
        primals = [c, *rest[:nb], *rest[2 * nb: 2 * nb + num_xs]]
        tangents = [tc, *rest[nb: 2 * nb], *rest[2 * nb + num_xs:]]
        (nxt,), (tnxt,) = jvp_block(b, op.body.block, primals, tangents)
        return _pack(b, nxt, tnxt if tnxt is not None else b.full(nxt.shape, 0.0, nxt.dtype))

    pair = ctx.b.scan(_pack(ctx.b, init, ctx.or_zeros(t_init, init)), body, length=length,
                      xs=[*xs, *t_xs], bcasts=[*bcasts, *t_bcasts], save_trajectory=save,
                      num_checkpoints=k)
    return [_unpack(ctx.b, pair, axis=1 if save else 0)[1]]


@JVP.register(WhileOp)
def _jvp_while(ctx: JvpContext, op: WhileOp, t_init: Tensor | None) -> list[Tensor | None]:
    """A second loop carrying ``[state, tangent]`` (JAX's rule): ``cond`` reads the
    primal half, the body is the body's JVP (values it uses from above bring their
    tangents). No ``max_iterations`` needed and nothing unrolled."""
    from rlx_mlir.transforms.jvp import jvp_block

    (init,) = ctx.inputs(op)
    pair = tensor((2, *init.shape), init.dtype)

    def cond(b: Builder, carried: Tensor) -> Tensor:
        return _inline(b, op.cond, [_unpack(b, carried)[0]])[0]

    def body(b: Builder, carried: Tensor) -> Tensor:
        state, t_state = _unpack(b, carried)
        (nxt,), (t_nxt,) = jvp_block(b, op.body.block, [state], [t_state], outer=ctx)
        return _pack(b, nxt, t_nxt if t_nxt is not None else b.full(nxt.shape, 0.0, nxt.dtype))

    regions = [ctx.b.region([pair], cond), ctx.b.region([pair], body)]
    out = ctx.b._emit_with_regions("while", [_pack(ctx.b, init, ctx.or_zeros(t_init, init))],
                                   regions, **op.py_attrs())
    primal, tangent = _unpack(ctx.b, out)
    _primal_from(ctx, op, primal)
    return [tangent]


def _primal_from(ctx: JvpContext, copy: WhileOp, primal: Tensor) -> None:
    """Take the primal result from the pair loop and drop the copied loop (run once)."""
    for source, value in list(ctx.values.items()):
        if value is copy.result:
            ctx.values[source] = primal.value
    copy.result.replace_all_uses_with(primal.value)
    copy.detach()
    copy.erase()


@JVP.register(CustomFnOp)
def _jvp_custom_fn(ctx: JvpContext, op: CustomFnOp, *tangents) -> list[Tensor | None]:
    """The user's jvp region when given (SPEC 5.12), else the JVP of the inlined fwd."""
    from rlx_mlir.transforms.jvp import jvp_block

    primals = ctx.inputs(op)
    full = [ctx.or_zeros(t, p) for t, p in zip(tangents, primals, strict=True)]
    region = op.region("jvp")
    if region is not None:
        _check_captures(op, "jvp", lambda v: ctx.tangent(v) is not None)
        return _inline(ctx.b, region, [*primals, *full])
    _, touts = jvp_block(ctx.b, op.region("fwd").block, primals, list(tangents), outer=ctx)
    return touts


JVP.register(YieldOp)(lambda ctx, op, *ts: [])


# ---------------------------------------------------------------- batching rules (SPEC 6.3)


def _vmap_region(ctx: VmapContext, block: Block, arg_types, flags,
                 finish: Callable[[Builder, list[Tensor], list[Tensor]], list[Tensor]]
                 | None = None) -> Region:
    """``block`` batched with the given argument flags; every result batched, then passed
    through ``finish(builder, args, results)`` when given."""
    new = Block(arg_types=list(arg_types))
    inner = ctx.b.appending_to(new, ctx.b.location)
    args = [inner.wrap(a) for a in new.args]
    outs = _vmap_inline(ctx, inner, block, args, flags)
    if finish is not None:
        outs = finish(inner, args, outs)
    new.add_op(YieldOp.create(operands=[o.value for o in outs]))
    return Region(new)


def _vmap_inline(ctx: VmapContext, b: Builder, block: Block, args: Sequence[Tensor],
                 flags: Sequence[bool]) -> list[Tensor]:
    """``block`` batched into ``b``'s block; every result batched."""
    from rlx_mlir.transforms.vmap import vmap_block

    outs, out_flags = vmap_block(b, block, args, flags, ctx.size, outer=ctx)
    sub = type(ctx)(b, ctx.size)
    return [sub.lift(o, f) for o, f in zip(outs, out_flags, strict=True)]


def _steps_first(ctx: VmapContext, x: Tensor, batched: bool) -> Tensor:
    """A per-step input ``[B, L, ...]`` as ``[L, B, ...]`` (shared ones stay ``[L, ...]``)."""
    if not batched:
        return x
    perm = [1, 0, *range(2, x.ndim)]
    return ctx.b.transpose(x, perm=perm)


def _step_type(x: Tensor):
    return tensor(x.shape[1:], x.dtype)


@VMAP.register(ScanOp)
def _vmap_scan(ctx: VmapContext, op: ScanOp, xs, batched) -> list[Tensor]:
    """The carry is batched, xs go from ``[B, L, ...]`` to ``[L, B, ...]``, the body is
    batched recursively and a trajectory comes back as ``[B, rows, ...]``; checkpointing is
    kept (unlike RLX, SPEC 9.16)."""
    length, num_bcast, num_xs, save, k = scan_layout(op.in_types(), op.py_attrs())
    init = ctx.lift(xs[0], batched[0])
    bcasts, bflags = xs[1:1 + num_bcast], batched[1:1 + num_bcast]
    steps = [_steps_first(ctx, x, f) for x, f in zip(xs[1 + num_bcast:],
                                                     batched[1 + num_bcast:], strict=True)]
    arg_types = [init.type, *(x.type for x in bcasts), *(_step_type(x) for x in steps)]
    flags = [True, *bflags, *batched[1 + num_bcast:]]
    region = _vmap_region(ctx, op.body.block, arg_types, flags)
    out = ctx.b._emit_with_regions(
        "scan", [init, *bcasts, *steps], [region], length=length, num_xs=num_xs or None,
        save_trajectory=save or None, num_checkpoints=k or None)
    if save:
        out = ctx.b.transpose(out, perm=[1, 0, *range(2, out.ndim)])
    return [out]


@VMAP.register(CustomFnOp)
def _vmap_custom_fn(ctx: VmapContext, op: CustomFnOp, xs, batched) -> list[Tensor]:
    """Every region is batched with all primals lifted (the vjp/jvp regions receive
    batched cotangents and tangents too)."""
    primals = ctx.lift_all(xs, batched)
    types = [p.type for p in primals]
    out = tensor((ctx.size, *shape_of(op.result.type)), dtype_of(op.result.type))
    regions = [_vmap_region(ctx, op.region("fwd").block, types, [True] * len(types))]
    if op.region("vjp") is not None:
        regions.append(_vmap_region(ctx, op.region("vjp").block, [*types, out, out],
                                    [True] * (len(types) + 2)))
    if op.region("jvp") is not None:
        regions.append(_vmap_region(ctx, op.region("jvp").block, [*types, *types],
                                    [True] * (2 * len(types))))
    return [ctx.b._emit_with_regions("custom_fn", primals, regions, out=[out],
                                     **{k: v for k, v in op.py_attrs().items()})]


@VMAP.register(WhileOp)
def _vmap_while(ctx: VmapContext, op: WhileOp, xs, batched) -> list[Tensor]:
    """Stays a loop, as in JAX: it runs while any element's ``cond`` holds (and, bounded,
    at most ``max_iterations`` times, as each element would), and the elements whose
    ``cond`` is false keep their state. (Unrolling a bounded loop with a mask per element
    took 159 s to compile at 400 iterations.)"""
    state = ctx.lift(xs[0], batched[0])
    want = yielded_types(op.cond.block)[0]

    def reshaped(b: Builder, x: Tensor, shape: Sequence[int]) -> Tensor:
        return x if x.shape == tuple(shape) else b.reshape(x, shape)

    def active(b: Builder, s: Tensor) -> Tensor:  # [B] i1: the elements still looping
        (keep,) = _vmap_inline(ctx, b, op.cond.block, [s], [True])
        return reshaped(b, keep, (ctx.size,))

    def any_active(b: Builder, args: list[Tensor], outs: list[Tensor]) -> list[Tensor]:
        count = b.reduce_max(b.cast(active(b, args[0]), "f32"), axes=[0])
        return [reshaped(b, count > 0.5, shape_of(want))]

    def step_active(b: Builder, args: list[Tensor], outs: list[Tensor]) -> list[Tensor]:
        keep = reshaped(b, active(b, args[0]), (ctx.size, *[1] * (state.ndim - 1)))
        return [b.where(b.expand(keep, state.shape), outs[0], args[0])]

    cond = _vmap_region(ctx, op.cond.block, [state.type], [True], any_active)
    body = _vmap_region(ctx, op.body.block, [state.type], [True], step_active)
    bound = op.attr("max_iterations", None)
    attrs = {} if bound is None else {"max_iterations": bound}
    return [ctx.b._emit_with_regions("while", [state], [cond, body], **attrs)]


OPS = [YieldOp, ScanOp, IfOp, WhileOp, CustomFnOp]


# ---------------------------------------------------------------- LOWER rules
# ``rule(op, e, *operands) -> value(s)`` (docs/lowering.md). Region bodies are cloned into
# ``scf`` bodies (rlx_mlir/lowering/regions.py); the cloned rlx ops are lowered on the
# pass's next sweep.

from dataclasses import dataclass  # noqa: E402

from xdsl.dialects import arith  # noqa: E402

from rlx_mlir.rules import LOWER  # noqa: E402


class _LazyRegions:
    """``rlx_mlir.lowering.regions``, imported on first use (it imports the dialects)."""

    def __getattr__(self, name: str):
        import rlx_mlir.lowering.regions as module

        return getattr(module, name)


rg = _LazyRegions()


ROW_SCHEDULE_CHECK_MAX = 1 << 16
"""Scans up to this long check :class:`RowSchedule` against :func:`checkpoint_steps`."""


@dataclass(frozen=True)
class RowSchedule:
    """:func:`checkpoint_steps` as index arithmetic on a loop counter ``t``.

    With ``R`` stored rows, ``floor((t + 1) R / L)`` steps ``<= t`` are stored, so step
    ``t`` is stored iff that count exceeds ``floor(t R / L)``, in row ``floor(t R / L)``.
    """

    length: int
    rows: int

    @classmethod
    def of(cls, length: int, k: int) -> RowSchedule:
        schedule = cls(length, trajectory_rows(length, k))
        if schedule.every_step or length > ROW_SCHEDULE_CHECK_MAX:
            return schedule  # every step stored; or too long to list (10^7 steps: 5 s)
        if schedule.static_steps() != checkpoint_steps(length, k):
            raise RlxError(f"internal error: no row arithmetic for checkpoint_steps({length}, {k})")
        return schedule

    @property
    def every_step(self) -> bool:
        return self.rows == self.length

    def static_steps(self) -> list[int]:
        return [t for t in range(self.length) if self._count(t + 1) != self._count(t)]

    def _count(self, n: int) -> int:
        return n * self.rows // self.length

    def stored_before(self, e, t):
        """How many stored steps precede step ``t``: its row, or its segment's index."""
        if self.every_step:
            return t
        return rg.index_floordiv(e, rg.index_mul(e, t, self.rows), self.length)

    def is_stored(self, e, t):
        upto = rg.index_floordiv(e, rg.index_mul(e, rg.index_add(e, t, 1), self.rows), self.length)
        return rg.index_cmp(e, "ne", upto, self.stored_before(e, t))

    def segment_start(self, e, segment):
        """The first step after stored row ``segment - 1``: ``ceil(segment L / R)``."""
        scaled = rg.index_add(e, rg.index_mul(e, segment, self.length), self.rows - 1)
        return rg.index_floordiv(e, scaled, self.rows)

    def store(self, e, t, carry, trajectory):
        """``trajectory`` with ``carry`` in the row of step ``t`` when ``t`` is stored."""
        row = self.stored_before(e, t)
        if self.every_step:
            return rg.insert_row(e, carry, trajectory, row)
        (out,) = rg.if_else(e, self.is_stored(e, t), [trajectory.type],
                            lambda s: [rg.insert_row(s, carry, trajectory, row)],
                            lambda s: [trajectory])
        return out


def scan_step(e, body: Block, carry, bcasts: Sequence, xs: Sequence, t):
    """One step of a scan body at loop index ``t``: the next carry."""
    steps = [rg.extract_row(e, x, t) for x in xs]
    return rg.inline_block(e, body, [carry, *bcasts, *steps])[0]


@LOWER.register(ScanOp)
def _lower_scan(op: ScanOp, e, init, *inputs):
    """``scf.for`` over the steps; the trajectory is an iter_arg filled row by row."""
    length, num_bcast, _, save, k = scan_layout(op.in_types(), op.py_attrs())
    bcasts, xs = inputs[:num_bcast], inputs[num_bcast:]
    schedule = RowSchedule.of(length, k)

    def step(s, t, carry, *trajectory):
        nxt = scan_step(s, op.body.block, carry, bcasts, xs, t)
        return [nxt, *(schedule.store(s, t, nxt, rows) for rows in trajectory)]

    out_type = op.result.type
    trajectory = [e.fresh(shape_of(out_type), out_type.element_type)] if save else []
    return rg.for_loop(e, 0, length, [init, *trajectory], step)[-1]


@LOWER.register(IfOp)
def _lower_if(op: IfOp, e, pred, *captured):
    """``scf.if`` on the predicate's element, each branch inlined."""
    then_block, else_block = (r.block for r in op.branches)
    return rg.if_else(e, rg.first_element(e, pred), [r.type for r in op.results],
                      lambda s: rg.inline_block(s, then_block, captured),
                      lambda s: rg.inline_block(s, else_block, captured))


@LOWER.register(WhileOp)
def _lower_while(op: WhileOp, e, init):
    """``scf.while``; with ``max_iterations`` a step counter joins the state."""
    bound = op.attr("max_iterations")

    def keep_going(s, state, *count):
        flag = rg.first_element(s, rg.inline_block(s, op.cond.block, [state])[0])
        if not count:
            return flag
        return s.emit(arith.AndIOp(flag, rg.index_cmp(s, "lt", count[0], bound)))

    def step(s, state, *count):
        nxt = rg.inline_block(s, op.body.block, [state])[0]
        return [nxt, *(rg.index_add(s, c, 1) for c in count)]

    counter = [] if bound is None else [rg.index(e, 0)]
    return rg.while_loop(e, [init, *counter], keep_going, step)[0]


@LOWER.register(CustomFnOp)
def _lower_custom_fn(op: CustomFnOp, e, *primals):
    """The ``fwd`` body inlined (vjp/jvp regions only matter to autodiff)."""
    return rg.inline_block(e, op.region("fwd").block, primals)
