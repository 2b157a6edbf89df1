"""Forward-mode autodiff as an IR-to-IR pass (DESIGN 4.3, SPEC 4.6).

For ``func.func @f(args...) -> (outs...)`` it adds
``func.func @f_jvp(args..., tangent_<wrt>...) -> (outs..., tangent outs...)``.

    rlx-opt model.mlir --jvp
    rlx-opt model.mlir --jvp="func=f wrt=x"

A JVP rule takes the context, the (mirrored) op and one tangent per operand
(None for a zero tangent) and returns one tangent (or None) per result::

    @JVP.register(MulOp)
    def _jvp_mul(ctx: JvpContext, op: MulOp, ta, tb) -> list[Tensor | None]:
        a, b = ctx.inputs(op)
        return [ctx.add(ctx.mul(ta, b), ctx.mul(a, tb))]   # None-aware helpers
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from rlx_mlir.builder import Builder, Tensor
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import shape_of
from rlx_mlir.rules import JVP, PREPARE_AD
from rlx_mlir.runtime.signature import arg_attr_dicts, arg_names, fresh_name
from rlx_mlir.transforms import register_pass
from rlx_mlir.transforms.autodiff import (
    check_new_symbol,
    differentiable_funcs,
    discard_block,
    is_differentiable_type,
    resolve_wrt,
    simplify,
    values_from_above,
)


class JvpContext:
    """What a JVP rule sees: the builder and None-aware tangent arithmetic."""

    def __init__(self, builder: Builder,
                 values: MutableMapping[SSAValue, SSAValue] | None = None,
                 tangents: MutableMapping[SSAValue, Tensor | None] | None = None):
        self.b = builder
        # The scope of the block being differentiated: source value -> its copy, and the
        # tangent of each value (source values and the copies of captured ones); regions
        # of rlx.if, rlx.while and rlx.custom_fn may use values defined above them.
        self.values: MutableMapping[SSAValue, SSAValue] = values if values is not None else {}
        self.tangents: MutableMapping[SSAValue, Tensor | None] = (
            tangents if tangents is not None else {})

    def tangent(self, value: SSAValue) -> Tensor | None:
        """The tangent of ``value`` in scope, for this builder (None = zero)."""
        t = self.tangents.get(value)
        return None if t is None else self.b.wrap(t.value)

    def inputs(self, op: Operation) -> list[Tensor]:
        return [self.b.wrap(v) for v in op.operands]

    def outputs(self, op: Operation) -> list[Tensor]:
        return [self.b.wrap(v) for v in op.results]

    def zeros(self, shape: Sequence[int], dtype: str) -> Tensor:
        return self.b.full(shape, 0.0, dtype)

    def zeros_like(self, value: Tensor) -> Tensor:
        return self.zeros(value.shape, value.dtype)

    def add(self, *terms: Tensor | None) -> Tensor | None:
        """Sum of the non-None terms (None when all are None)."""
        present = [t for t in terms if t is not None]
        if not present:
            return None
        total = present[0]
        for t in present[1:]:
            total = total + t
        return total

    def mul(self, t: Tensor | None, factor: Tensor) -> Tensor | None:
        return None if t is None else t * factor

    def or_zeros(self, t: Tensor | None, like: Tensor) -> Tensor:
        return t if t is not None else self.zeros_like(like)

    def broadcast_to(self, t: Tensor, shape: Sequence[int]) -> Tensor:
        """``t`` broadcast (NumPy rules) to the result ``shape``."""
        return t if t.shape == tuple(shape) else self.b.expand(t, shape)


def linear_jvp(ctx: JvpContext, op: Operation, *tangents: Tensor | None) -> list[Tensor | None]:
    """JVP of an op linear in all its float operands: the op applied to the tangents
    (zeros stand in for missing ones); non-float operands are passed through."""
    if all(t is None for t in tangents):
        return [None] * len(op.results)
    operands = []
    for value, t in zip(ctx.inputs(op), tangents, strict=True):
        if is_differentiable_type(value.type):
            operands.append(ctx.or_zeros(t, value).value)
        else:
            operands.append(value.value)
    clone = op.clone(value_mapper=dict(zip(op.operands, operands, strict=True)))
    ctx.b.block.add_op(clone)
    return [ctx.b.wrap(r) for r in clone.results]


def jvp_block(builder: Builder, source: Block, primals: Sequence[Tensor],
              tangents: Sequence[Tensor | None],
              outer: JvpContext | None = None) -> tuple[list[Tensor], list[Tensor | None]]:
    """Evaluate ``source`` on ``primals`` after the builder's block, with tangents.

    Returns the block's results and their tangents (None = zero). ``outer`` is the
    context of the enclosing block when ``source`` is a region body: the values the region
    captures from above, and their tangents, are looked up there.
    """
    values: MutableMapping[SSAValue, SSAValue] = {
        a: p.value for a, p in zip(source.args, primals, strict=True)}
    tans: MutableMapping[SSAValue, Tensor | None] = dict(zip(source.args, tangents,
                                                             strict=True))
    if outer is not None:
        values, tans = ChainMap(values, outer.values), ChainMap(tans, outer.tangents)
    ctx = JvpContext(builder, values, tans)
    for op in source.ops:
        if op is source.last_op and op.name in ("func.return", "rlx.yield"):
            return ([builder.wrap(values.get(v, v)) for v in op.operands],
                    [ctx.tangent(v) for v in op.operands])
        _jvp_op(ctx, op)
    return [], []


def _jvp_op(ctx: JvpContext, op: Operation) -> None:
    """Copy ``op`` into ``ctx.b`` with its tangents; both join ``ctx``'s scope."""
    builder, values, tans = ctx.b, ctx.values, ctx.tangents
    in_tangents = [ctx.tangent(v) for v in op.operands]
    if op.name in INLINED_FOR_JVP:
        operands = [builder.wrap(values.get(v, v)) for v in op.operands]
        sub = _prepared_block(op, operands)
        outs, touts = jvp_block(builder, sub, operands, in_tangents, outer=ctx)
        discard_block(sub)
        values.update({r: o.value for r, o in zip(op.results, outs, strict=True)})
        tans.update(dict(zip(op.results, touts, strict=True)))
        return
    clone = op.clone(value_mapper=values)  # type: ignore[arg-type]
    builder.block.add_op(clone)
    values.update(dict(zip(op.results, clone.results, strict=True)))
    shared = _share_captured_tangents(ctx, op)
    if all(t is None for t in in_tangents) and not shared:
        return
    builder.location = op.location
    out_tangents = JVP.lookup(op)(ctx, clone, *in_tangents)
    for result, t in zip(op.results, out_tangents, strict=True):
        if t is not None and t.shape != shape_of(result.type):
            raise RlxError(f"internal error: JVP of '{op.name}' produced shape {t.shape} for "
                           f"a result of shape {shape_of(result.type)}", op=op)
        tans[result] = t


