"""Reverse-mode autodiff as an IR-to-IR pass (DESIGN 4.2, SPEC 4).

For ``func.func @f(args...) -> (loss, aux...)`` it adds
``func.func @f_grad(args..., %d_output) -> (loss, aux..., d_wrt...)``: a mirror of
``@f`` followed by the reverse walk, which calls the VJP rule registered for
each op (``rlx_mlir.rules.VJP``) and sums cotangents across consumers.

    rlx-opt model.mlir --autodiff
    rlx-opt model.mlir --autodiff="wrt=w1,b1 zero-missing-wrt=true"

A VJP rule takes the context, the (mirrored) forward op and one cotangent per
result, and returns one cotangent (or None) per operand::

    @VJP.register(MulOp)
    def _vjp_mul(ctx: VjpContext, op: MulOp, g: Tensor) -> list[Tensor | None]:
        a, b = ctx.inputs(op)
        return [ctx.unbroadcast(g * b, a.shape), ctx.unbroadcast(g * a, b.shape)]
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsolatedFromAbove, SymbolTable, is_side_effect_free

from rlx_mlir.builder import Builder, Tensor
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import COMPLEX_DTYPES, REAL_FLOAT_DTYPES, dtype_of, shape_of
from rlx_mlir.ir import find_func
from rlx_mlir.rules import PREPARE_AD, VJP
from rlx_mlir.runtime.signature import arg_attr_dicts, arg_names, fresh_name
from rlx_mlir.tools.rlx_opt_hooks import STAGE_HOOKS
from rlx_mlir.transforms import register_pass


class VjpContext:
    """What a VJP rule sees: the builder of the gradient function and helpers."""

    def __init__(self, builder: Builder, active: frozenset[SSAValue] = frozenset()):
        self.b = builder
        self.active = active  # mirrored values that depend on a differentiated argument

    def inputs(self, op: Operation) -> list[Tensor]:
        """The (mirrored) operands of ``op`` as Tensors."""
        return [self.b.wrap(v) for v in op.operands]

    def outputs(self, op: Operation) -> list[Tensor]:
        return [self.b.wrap(v) for v in op.results]

    def zeros(self, shape: Sequence[int], dtype: str) -> Tensor:
        return self.b.full(shape, 0.0, dtype)

    def unbroadcast(self, g: Tensor, shape: Sequence[int]) -> Tensor:
        """Sum ``g`` back to a broadcast source's ``shape`` (SPEC 4.5).

        Sums the leading extra axes and every axis where the source had size 1.
        """
        shape = tuple(shape)
        if g.shape == shape:
            return g
        extra = g.ndim - len(shape)
        axes = list(range(extra)) + [
            extra + i for i, d in enumerate(shape) if d == 1 and g.shape[extra + i] != 1
        ]
        if axes:
            g = self.b.reduce_sum(g, axes=axes, keep_dims=True)
        return g if g.shape == shape else self.b.reshape(g, shape)

    def expand_to(self, g: Tensor, shape: Sequence[int], axes: Sequence[int],
                  keep_dims: bool) -> Tensor:
        """Inverse of a reduction over ``axes``: broadcast ``g`` back to ``shape``."""
        if not keep_dims:
            kept = [1 if i in axes else d for i, d in enumerate(shape)]
            g = self.b.reshape(g, kept)
        return g if g.shape == tuple(shape) else self.b.expand(g, shape)


# ---------------------------------------------------------------- rule helpers


def linear_rule(fn):
    """Register-ready VJP for an op linear in its single operand: ``g -> fn(ctx, op, g)``."""

    def rule(ctx: VjpContext, op: Operation, g: Tensor) -> list[Tensor | None]:
        return [fn(ctx, op, g)]

    return rule


def is_differentiable_type(t) -> bool:
    return isinstance(t, TensorType) and dtype_of(t) in (*REAL_FLOAT_DTYPES, *COMPLEX_DTYPES)


# ---------------------------------------------------------------- the transform


@dataclass
class GradOptions:
    wrt: tuple[str, ...] | None = None
    zero_missing_wrt: bool = False
    with_loss: bool = True
    suffix: str = "_grad"


@dataclass
class _Walk:
    """State of one reverse walk: the cotangent of each mirrored value."""

    ctx: VjpContext
    cotangents: dict[SSAValue, Tensor] = field(default_factory=dict)

    def add(self, value: SSAValue, g: Tensor, op: Operation) -> None:
        if not is_differentiable_type(value.type):
            return
        if g.shape != shape_of(value.type):
            raise RlxError(
                f"internal error: VJP of '{op.name}' produced a cotangent of shape "
                f"{g.shape} for an operand of shape {shape_of(value.type)}",
                op=op,
            )
        previous = self.cotangents.get(value)
        self.cotangents[value] = g if previous is None else previous + g


def grad_with_loss(module: ModuleOp, func_name: str | None = None,
                   wrt: Sequence[str] | None = None, zero_missing_wrt: bool = False,
                   with_loss: bool = True) -> func.FuncOp:
    """Add ``@<f>_grad`` to ``module`` (in place) and return it.

    >>> import rlx_mlir as rlx
    >>> b = rlx.Builder("f"); x = b.param("x", (3,))
    >>> b.ret(b.reduce_sum(x * x, axes=[0]))  # doctest: +SKIP
    """
    f = find_func(module, func_name)
    options = GradOptions(tuple(wrt) if wrt else None, zero_missing_wrt, with_loss)
    name = f.sym_name.data
    check_new_symbol(module, name + options.suffix, f"the gradient of @{name}")
    grad_func = build_grad_func(f, options)
    module.body.block.insert_op_after(grad_func, f)
    simplify(grad_func)
    return grad_func


def check_new_symbol(module: ModuleOp, name: str, what: str) -> None:
    """Refuse to add ``@name`` (``what``, e.g. "the gradient of @f") when the module has it."""
    existing = SymbolTable.lookup_symbol(module, name)
    if existing is not None:
        raise RlxError(f"@{name} already exists in the module; cannot add {what} under that "
                       "name (remove or rename the existing function)", op=existing)


def simplify(op: Operation) -> None:
    """CSE then DCE: the mirror keeps dead forward values and rules recompute some.

    CSE replaces a constant inside an ``rlx.if``/``rlx.while``/``rlx.custom_fn`` region by
    an identical one above it (legal, these ops are not IsolatedFromAbove);
    :func:`keep_regions_closed` re-creates such constants inside the region, so the regions
    a pass builds stay self-contained (the interpreter runs a region from its block
    arguments only)."""
    from xdsl.transforms.common_subexpression_elimination import cse
    from xdsl.transforms.dead_code_elimination import region_dce

    for region in op.regions:
        cse(region)
        keep_regions_closed(region)
        region_dce(region)


# ---------------------------------------------------------------- values captured by regions


def region_captures(regions: Iterable[Region]) -> list[SSAValue]:
    """Values the ops of ``regions`` use without defining them (they are defined above),
    in first-use order."""
    regions = list(regions)
    inner = [o for r in regions for o in r.walk()]
    defined: set[SSAValue] = {v for o in inner for v in o.results}
    for holder in [*regions, *(r for o in inner for r in o.regions)]:
        defined.update(a for block in holder.blocks for a in block.args)
    return list(dict.fromkeys(v for o in inner for v in o.operands if v not in defined))


def values_from_above(op: Operation) -> list[SSAValue]:
    """The values ``op``'s regions capture (use but do not define); [] without regions.

    ``rlx.scan`` is IsolatedFromAbove and never captures; the regions of ``rlx.if``,
    ``rlx.while`` and ``rlx.custom_fn`` may (e.g. after ``--cse``), and every pass maps
    captured values like operands."""
    return region_captures(op.regions) if op.regions else []


def keep_regions_closed(root: Region) -> None:
    """Re-create inside each non-isolated region under ``root`` the constant computations
    (pure ops that depend on no value but constants) it captures from above."""
    for op in [o for o in root.walk() if o.regions]:  # outer regions first
        if op.has_trait(IsolatedFromAbove):
            continue
        for region in op.regions:
            _rematerialize(region, _constant_slice(region_captures([region])))


def _constant_slice(values: Sequence[SSAValue]) -> list[Operation]:
    """The ops computing those of ``values`` that depend on constants only, operands
    first; other values are left out."""
    known: dict[SSAValue, bool] = {}
    order: dict[Operation, None] = {}

    def visit(v: SSAValue) -> bool:
        if v not in known:
            owner = v.owner
            known[v] = (isinstance(owner, Operation) and not owner.regions
                        and is_side_effect_free(owner) and all(visit(x) for x in owner.operands))
            if known[v]:
                order.setdefault(owner)  # type: ignore[arg-type]
        return known[v]

    for v in values:
        visit(v)
    return list(order)


def _rematerialize(region: Region, ops: Sequence[Operation]) -> None:
    """Clone ``ops`` at the start of ``region`` and make the region use the clones."""
    if not ops:
        return
    block = region.blocks[0]
    mapper: dict[SSAValue, SSAValue] = {}
    anchor = block.first_op
    for op in ops:
        clone = op.clone(value_mapper=mapper)
        if anchor is None:
            block.add_op(clone)
        else:
            block.insert_op_before(clone, anchor)
    for old, new in mapper.items():
        for use in list(old.uses):
            if region.is_ancestor(use.operation):
                use.operation.operands[use.index] = new


def discard_block(block: Block) -> None:
    """Erase a scratch block's ops (they may use values defined elsewhere)."""
    for op in reversed(list(block.ops)):
        block.detach_op(op)
        op.erase(safe_erase=False)


