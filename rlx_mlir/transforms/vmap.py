"""vmap as an IR-to-IR pass (DESIGN 4.3, SPEC 6).

``--vmap="func=f batched=x,y size=B"`` adds ``@f_vmap``: the named arguments gain
a leading batch axis of size B, the others (parameters included) are shared, and
every result is batched on axis 0 (an unbatched result is broadcast to B, so the
signature never depends on the data flow: the fix of SPEC 9.20).

A batching rule gets the context, the op, its operands and which of them are
batched (always on axis 0) and returns the results batched on axis 0::

    @VMAP.register(SoftmaxOp)
    def _vmap_softmax(ctx: VmapContext, op, xs, batched):
        (x,) = xs
        return [ctx.b.softmax(x, axis=ctx.shift_axis(op.attr("axis", -1), x.ndim - 1))]

Ops without a specific rule for some configuration can call
:meth:`VmapContext.unroll`, which runs the op once per batch element.
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
from rlx_mlir.dialects.base import dtype_of, shape_of, tensor
from rlx_mlir.rules import PREPARE_AD, VMAP
from rlx_mlir.runtime.signature import arg_attr_dicts, arg_names
from rlx_mlir.transforms import register_pass
from rlx_mlir.transforms.autodiff import (
    check_new_symbol,
    discard_block,
    simplify,
    values_from_above,
)


class VmapContext:
    """What a batching rule sees: the builder, the batch size and lifting helpers."""

    def __init__(self, builder: Builder, size: int,
                 values: MutableMapping[SSAValue, Tensor] | None = None,
                 flags: MutableMapping[SSAValue, bool] | None = None):
        self.b = builder
        self.size = size
        # The batched version of each source value in scope (regions of rlx.if, rlx.while
        # and rlx.custom_fn may use values defined above them) and whether it is batched.
        self.values: MutableMapping[SSAValue, Tensor] = values if values is not None else {}
        self.flags: MutableMapping[SSAValue, bool] = flags if flags is not None else {}

    def is_batched(self, value: SSAValue) -> bool:
        """Whether the source ``value`` (an operand or a captured value) is batched."""
        return self.flags.get(value, False)

    def value_mapper(self, values: Sequence[SSAValue]) -> dict[SSAValue, SSAValue]:
        """Source values to their (unbatched) versions, for cloning an op that uses them;
        values not in scope map to themselves."""
        return {v: self.values[v].value if v in self.values else v for v in values}

    def lift(self, x: Tensor, batched: bool) -> Tensor:
        """``x`` with a leading batch axis (broadcast when it was shared)."""
        if batched:
            return x
        return self.b.expand(self.b.reshape(x, (1, *x.shape)), (self.size, *x.shape))

    def lift_all(self, xs: Sequence[Tensor], batched: Sequence[bool]) -> list[Tensor]:
        return [self.lift(x, f) for x, f in zip(xs, batched, strict=True)]

    def align(self, x: Tensor, batched: bool, rank: int) -> Tensor:
        """For NumPy-broadcasting ops of (unbatched) result rank ``rank``: a batched
        operand becomes ``[B, 1.., *shape]`` of rank ``1 + rank``; a shared one is left
        alone (right-aligned broadcasting already repeats it over B)."""
        if not batched:
            return x
        missing = rank - (x.ndim - 1)
        if missing <= 0:
            return x
        return self.b.reshape(x, (x.shape[0], *([1] * missing), *x.shape[1:]))

    @staticmethod
    def shift_axis(axis: int, rank: int) -> int:
        """An axis of the unbatched op (possibly negative) in the batched op: normalised
        first, then shifted by one (SPEC 9.8)."""
        return axis % rank + 1 if rank else 1

    def fold(self, x: Tensor) -> Tensor:
        """``[B, N, ...] -> [B*N, ...]``: fold the batch into the op's own leading axis."""
        return self.b.reshape(x, (x.shape[0] * x.shape[1], *x.shape[2:]))

    def unfold(self, x: Tensor) -> Tensor:
        """Inverse of :meth:`fold`."""
        return self.b.reshape(x, (self.size, x.shape[0] // self.size, *x.shape[1:]))

    def emit_like(self, op: Operation, operands: Sequence[Tensor],
                  out_shapes: Sequence[Sequence[int]] | None = None, **attrs) -> list[Tensor]:
        """Re-emit ``op`` on new operands, with attributes overridden by ``attrs``;
        ``out_shapes`` (unbatched) for ops whose result type is caller-given."""
        merged = {**op.py_attrs(), **attrs}
        out = None
        if out_shapes is not None:
            out = [tensor((self.size, *s), dtype_of(r.type))
                   for s, r in zip(out_shapes, op.results, strict=True)]
        result = self.b.emit(op.name.removeprefix("rlx."), *operands, out=out, **merged)
        return list(result) if isinstance(result, tuple) else [result]

    def elementwise(self, op: Operation, xs: Sequence[Tensor],
                    batched: Sequence[bool]) -> list[Tensor]:
        """Batching rule of a NumPy-broadcasting op: align ranks and re-emit."""
        rank = len(shape_of(op.results[0].type))
        return self.emit_like(op, [self.align(x, f, rank)
                                   for x, f in zip(xs, batched, strict=True)])

    def same_shape(self, op: Operation, xs: Sequence[Tensor],
                   batched: Sequence[bool]) -> list[Tensor]:
        """Batching rule of an op whose operands must have equal shapes: lift all."""
        return self.emit_like(op, self.lift_all(xs, batched))

    def unroll(self, op: Operation, xs: Sequence[Tensor], batched: Sequence[bool]) -> list[Tensor]:
        """Run ``op`` once per batch element and stack: correct for any op, slow for big B."""
        per_result: list[list[Tensor]] = [[] for _ in op.results]
        captured = values_from_above(op)
        for i in range(self.size):
            operands = [self._row(x, i) if f else x for x, f in zip(xs, batched, strict=True)]
            mapper = self._captured_row(captured, i)
            mapper.update(zip(op.operands, [o.value for o in operands], strict=True))
            clone = op.clone(value_mapper=mapper)
            self.b.block.add_op(clone)
            for k, r in enumerate(clone.results):
                t = self.b.wrap(r)
                per_result[k].append(self.b.reshape(t, (1, *t.shape)))
        return [self.b.concat(*rows, axis=0) if len(rows) > 1 else rows[0]
                for rows in per_result]

    def _captured_row(self, captured: Sequence[SSAValue], i: int) -> dict[SSAValue, SSAValue]:
        """The values an unrolled op captures, for batch element ``i``."""
        mapper = self.value_mapper([v for v in captured if not self.is_batched(v)])
        mapper.update({v: self._row(self.b.wrap(self.values[v].value), i).value
                       for v in captured if self.is_batched(v)})
        return mapper

    def _row(self, x: Tensor, i: int) -> Tensor:
        return self.b.reshape(self.b.narrow(x, axis=0, start=i, length=1), x.shape[1:])


def vmap_block(builder: Builder, source: Block, args: Sequence[Tensor],
               batched: Sequence[bool], size: int,
               outer: VmapContext | None = None) -> tuple[list[Tensor], list[bool]]:
    """Evaluate ``source`` with some arguments batched; returns results and their flags.

    ``outer`` is the context of the enclosing block when ``source`` is a region body: the
    values the region captures from above are looked up there."""
    values: MutableMapping[SSAValue, Tensor] = dict(zip(source.args, args, strict=True))
    flags: MutableMapping[SSAValue, bool] = dict(zip(source.args, batched, strict=True))
    if outer is not None:
        values, flags = ChainMap(values, outer.values), ChainMap(flags, outer.flags)
    ctx = VmapContext(builder, size, values, flags)
    for op in source.ops:
        if op is source.last_op and op.name in ("func.return", "rlx.yield"):
            return ([_batched_value(ctx, v) for v in op.operands],
                    [ctx.is_batched(v) for v in op.operands])
        _vmap_op(ctx, op)
    return [], []


def _batched_value(ctx: VmapContext, v: SSAValue) -> Tensor:
    """The batched version of ``v`` for ``ctx.b`` (itself when it is not in scope)."""
    return ctx.b.wrap(ctx.values[v].value if v in ctx.values else v)


def _vmap_op(ctx: VmapContext, op: Operation) -> None:
    """Batch ``op`` into ``ctx.b``; its results join ``ctx.values`` and ``ctx.flags``."""
    values, flags = ctx.values, ctx.flags
    xs = [_batched_value(ctx, v) for v in op.operands]
    batched = [ctx.is_batched(v) for v in op.operands]
    captured = values_from_above(op)
    if not any(batched) and not any(ctx.is_batched(v) for v in captured):
        clone = op.clone(value_mapper=ctx.value_mapper([*op.operands, *captured]))
        ctx.b.block.add_op(clone)
        values.update({r: ctx.b.wrap(c) for r, c in zip(op.results, clone.results, strict=True)})
        flags.update({r: False for r in op.results})
        return
    ctx.b.location = op.location
    if op.name in INLINED_FOR_VMAP:
        outs = vmap_inlined(ctx, op, xs, batched)
    else:
        outs = VMAP.lookup(op)(ctx, op, xs, batched)
    for result, out in zip(op.results, outs, strict=True):
        want = (ctx.size, *shape_of(result.type))
        if out.shape != want:
            raise RlxError(f"internal error: batching rule of '{op.name}' produced shape "
                           f"{out.shape}, expected {want}", op=op)
        values[result] = out
        flags[result] = True


# If is batched by evaluating both branches and selecting (the predicate may differ
# per batch element); a bounded while is unrolled with a mask per element (rlx.while's
# batching rule, which keeps an unbounded while a loop).
INLINED_FOR_VMAP = ("rlx.if",)


def vmap_inlined(ctx: VmapContext, op: Operation, xs: Sequence[Tensor],
                 batched: Sequence[bool]) -> list[Tensor]:
    """``op`` rewritten as its autodiff form (``PREPARE_AD``: both branches and a select,
    a masked unrolled loop), then batched op by op."""
    block = Block(arg_types=[v.type for v in op.operands])
    inner = Builder.appending_to(block, op.location)
    results = PREPARE_AD.lookup(op)(inner, op, [inner.wrap(a) for a in block.args])
    from rlx_mlir.dialects.control import YieldOp

    block.add_op(YieldOp.create(operands=[r.value for r in results]))
    outs, flags = vmap_block(ctx.b, block, xs, batched, ctx.size, outer=ctx)
    discard_block(block)
    return [ctx.lift(o, f) for o, f in zip(outs, flags, strict=True)]


@dataclass
class VmapOptions:
    batched: tuple[str, ...]
    size: int
    suffix: str = "_vmap"


def build_vmap_func(f: func.FuncOp, options: VmapOptions) -> func.FuncOp:
    from rlx_mlir.runtime.signature import argument_named

    names = arg_names(f)
    if len(set(options.batched)) != len(options.batched):
        raise RlxError(f"batched names an argument twice: {', '.join(options.batched)}", op=f)
    for name in options.batched:
        if argument_named(f, name, "batch") is None:
            known = f"arguments: {', '.join(names)}" if names else "it takes no arguments"
            raise RlxError(f"@{f.sym_name.data} has no argument '{name}' to batch ({known})",
                           op=f)
    if options.size < 1:
        raise RlxError(f"vmap size must be >= 1, got {options.size}", op=f)
    flags = [n in options.batched for n in names]
    inputs = [tensor((options.size, *shape_of(t)), dtype_of(t)) if fl else t
              for t, fl in zip(f.function_type.inputs.data, flags, strict=True)]
    block = Block(arg_types=inputs)
    for new, old in zip(block.args, f.body.block.args, strict=True):
        new.name_hint = old.name_hint
    builder = Builder.appending_to(block, f.location)
    outs, out_flags = vmap_block(builder, f.body.block, [builder.wrap(a) for a in block.args],
                                 flags, options.size)
    ctx = VmapContext(builder, options.size)
    results = [ctx.lift(o, fl).value for o, fl in zip(outs, out_flags, strict=True)]
    block.add_op(func.ReturnOp(*results))
    g = func.FuncOp(f.sym_name.data + options.suffix, (inputs, [r.type for r in results]),
                    Region(block), arg_attrs=ArrayAttr([DictionaryAttr(a)
                                                        for a in arg_attr_dicts(f)]))
    g.attributes["rlx.vmap_of"] = StringAttr(f.sym_name.data)
    g.attributes["rlx.batched"] = ArrayAttr([StringAttr(n) for n in options.batched])
    g.location = f.location
    return g


def vmap(module: ModuleOp, func_name: str | None, batched: Sequence[str],
         size: int) -> func.FuncOp:
    """Add ``@<f>_vmap`` to ``module`` (in place) and return it (``rlx_mlir.vmap``)."""
    from rlx_mlir.ir import find_func

    f = find_func(module, func_name)
    options = VmapOptions(tuple(batched), size)
    name = f.sym_name.data
    check_new_symbol(module, name + options.suffix, f"the batched version of @{name}")
    g = build_vmap_func(f, options)
    module.body.block.insert_op_after(g, f)
    simplify(g)
    return g


@register_pass
@dataclass(frozen=True)
class VmapPass(ModulePass):
    """``--vmap="func=f batched=x,y size=B"``: add ``@f_vmap``."""

    name = "vmap"
    batched: tuple[str, ...]
    size: int
    func: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        vmap(op, self.func, self.batched, self.size)