def _share_captured_tangents(ctx: JvpContext, op: Operation) -> bool:
    """Give the copies of the values ``op``'s regions capture the tangents of the
    originals (the rule sees the copied op, whose regions use the copies); whether any
    captured value has a tangent."""
    shared = False
    for v in values_from_above(op):
        t = ctx.tangents.get(v)
        if t is not None:
            ctx.tangents[ctx.values.get(v, v)] = t
            shared = True
    return shared


# Ops differentiated through their PREPARE_AD rewrite (if -> where).
INLINED_FOR_JVP = ("rlx.if",)


def _prepared_block(op: Operation, operands: Sequence[Tensor]) -> Block:
    """A block computing ``op`` through its PREPARE_AD rewrite (if/while/custom_fn)."""
    block = Block(arg_types=[v.type for v in op.operands])
    b = Builder.appending_to(block, op.location)
    results = PREPARE_AD.lookup(op)(b, op, [b.wrap(a) for a in block.args])
    from rlx_mlir.dialects.control import YieldOp

    block.add_op(YieldOp.create(operands=[r.value for r in results]))
    return block


@dataclass
class JvpOptions:
    wrt: tuple[str, ...] | None = None
    suffix: str = "_jvp"


def _tangent_names(names: list[str], wrt: list[int]) -> list[str]:
    """``tangent_<x>`` per wrt argument, made unique (a jvp of a jvp function)."""
    taken = set(names)
    out = []
    for i in wrt:
        out.append(fresh_name(f"tangent_{names[i]}", taken))
        taken.add(out[-1])
    return out