def remapped(op: Operation, mapping: Mapping[SSAValue, SSAValue]) -> Operation:
    """``op`` itself, or when its regions capture values that ``mapping`` renames, a
    detached copy whose regions use the renamed values (erase it after use)."""
    if not any(v in mapping for v in values_from_above(op)):
        return op
    return op.clone(value_mapper=ChainMap({}, mapping))  # type: ignore[arg-type]


def default_wrt(f: func.FuncOp) -> list[int]:
    """The ``rlx.param`` arguments, or every float argument when none is marked."""
    attrs = arg_attr_dicts(f)
    params = [i for i, a in enumerate(attrs) if "rlx.param" in a]
    if params:
        for i in params:
            _check_float_wrt(f, i)
        return params
    return [i for i, t in enumerate(f.function_type.inputs.data) if is_differentiable_type(t)]


def resolve_wrt(f: func.FuncOp, wrt: Sequence[str] | None) -> list[int]:
    if wrt is None:
        return default_wrt(f)
    from rlx_mlir.runtime.signature import argument_named

    names = arg_names(f)
    indices = []
    for name in wrt:
        i = argument_named(f, name, "differentiate")
        if i is None:
            raise RlxError(
                f"@{f.sym_name.data} has no argument '{name}' to differentiate "
                f"(arguments: {', '.join(names)})", op=f)
        if i in indices:
            raise RlxError(f"wrt lists '{name}' more than once", op=f)
        _check_float_wrt(f, i)
        indices.append(i)
    return indices