def build_jvp_func(f: func.FuncOp, options: JvpOptions) -> func.FuncOp:
    """``@f_jvp(args..., tangent_<wrt>...) -> (outs..., tangent outs...)``."""
    wrt = resolve_wrt(f, options.wrt)
    twice = sorted({arg_names(f)[i] for i in wrt if wrt.count(i) > 1})
    if twice:  # one tangent per argument: a second would be silently dropped
        raise RlxError(f"--jvp: wrt lists {', '.join(repr(n) for n in twice)} more than once",
                       op=f)
    inputs = list(f.function_type.inputs.data)
    tangent_types = [inputs[i] for i in wrt]
    block = Block(arg_types=[*inputs, *tangent_types])
    names = arg_names(f)
    tangent_names = _tangent_names(names, wrt)
    for new, old in zip(block.args, f.body.block.args, strict=False):
        new.name_hint = old.name_hint
    for arg, name in zip(block.args[len(inputs):], tangent_names, strict=True):
        arg.name_hint = name if name.isidentifier() else None
    builder = Builder.appending_to(block, f.location)
    primals = [builder.wrap(a) for a in block.args[: len(inputs)]]
    tangents: list[Tensor | None] = [None] * len(inputs)
    for arg, i in zip(block.args[len(inputs):], wrt, strict=True):
        tangents[i] = builder.wrap(arg)
    outs, touts = jvp_block(builder, f.body.block, primals, tangents)
    ctx = JvpContext(builder)
    touts = [t if t is not None else ctx.zeros_like(o) for o, t in zip(outs, touts, strict=True)]
    results = [o.value for o in outs] + [t.value for t in touts]
    block.add_op(func.ReturnOp(*results))
    attrs = arg_attr_dicts(f) + [{"rlx.name": StringAttr(n)} for n in tangent_names]
    jvp_func = func.FuncOp(
        f.sym_name.data + options.suffix, ([*inputs, *tangent_types], [v.type for v in results]),
        Region(block), arg_attrs=ArrayAttr([DictionaryAttr(a) for a in attrs]))
    jvp_func.attributes["rlx.jvp_of"] = StringAttr(f.sym_name.data)
    jvp_func.attributes["rlx.wrt"] = ArrayAttr([StringAttr(names[i]) for i in wrt])
    jvp_func.location = f.location
    return jvp_func


def jvp(module: ModuleOp, func_name: str | None = None,
        wrt: Sequence[str] | None = None) -> func.FuncOp:
    """Add ``@<f>_jvp`` to ``module`` (in place) and return it (``rlx_mlir.jvp``)."""
    from rlx_mlir.ir import find_func

    f = find_func(module, func_name)
    options = JvpOptions(tuple(wrt) if wrt else None)
    name = f.sym_name.data
    check_new_symbol(module, name + options.suffix, f"the JVP of @{name}")
    g = build_jvp_func(f, options)
    module.body.block.insert_op_after(g, f)
    simplify(g)
    return g


@register_pass
@dataclass(frozen=True)
class JvpPass(ModulePass):
    """``--jvp``: add ``@f_jvp`` (options ``func``, ``wrt`` as for ``--autodiff``)."""

    name = "jvp"
    func: str | None = None
    wrt: tuple[str, ...] | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in differentiable_funcs(op, self.func):
            jvp(op, f.sym_name.data, self.wrt)