def _check_float_wrt(f: func.FuncOp, i: int) -> None:
    t = f.function_type.inputs.data[i]
    if not is_differentiable_type(t):
        raise RlxError(f"cannot differentiate with respect to '{arg_names(f)[i]}': it has "
                       f"non-float type {t}", op=f)


def build_grad_func(f: func.FuncOp, options: GradOptions) -> func.FuncOp:
    """The gradient function of ``f`` (not yet inserted in a module)."""
    name = f.sym_name.data
    outputs = list(f.function_type.outputs.data)
    wrt = resolve_wrt(f, options.wrt)
    if not outputs:
        raise RlxError(f"@{name} has no result to differentiate", op=f)
    # A loss is real; a VJP region (a scan body's, no loss returned) may pull back a
    # complex cotangent.
    allowed = (*REAL_FLOAT_DTYPES, *(() if options.with_loss else COMPLEX_DTYPES))
    if not (isinstance(outputs[0], TensorType) and dtype_of(outputs[0]) in allowed):
        raise RlxError(f"the loss (result 0 of @{name}) must be a float tensor (f32, "
                       f"f64, f16 or bf16: as in jax.grad, complex values inside are differentiable, a "
                       f"complex loss is not), got {outputs[0]}", op=f)
    inputs = list(f.function_type.inputs.data)
    block = Block(arg_types=[*inputs, outputs[0]])
    for new, old in zip(block.args, f.body.block.args, strict=False):
        new.name_hint = old.name_hint
    seed = fresh_name("d_output", set(arg_names(f)))
    block.args[-1].name_hint = seed
    mirror = _mirror_body(f, block)
    returned = mirror.pop()
    builder = Builder.appending_to(block, f.location)
    walk = _Walk(VjpContext(builder, _active_values(block, [block.args[i] for i in wrt])))
    walk.cotangents[returned[0]] = builder.wrap(block.args[-1])
    _reverse_walk(walk, [op for op in block.ops])
    grads = [_grad_of(walk, f, block.args[i], i, options) for i in wrt]
    results = ([returned[0]] if options.with_loss else []) + list(returned[1:])
    results += [g.value for g in grads]
    block.add_op(func.ReturnOp(*results))
    attrs = arg_attr_dicts(f) + [{"rlx.name": StringAttr(seed)}]
    grad_func = func.FuncOp(
        name + options.suffix,
        ([*inputs, outputs[0]], [v.type for v in results]),
        Region(block),
        arg_attrs=ArrayAttr([DictionaryAttr(a) for a in attrs]),
    )
    grad_func.attributes["rlx.grad_of"] = StringAttr(name)
    grad_func.attributes["rlx.wrt"] = ArrayAttr([StringAttr(arg_names(f)[i]) for i in wrt])
    grad_func.location = f.location
    return grad_func


def _active_values(block: Block, wrt: Sequence[SSAValue]) -> frozenset[SSAValue]:
    """The values of ``block`` that depend on ``wrt`` (through operands or captures)."""
    active = set(wrt)
    for op in block.ops:
        if any(v in active for v in [*op.operands, *values_from_above(op)]):
            active.update(op.results)
    return frozenset(active)


def _mirror_body(f: func.FuncOp, block: Block) -> list[list[SSAValue]]:
    """Mirror ``f``'s body into ``block``, prepared for AD; returns ``[returned values]``."""
    builder = Builder.appending_to(block, f.location)
    args = [builder.wrap(a) for a in block.args[: len(f.body.block.args)]]
    return [[t.value for t in mirror_prepared(builder, f.body.block, args)]]


def mirror_prepared(builder: Builder, source: Block, args: Sequence[Tensor],
                    prepare: bool = True,
                    renames: Mapping[SSAValue, SSAValue] | None = None) -> list[Tensor]:
    """Copy ``source``'s ops after ``builder``'s block with its arguments bound to ``args``,
    applying the PREPARE_AD rewrites (SPEC 4.4) unless ``prepare`` is False; returns the
    terminator's operands.

    Values ``source`` captures from above stay as they are unless ``renames`` maps them."""
    mapping: dict[SSAValue, SSAValue] = dict(renames or {})
    mapping.update({old: new.value for old, new in zip(source.args, args, strict=True)})
    for op in source.ops:
        if op is source.last_op and op.name in ("func.return", "rlx.yield"):
            return [builder.wrap(mapping.get(v, v)) for v in op.operands]
        rewrite = PREPARE_AD.get(type(op)) if prepare else None
        if rewrite is None:
            clone = op.clone(value_mapper=mapping)
            builder.block.add_op(clone)
            continue
        builder.location = op.location
        results = _apply_rewrite(builder, op, mapping, rewrite)
        mapping.update({old: new.value for old, new in zip(op.results, results, strict=True)})
    return []


def _apply_rewrite(builder: Builder, op: Operation, mapping: Mapping[SSAValue, SSAValue],
                   rewrite: Callable[..., list[Tensor]]) -> list[Tensor]:
    """Run a PREPARE_AD rule on ``op`` with its operands (and captured values) mirrored."""
    operands = [builder.wrap(mapping.get(v, v)) for v in op.operands]
    local = remapped(op, mapping)
    try:
        return rewrite(builder, local, operands)
    finally:
        if local is not op:
            local.erase(safe_erase=False)


def _reverse_walk(walk: _Walk, ops: list[Operation]) -> None:
    for op in reversed(ops):
        gs = [walk.cotangents.get(r) for r in op.results]
        if all(g is None for g in gs):
            continue
        if not any(is_differentiable_type(v.type) for v in op.operands):
            continue
        rule = VJP.lookup(op)
        gs = [g if g is not None else walk.ctx.zeros(shape_of(r.type), dtype_of(r.type))
              for g, r in zip(gs, op.results, strict=True)]
        walk.ctx.b.location = op.location
        contributions = rule(walk.ctx, op, *gs)
        for operand, g in zip(op.operands, contributions, strict=True):
            if g is not None:
                walk.add(operand, g, op)


def vjp_block(builder: Builder, source: Block, primals: Sequence[Tensor],
              cotangents: Sequence[Tensor | None]) -> list[Tensor | None]:
    """Reverse mode through ``source`` at ``primals``, emitted after the builder's block:
    the block's ops (prepared for AD), then their VJPs seeded with one cotangent per
    result (None = zero). Returns one cotangent per primal (None: none reaches it; a
    value passed twice gets its total once). How a VJP rule differentiates an op through
    a decomposition into ops that have rules.

    >>> fn = b.region([x.type], lambda fb, x: fb.tanh(x))        # doctest: +SKIP
    >>> (dx,) = vjp_block(b, fn.block, [x], [g])                  # g * (1 - tanh(x)^2)
    """
    mark = builder.block.last_op
    outputs = mirror_prepared(builder, source, primals)
    emitted = list(builder.block.ops)
    if mark is not None:
        emitted = emitted[emitted.index(mark) + 1:]
    values = [p.value for p in primals]
    active = set(values)
    for op in emitted:
        if any(v in active for v in [*op.operands, *values_from_above(op)]):
            active.update(op.results)
    walk = _Walk(VjpContext(builder, frozenset(active)))
    for out, g in zip(outputs, cotangents, strict=True):
        if g is not None:
            walk.add(out.value, g, source.last_op)
    _reverse_walk(walk, emitted)
    return [walk.cotangents.get(v) if v not in values[:i] else None
            for i, v in enumerate(values)]


def _grad_of(walk: _Walk, f: func.FuncOp, arg: SSAValue, index: int,
             options: GradOptions) -> Tensor:
    g = walk.cotangents.get(arg)
    if g is not None:
        return g
    name = arg_names(f)[index]
    if not options.zero_missing_wrt:
        raise RlxError(
            f"no gradient reaches '{name}': the loss of @{f.sym_name.data} does not depend on "
            f"it, or only through operands that get no gradient by definition (e.g. "
            f"batch_norm_inference's mean and variance, rope's cos and sin); leave it out of "
            f"wrt, or use zero-missing-wrt=true to get zeros", op=f)
    return walk.ctx.zeros(shape_of(arg.type), dtype_of(arg.type))


DERIVED_MARKS = ("rlx.grad_of", "rlx.jvp_of")
"""Attributes of the derived functions ``--autodiff`` leaves out unless named: ``@f_grad``
and ``@f_jvp`` (whose first result, the primal, gets no gradient from the tangents). A
``@f_vmap`` is differentiated like ``@f``."""


def differentiable_funcs(module: ModuleOp, func_name: str | None) -> list[func.FuncOp]:
    """DESIGN 4.2's default: every public function with ``rlx.param`` arguments, else all;
    functions without results, gradients and JVPs (``--jvp --autodiff`` differentiates
    ``@f``, not ``@f_jvp``) only when named."""
    funcs = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if func_name is not None:
        return [find_func(module, func_name)]
    public = [f for f in funcs if (f.sym_visibility is None or f.sym_visibility.data == "public")
              and f.function_type.outputs.data
              and not any(mark in f.attributes for mark in DERIVED_MARKS)]
    with_params = [f for f in public if any("rlx.param" in a for a in arg_attr_dicts(f))]
    return with_params or public


@register_pass
@dataclass(frozen=True)
class AutodiffPass(ModulePass):
    """``--autodiff``: add ``@f_grad`` for each differentiated function.

    Options: ``func`` (default: public functions with params, else all public ones with a
    result, not the ``@f_grad`` and ``@f_jvp`` other passes derived),
    ``wrt`` (argument names; default the params), ``zero-missing-wrt``,
    ``grad-only`` (drop the loss from the results, like RLX's ``grad``).
    """

    name = "autodiff"
    func: str | None = None
    wrt: tuple[str, ...] | None = None
    zero_missing_wrt: bool = False
    grad_only: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in differentiable_funcs(op, self.func):
            grad_with_loss(op, f.sym_name.data, self.wrt, self.zero_missing_wrt,
                           with_loss=not self.grad_only)


def _check_grads_stage(stage: str, module: ModuleOp, args) -> str:
    """``rlx-opt --check-grads``: check each gradient function of the module (``rlx.grad_of``)
    against finite differences of its function; without one, check what ``--autodiff``
    would emit for each differentiable function. A gradient that is off is an error."""
    from rlx_mlir.testing import check_grads

    grads = [f for f in module.body.block.ops
             if isinstance(f, func.FuncOp) and "rlx.grad_of" in f.attributes]
    if grads:
        checks = [(g, check_grads(module, grad=g.sym_name.data, raise_on_error=False))
                  for g in grads]
    else:
        checks = [(f, check_grads(module, f.sym_name.data, raise_on_error=False))
                  for f in differentiable_funcs(module, None)]
    text = "\n".join(str(r) for _, r in checks)
    failed = [op for op, r in checks if not r.ok]
    if failed:
        names = ", ".join(f"@{op.sym_name.data}" for op in failed)
        raise RlxError(f"gradient check failed ({names}):\n{text}", op=failed[0])
    return text + "\n"


STAGE_HOOKS["check-grads"] = _check_grads_stage

