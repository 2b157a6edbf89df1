"""Contractions as named matmuls: the ``contractions`` stage of the fast pipeline.

Elementwise fusion folds reshapes, transposes and elementwise producers into their
consumers, so a ``[B, S, K] @ [K, N]`` matmul (lowered as a ``linalg.matmul`` on folded
rows) leaves ``linalg-fuse-elementwise-ops`` as a 4-d ``linalg.generic``, and attention's
head-grouped contractions are generics whose bodies also compute, e.g., the softmax
normalisation. The schedules only know ``linalg.matmul`` / ``linalg.batch_matmul``, so
every generic whose body is ``yield acc + x * y`` is rewritten here::

    x -> [batch, M, K] -> collapse to [Bt, Mt, Kt]     (a transpose, or a generic
    y -> [batch, K, N] -> collapse to [Bt, Kt, Nt]      computing the fused factor)
    linalg.(batch_)matmul -> expand -> transpose back to the generic's output layout

Batch dims are in x, y and the output; M dims in x and the output; N dims in y and the
output; K dims (reductions) in x and y. Identity transposes are not emitted and the
collapses are views, so rows of a shared-weight matmul cost no copy; the copies that
remain move O(n^2) data for an O(n^3) product.

Example (``[8, 256, 256] @ [256, 1024]``)::

    %a = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x256x256xf32> into tensor<2048x256xf32>
    %m = linalg.matmul ins(%a, %w : ...) outs(%zeros : tensor<2048x1024xf32>)
    %y = tensor.expand_shape %m [[0, 1], [2]] ...
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

CONTRACTION_VERSION = "contract-v12"


@dataclass(frozen=True)
class Factor:
    """One factor of the product: its body value, the inputs it reads, the body ops that
    compute it (none: it is an input itself) and its loop dims (its inputs' union)."""

    value: Any
    inputs: list[int]
    ops: list[Any]
    dims: list[int]


@dataclass(frozen=True)
class Contraction:
    """Dimension classes of an ``acc + x * y`` generic (loop positions, ordered)."""

    batch: list[int]
    m: list[int]
    n: list[int]
    k: list[int]
    sizes: list[int]
    x: Factor
    y: Factor
    out_dims: list[int]
    nested: bool = False  # inside a loop (attention's per-head tiles): unpacked, in cache

    def x_order(self) -> list[int]:
        return self.batch + self.m + self.k

    def x_transposed_order(self) -> list[int]:
        return self.batch + self.k + self.m

    def reads_x_transposed(self, maps: list[list[int]]) -> bool:
        """Whether ``x`` is an input laid out ``[K, M]``: a plain matmul then reads it
        through a transposed map (its packed schedule copies A panels anyway), so no
        transpose is materialised. Not for batch matmuls, nor for ``y`` (a ``[N, K]`` B
        would be read across its rows by the micro kernel). At the top level only when
        ``M <= N`` or ``K`` is short (:func:`transposed_a_pays`): the packing reads 4 columns
        of A^T per panel, which an N of 4 panels per thread does not repay when A^T's rows
        are long (``2048x1024^T @ 2048x256``: 190 GFLOP/s against 220 for the other factor
        order, whose result is transposed back).
        Nested products are not packed (``schedules.NESTED_UNPACKED_MAX``): always."""
        if self.batched() or self.x.ops:
            return False
        if not self.nested and not transposed_a_pays(
                _prod(self._sizes(self.m)), _prod(self._sizes(self.n)), _prod(self._sizes(self.k))):
            return False
        have = maps[self.x.inputs[0]]
        return (self._real(have) == self._real(self.x_transposed_order())
                != self._real(self.x_order()))

    def _sizes(self, dims: list[int]) -> list[int]:
        return [self.sizes[d] for d in dims]

    def _real(self, dims: list[int]) -> list[int]:
        return [d for d in dims if self.sizes[d] != 1]

    def y_order(self) -> list[int]:
        return self.batch + self.k + self.n

    def out_order(self) -> list[int]:
        return self.batch + self.m + self.n

    def copied_elements(self, maps: list[list[int]], zero_init: bool) -> int:
        """Elements the rewrite transposes: input factors not already in matmul order, and
        the result (and a non-fill init) when the output is not in ``[batch, M, N]`` order.
        :func:`analyze` picks the factor order that copies least (weight gradients
        ``x^T dy``: transpose ``x``, not ``dy`` and then the result)."""
        def moved(have: list[int], want: list[int]) -> int:
            return 0 if self._real(have) == self._real(want) else _prod(
                [self.sizes[d] for d in want])

        x_order = self.x_transposed_order() if self.reads_x_transposed(maps) else self.x_order()
        copied = sum(moved(maps[f.inputs[0]], order)
                     for f, order in ((self.x, x_order), (self.y, self.y_order()))
                     if not f.ops)
        out = moved(self.out_dims, self.out_order())
        return copied + out * (1 if zero_init else 2)

    def batched(self) -> bool:
        """Whether the product is a batch_matmul: unit batch dims (a convolution's single
        group) fold into the first group instead, for the packed matmul schedule."""
        return any(self.sizes[d] != 1 for d in self.batch)

    def group_lengths(self, *groups: list[int]) -> list[int]:
        """Collapse lengths of ``batch + groups[0] + ...`` into ([batch,] first, rest...)."""
        lengths = [len(g) for g in groups]
        if self.batched():
            return [len(self.batch), *lengths]
        return [len(self.batch) + lengths[0], *lengths[1:]]


# ---------------------------------------------------------------- analysis


def _map_dims(amap: Any) -> list[int] | None:
    """Loop positions of a projected-permutation map's results (None otherwise)."""
    from mlir import ir

    dims = []
    for expr in amap.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(ir.AffineDimExpr(expr).position)
    return dims if len(set(dims)) == len(dims) else None


def _body(op: Any) -> Any:
    return op.regions[0].blocks[0]


def _mul_add_factors(op: Any) -> tuple[Any, Any] | None:
    """``(x, y)`` when the body is ``yield acc + x * y`` (float, either order)."""
    block = _body(op)
    ops = list(block.operations)
    acc = block.arguments[len(block.arguments) - 1]
    add = ops[-1].operands[0].owner if ops[-1].operands else None
    if getattr(add, "name", "") != "arith.addf" or acc not in list(add.operands):
        return None
    product = add.operands[1] if add.operands[0] == acc else add.operands[0]
    mul = product.owner
    if getattr(mul, "name", "") != "arith.mulf" or len(list(product.uses)) != 1:
        return None
    return mul.operands[0], mul.operands[1]


def _factor(op: Any, value: Any, maps: list[list[int]]) -> Factor | None:
    """The body slice computing ``value`` (None if it reads the accumulator, a loop index
    or a nested region)."""
    from mlir import ir

    block = _body(op)
    acc_number = len(block.arguments) - 1
    inputs: set[int] = set()
    ops: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, ir.BlockArgument) and v.owner != block:
            continue  # captured from outside the generic: still visible where it is
        if isinstance(v, ir.BlockArgument):
            if v.arg_number == acc_number:
                return None
            inputs.add(v.arg_number)
            continue
        owner = getattr(v.owner, "operation", v.owner)
        if owner.block != block:
            continue  # captured from outside the generic: still visible where it is
        if owner.name == "linalg.index" or len(owner.regions):
            return None
        if owner not in ops:
            ops.append(owner)
            stack.extend(owner.operands)
    body_ops = [o.operation for o in block.operations]
    ops.sort(key=body_ops.index)
    return Factor(value, sorted(inputs), ops, sorted({d for i in inputs for d in maps[i]}))


def _loop_sizes(op: Any, count: int, dims: list[list[int] | None]) -> list[int] | None:
    from mlir import ir

    sizes: list[int | None] = [None] * count
    for value, ds in zip(op.operands, dims, strict=True):
        if ds is None:  # an operand the body no longer reads (see _used_operands)
            continue
        for d, size in zip(ds, ir.RankedTensorType(value.type).shape, strict=True):
            if sizes[d] not in (None, size):
                return None
            sizes[d] = size
    return None if any(s is None for s in sizes) else sizes  # type: ignore[return-value]


def _is_static_tensor_op(op: Any) -> bool:
    from mlir import ir

    return (op.name == "linalg.generic" and len(op.results) == 1 and len(op.operands) >= 3
            and all(isinstance(v.type, ir.RankedTensorType)
                    and ir.RankedTensorType(v.type).has_static_shape for v in op.operands))


def analyze(op: Any) -> Contraction | None:
    """The contraction structure of a ``linalg.generic`` (None if it is not one)."""
    from mlir import ir

    if not _is_static_tensor_op(op) or (factors := _mul_add_factors(op)) is None:
        return None
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    used = _used_operands(op)
    dims = [_map_dims(m) if i in used else None for i, m in enumerate(maps)]
    if any(dims[i] is None for i in used):
        return None
    x, y = (_factor(op, f, dims) for f in factors)  # type: ignore[arg-type]
    sizes = _loop_sizes(op, maps[0].n_dims, dims)  # type: ignore[arg-type]
    if x is None or y is None or set(x.inputs) & set(y.inputs) or sizes is None:
        return None
    out_dims: list[int] = dims[-1]  # type: ignore[assignment]
    nested = op.parent.name != "func.func"
    options = [replace(c, nested=nested) for c in
               (_classify(x, y, sizes, out_dims), _classify(y, x, sizes, out_dims)) if c is not None]
    return min(options, key=lambda c: c.copied_elements(dims, _init_is_fill(op)), default=None)


def _used_operands(op: Any) -> set[int]:
    """Operands the body reads (an input whose value :func:`capture_scalar_inputs` replaced
    is still an operand, but no longer part of the product), and the init."""
    args = _body(op).arguments
    return {i for i in range(len(args)) if i == len(args) - 1 or list(args[i].uses)}


def capture_scalar_inputs(op: Any) -> int:
    """Read each one-element input broadcast to every point (``(d0, ...) -> (0, ...)``, e.g.
    the seed ``d_output`` fused into a weight gradient ``x^T (d_output * g)``) as a scalar
    extracted before the generic, so :func:`analyze` sees ``acc + x * (s * g)``: a
    contraction with a computed factor, not a generic it cannot classify (which ran as a
    reduction loop at under 1 GFLOP/s). Returns how many inputs were captured."""
    from mlir import ir
    from mlir.dialects import arith, tensor

    args = _body(op).arguments
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    captured = 0
    for i in range(len(args) - 1):
        value = op.operands[i]
        shape = list(ir.RankedTensorType(value.type).shape)
        if any(n != 1 for n in shape) or not _all_zero(maps[i]) or not list(args[i].uses):
            continue
        with _insertion_before(op):
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            scalar = tensor.ExtractOp(value, [zero] * len(shape)).result
        args[i].replace_all_uses_with(scalar)
        captured += 1
    return captured


def drop_broadcast_unit_dims(op: Any) -> int:
    """Read each input whose map indexes some unit dims with the constant 0 (``x * r`` with
    ``r`` [B, S, 1] fused into ``(x * r) @ w``: ``(d0, d1, d2, d3) -> (d0, d1, 0)``) through
    a collapse that drops those dims, so every map result is a loop dim again and
    :func:`analyze` can classify the product (unclassified, that matmul ran as a reduction
    loop: 308 ms for ``[8, 256, 256] @ [256, 512]``). Returns how many inputs changed."""
    from mlir import ir

    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    changed = 0
    for i in range(len(maps) - 1):
        shape = list(ir.RankedTensorType(op.operands[i].type).shape)
        results = list(maps[i].results)
        dropped = [p for p, e in enumerate(results) if _is_zero(e) and shape[p] == 1]
        if not dropped or len(dropped) == len(results):  # all-zero inputs: capture_scalar_inputs
            continue
        with _insertion_before(op):
            op.operands[i] = _collapsed(op.operands[i], _lengths_dropping(len(shape), dropped))
        maps[i] = ir.AffineMap.get(maps[i].n_dims, maps[i].n_symbols,
                                   [e for p, e in enumerate(results) if p not in dropped])
        changed += 1
    if changed:
        op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    return changed


def _lengths_dropping(rank: int, dropped: list[int]) -> list[int]:
    """Collapse group lengths that fold each dropped unit dim into the kept dim before it
    (leading ones into the first kept dim): rank 3 dropping [2] -> [1, 2]."""
    kept = [p for p in range(rank) if p not in dropped]
    starts, ends = [0, *kept[1:]], [*kept[1:], rank]
    return [end - start for start, end in zip(starts, ends, strict=True)]


def _is_zero(expr: Any) -> bool:
    from mlir import ir

    return isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0


def _all_zero(amap: Any) -> bool:
    return all(_is_zero(e) for e in amap.results)


def _classify(x: Factor, y: Factor, sizes: list[int], out_dims: list[int]) -> Contraction | None:
    """The contraction with ``x`` as the left factor (its M dims come first in the output)."""
    sx, sy, so = set(x.dims), set(y.dims), set(out_dims)
    batch = [d for d in out_dims if d in sx and d in sy]
    m = [d for d in out_dims if d in sx and d not in sy]
    n = [d for d in out_dims if d in sy and d not in sx]
    k = [d for d in x.dims if d in sy and d not in so]
    if not (m and n and k) or len(batch) + len(m) + len(n) + len(k) != len(sizes):
        return None
    return Contraction(batch, m, n, k, sizes, x, y, out_dims)


def _init_is_fill(op: Any) -> bool:
    init = op.operands[len(op.operands) - 1]
    return getattr(getattr(init.owner, "operation", init.owner), "name", "") == "linalg.fill"


# ---------------------------------------------------------------- the rewrite


def _prod(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _value(built: Any) -> Any:
    """The result of a builder helper that returns either a value or an op."""
    return built.results[0] if hasattr(built, "results") else built


def _element_type(value: Any) -> Any:
    from mlir import ir

    return ir.RankedTensorType(value.type).element_type


def _transposed(value: Any, have: list[int], want: list[int], sizes: list[int]) -> Any:
    """``value`` (dims ``have``) permuted into the order ``want`` (itself if equal)."""
    from mlir.dialects import tensor

    from rlx_mlir.lowering import linalg_builders as linalg

    if have == want:
        return value
    moved = [d for d in have if sizes[d] != 1]
    if moved and moved == [d for d in want if sizes[d] != 1]:  # only unit dims move: a view
        collapsed = _collapsed(value, _unit_groups([sizes[d] for d in have]))
        return _expanded(collapsed, _unit_groups([sizes[d] for d in want]),
                         [sizes[d] for d in want])
    init = tensor.EmptyOp([sizes[d] for d in want], _element_type(value)).result
    return _value(linalg.transpose(value, outs=[init],
                                   permutation=[have.index(d) for d in want]))


def _unit_groups(shape: list[int]) -> list[int]:
    """Lengths of consecutive dim groups holding one non-unit dim each (unit dims join the
    group of the non-unit dim before them; leading ones the first group)."""
    anchors = [i for i, n in enumerate(shape) if n != 1]
    ends = [*anchors[1:], len(shape)]
    starts = [0, *anchors[1:]]
    return [end - start for start, end in zip(starts, ends, strict=True)]


def _reassociation(lengths: list[int]) -> tuple[Any, list[list[int]]]:
    from mlir import ir

    groups, start = [], 0
    for n in lengths:
        groups.append(list(range(start, start + n)))
        start += n
    i64 = ir.IntegerType.get_signless(64)
    attr = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                             for g in groups])
    return attr, groups


def _collapsed(value: Any, lengths: list[int]) -> Any:
    """Consecutive dim groups of the given lengths collapsed (a view after bufferization)."""
    from mlir import ir
    from mlir.dialects import tensor

    attr, groups = _reassociation(lengths)
    if all(len(g) == 1 for g in groups):
        return value
    shape = list(ir.RankedTensorType(value.type).shape)
    out = ir.RankedTensorType.get([_prod([shape[i] for i in g]) for g in groups],
                                  _element_type(value))
    return tensor.CollapseShapeOp(out, value, attr).result


def _expanded(value: Any, lengths: list[int], shape: list[int]) -> Any:
    from mlir import ir
    from mlir.dialects import tensor

    attr, groups = _reassociation(lengths)
    if all(len(g) == 1 for g in groups):
        return value
    out = ir.RankedTensorType.get(shape, _element_type(value))
    return tensor.ExpandShapeOp(out, value, attr, [], shape).result


def _identity_map(n: int, dims: list[int]) -> Any:
    from mlir import ir

    return ir.AffineMapAttr.get(ir.AffineMap.get(n, 0, [ir.AffineExpr.get_dim(d) for d in dims]))


def _materialized(op: Any, c: Contraction, f: Factor, order: list[int]) -> Any:
    """The factor as a tensor with dims ``order``: the input itself (transposed) when the
    factor is an input, else a parallel generic replaying its body slice."""
    from mlir import ir
    from mlir.dialects import tensor

    from rlx_mlir.lowering import linalg_builders as linalg

    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not f.ops:
        (i,) = f.inputs
        return _transposed(op.operands[i], _map_dims(maps[i]), order, c.sizes)  # type: ignore[arg-type]
    inputs = [op.operands[i] for i in f.inputs]
    etype = f.value.type
    init = tensor.EmptyOp([c.sizes[d] for d in order], etype).result
    local = {d: j for j, d in enumerate(order)}
    in_maps = [_identity_map(len(order), [local[d] for d in _map_dims(maps[i])])  # type: ignore[union-attr]
               for i in f.inputs]
    out_map = _identity_map(len(order), list(range(len(order))))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = linalg.GenericOp([init.type], inputs, [init], ir.ArrayAttr.get([*in_maps, out_map]),
                               ir.ArrayAttr.get([parallel] * len(order)))
    block = generic.regions[0].blocks.append(*[_element_type(v) for v in inputs], etype)
    old_args = _body(op).arguments
    mapping = {old_args[i]: block.arguments[j] for j, i in enumerate(f.inputs)}
    replay_ops(f.ops, block, mapping)
    with ir.InsertionPoint(block):
        linalg.YieldOp([mapping[f.value]])
    return generic.results[0]


def replay_ops(ops: Any, block: Any, mapping: dict) -> dict:
    """Clone ``ops`` (upstream bindings) at the end of ``block``, their operands renamed by
    ``mapping``, which gains each old result -> its clone; returns ``mapping``."""
    from mlir import ir

    with ir.InsertionPoint(block):
        for old in ops:
            new = old.clone().operation
            for before, after in mapping.items():
                new.replace_uses_of_with(before, after)
            for r_old, r_new in zip(old.results, new.results, strict=True):
                mapping[r_old] = r_new
    return mapping


def _initial(op: Any, c: Contraction, lengths: list[int]) -> Any:
    """The accumulator in [batch, M, N] order, collapsed: a fresh fill when the generic's
    init is a fill (the usual zeros), else the init transposed."""
    from mlir.dialects import tensor

    from rlx_mlir.lowering import linalg_builders as linalg

    init = op.operands[len(op.operands) - 1]
    producer = getattr(init.owner, "operation", init.owner)
    if getattr(producer, "name", "") == "linalg.fill":
        shape = [_prod([c.sizes[d] for d in g]) for g in ([c.batch] if c.batched() else [])
                 + [c.m, c.n]]
        empty = tensor.EmptyOp(shape, _element_type(init)).result
        return _value(linalg.fill(producer.operands[0], outs=[empty]))
    return _collapsed(_transposed(init, c.out_dims, c.out_order(), c.sizes), lengths)


TRANSPOSED_A_MAX_K = 512
"""Up to this K a top-level product reads a ``[K, M]`` A through the transposed map even
when ``M > N`` (short A^T panels pack fast: the MLP's ``x^T @ dh`` with K = 256, step -1.6%);
beyond it only when ``M <= N`` (``2048x1024^T @ 2048x256``: 190 GFLOP/s against 220)."""


def transposed_a_pays(m: int, n: int, k: int) -> bool:
    """Whether a top-level ``A^T B`` should read A^T in place (see ``reads_x_transposed``)."""
    return m <= n or k <= TRANSPOSED_A_MAX_K


def transposed_a_maps() -> list[Any]:
    """``linalg.matmul`` maps reading A as ``[K, M]``: ``C[m, n] += A[k, m] * B[k, n]``."""
    from mlir import ir

    m, n, k = (ir.AffineExpr.get_dim(i) for i in range(3))
    return [ir.AffineMap.get(3, 0, [k, m]), ir.AffineMap.get(3, 0, [k, n]),
            ir.AffineMap.get(3, 0, [m, n])]


def rewrite(op: Any, c: Contraction) -> None:
    """Replace the generic ``op`` by its factors, a named (batch_)matmul and a transpose."""
    from mlir import ir

    from rlx_mlir.lowering import linalg_builders as linalg

    maps = [_map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    x_transposed = c.reads_x_transposed(maps)  # type: ignore[arg-type]
    with ir.InsertionPoint(op), op.location:
        if x_transposed:
            x = _collapsed(_materialized(op, c, c.x, c.x_transposed_order()),
                           c.group_lengths(c.k, c.m))
        else:
            x = _collapsed(_materialized(op, c, c.x, c.x_order()), c.group_lengths(c.m, c.k))
        y = _collapsed(_materialized(op, c, c.y, c.y_order()), c.group_lengths(c.k, c.n))
        out_lengths = c.group_lengths(c.m, c.n)
        acc = _initial(op, c, out_lengths)
        extra = {"indexing_maps": transposed_a_maps()} if x_transposed else {}
        if unbatched_pays(c, op):
            product = _per_batch_matmuls(x, y, acc, extra)
        else:
            named = linalg.batch_matmul if c.batched() else linalg.matmul
            product = _value(named(x, y, outs=[acc], **extra))
        shape = [c.sizes[d] for d in c.out_order()]
        result = _transposed(_expanded(product, out_lengths, shape), c.out_order(),
                             c.out_dims, c.sizes)
    op.results[0].replace_all_uses_with(result)
    op.erase()


UNBATCH_MAX_BATCH = 4
"""A top-level batch_matmul of at most this many big products runs as that many
``linalg.matmul`` (each gets the packed, threaded schedule, which batch_matmul has not): a
conv with 2 groups of 32 channels (``32x64x56x56``, 3x3) spent 68 ms in its two
``[32, 288] @ [288, 100352]`` products, torch 12."""
UNBATCH_MIN_FLOPS = 1 << 24


def unbatched_pays(c: Contraction, op: Any) -> bool:
    """Whether the batched product ``c`` of ``op`` runs faster as separate matmuls."""
    if not c.batched() or c.nested or op.parent.name != "func.func":
        return False
    batch, m, n, k = (_prod([c.sizes[d] for d in g]) for g in (c.batch, c.m, c.n, c.k))
    return batch <= UNBATCH_MAX_BATCH and 2 * m * n * k >= UNBATCH_MIN_FLOPS


def _per_batch_matmuls(x: Any, y: Any, acc: Any, extra: dict[str, Any]) -> Any:
    """``batch_matmul(x, y, acc)`` as one ``linalg.matmul`` per batch entry, on
    rank-reducing slices, inserted back into ``acc``."""
    from mlir import ir

    from rlx_mlir.lowering import linalg_builders as linalg

    batch = ir.RankedTensorType(acc.type).shape[0]
    result = acc
    for b in range(batch):
        product = _value(linalg.matmul(_batch_entry(x, b), _batch_entry(y, b),
                                       outs=[_batch_entry(acc, b)], **extra))
        result = _insert_batch_entry(product, result, b)
    return result


def _slice_attrs(shape: list[int], b: int) -> tuple[Any, Any, Any]:
    from mlir import ir

    return (ir.DenseI64ArrayAttr.get([b] + [0] * (len(shape) - 1)),
            ir.DenseI64ArrayAttr.get([1, *shape[1:]]),
            ir.DenseI64ArrayAttr.get([1] * len(shape)))


def _batch_entry(value: Any, b: int) -> Any:
    """``value[b]`` of a ``[B, ...]`` tensor (rank-reducing ``tensor.extract_slice``)."""
    from mlir import ir
    from mlir.dialects._tensor_ops_gen import ExtractSliceOp

    t = ir.RankedTensorType(value.type)
    shape = list(t.shape)
    result = ir.RankedTensorType.get(shape[1:], t.element_type)
    return ExtractSliceOp(result, value, [], [], [], *_slice_attrs(shape, b)).result


def _insert_batch_entry(entry: Any, into: Any, b: int) -> Any:
    """``into`` with ``into[b] = entry`` (``tensor.insert_slice``)."""
    from mlir import ir
    from mlir.dialects._tensor_ops_gen import InsertSliceOp

    shape = list(ir.RankedTensorType(into.type).shape)
    return InsertSliceOp(entry, into, [], [], [], *_slice_attrs(shape, b)).result


def enabled() -> bool:
    """False under ``RLX_NO_CONTRACTIONS=1`` (debugging: keep the generics)."""
    import os

    return not os.environ.get("RLX_NO_CONTRACTIONS")


def apply_contractions(module: Any) -> int:
    """The ``contractions`` stage: rewrite every contraction generic; returns how many."""
    from mlir import ir

    from rlx_mlir.lowering.broadcast_reductions import split_broadcast_reductions
    from rlx_mlir.lowering.skinny_decode import fuse_decodes_into_skinny_matmuls

    if not enabled():
        return 0
    generalize_skinny_transposed_matmuls(module)
    found = []

    matmuls = []

    def visit(o: Any) -> Any:
        o = getattr(o, "operation", o)
        if o.name == "linalg.generic" and _is_static_tensor_op(o) and _mul_add_factors(o):
            fold_transposed_inputs(o)
            capture_scalar_inputs(o)
            drop_broadcast_unit_dims(o)
        if o.name == "linalg.generic" and (c := analyze(o)) is not None:
            found.append((o, c))
        if o.name == "linalg.matmul" and _transposed_lhs(o) is not None:
            matmuls.append(o)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for o, c in found:
        if not stays_a_row_reduction(o, c):
            rewrite(o, c)
    for o in matmuls:
        read_lhs_transposed(o)
    return (len(found) + len(matmuls) + fuse_decodes_into_skinny_matmuls(module)
            + split_broadcast_reductions(module))


SKINNY_ROWS = 4
SKINNY_MIN_WEIGHTS = 1 << 16


def stays_a_row_reduction(op: Any, c: Contraction) -> bool:
    """A product with fewer than :data:`SKINNY_ROWS` rows (or columns) whose large factor
    is an input read with ``k`` innermost (``x @ w.T`` with PyTorch's ``Linear`` weight
    ``[N, K]``, at a decode step) stays a generic: the row-reduction schedule reads each
    row of ``w`` once, contiguously, where a matmul would first transpose the whole weight
    (``1x4096 @ 4096x4096^T``: 6.9 ms, numpy 0.8)."""
    from mlir import ir

    if c.batched() or c.nested:
        return False
    rows, cols, depth = (_prod(c._sizes(d)) for d in (c.m, c.n, c.k))
    big = c.y if rows < SKINNY_ROWS else c.x if cols < SKINNY_ROWS else None
    if big is None or big.ops or depth * max(rows, cols) < SKINNY_MIN_WEIGHTS:
        return False
    maps = [_map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    have = maps[big.inputs[0]]
    return have is not None and bool(c._real(have)) and c._real(have)[-1] in c.k


_SKINNY_TAG = "rlx_skinny_t"
_GENERALIZE_TAGGED = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %m = transform.structured.match ops{["linalg.matmul"]} attributes{rlx_skinny_t} in %root : (!transform.any_op) -> !transform.any_op
    %g = transform.structured.generalize %m : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""


def generalize_skinny_transposed_matmuls(module: Any) -> int:
    """``matmul(x, transpose(w))`` of fewer than :data:`SKINNY_ROWS` rows (a decode step
    through PyTorch-layout weights) as the contraction generic reading ``w`` itself, which
    :func:`stays_a_row_reduction` keeps: no transpose of the whole weight per call."""
    from mlir import ir

    from rlx_mlir.lowering.schedules import _run_script, walk_ops

    tagged = []
    for op in walk_ops(module):
        if op.name != "linalg.matmul" or op.parent.name != "func.func" or not _default_maps(op):
            continue
        producer = getattr(op.operands[1].owner, "operation", op.operands[1].owner)
        if getattr(producer, "name", "") != "linalg.transpose":
            continue
        (m, k), (_, n) = (ir.RankedTensorType(v.type).shape for v in op.operands[:2])
        if m < SKINNY_ROWS and k * n >= SKINNY_MIN_WEIGHTS:
            op.attributes[_SKINNY_TAG] = ir.UnitAttr.get()
            tagged.append(op)
    if not tagged:
        return 0
    _run_script(module, _GENERALIZE_TAGGED)
    for op in walk_ops(module):
        if op.name == "linalg.generic" and _SKINNY_TAG in op.attributes:
            del op.attributes[_SKINNY_TAG]
            fold_transposed_inputs(op)
    return len(tagged)


def _default_maps(op: Any) -> bool:
    from mlir import ir

    if "indexing_maps" not in op.attributes:
        return True
    maps = [_map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return maps == [[0, 2], [2, 1], [0, 1]]


def _transposed_lhs(op: Any) -> Any:
    """The ``linalg.transpose`` (2-d) producing a plain ``linalg.matmul``'s A, or None."""
    from mlir import ir

    if "indexing_maps" in op.attributes:
        maps = [_map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        if maps != [[0, 2], [2, 1], [0, 1]]:
            return None
    producer = getattr(op.operands[0].owner, "operation", op.operands[0].owner)
    if getattr(producer, "name", "") != "linalg.transpose":
        return None
    (m, k), (_, n) = (ir.RankedTensorType(v.type).shape for v in op.operands[:2])
    nested = op.parent.name != "func.func"
    return producer if nested or transposed_a_pays(m, n, k) else None


def read_lhs_transposed(op: Any) -> None:
    """``matmul(transpose(a), b)`` -> a matmul reading ``a`` through the transposed map
    (:func:`transposed_a_maps`); the transpose goes when nothing else reads it."""
    from rlx_mlir.lowering import linalg_builders as linalg

    transpose = _transposed_lhs(op)
    with _insertion_before(op):
        product = _value(linalg.matmul(transpose.operands[0], op.operands[1],
                                       outs=[op.operands[2]], indexing_maps=transposed_a_maps()))
    op.results[0].replace_all_uses_with(product)
    op.erase()
    if not list(transpose.results[0].uses):
        transpose.erase()


def _insertion_before(op: Any) -> Any:
    """Insertion point and location of ``op`` (a context manager pair as one)."""
    from contextlib import ExitStack

    from mlir import ir

    stack = ExitStack()
    stack.enter_context(ir.InsertionPoint(op))
    stack.enter_context(op.location)
    return stack


def fold_transposed_inputs(op: Any) -> int:
    """Read a ``linalg.transpose`` producer's input directly (its permutation composed into
    the generic's indexing map), so :func:`analyze` chooses the layouts of the product
    itself; a transpose left without users is erased. Returns how many were folded.

    A weight gradient ``x^T @ dy`` arrives as a contraction of ``transpose(x)``: folded,
    the rewrite may transpose the smaller operand instead."""
    from mlir import ir

    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    folded = 0
    for i in range(len(maps) - 1):
        producer = getattr(op.operands[i].owner, "operation", op.operands[i].owner)
        if getattr(producer, "name", "") != "linalg.transpose":
            continue
        perm = [int(d) for d in ir.DenseI64ArrayAttr(producer.attributes["permutation"])]
        results = list(maps[i].results)
        source_exprs = [results[perm.index(t)] for t in range(len(perm))]
        maps[i] = ir.AffineMap.get(maps[i].n_dims, maps[i].n_symbols, source_exprs)
        op.operands[i] = producer.operands[0]
        folded += 1
        if not list(producer.results[0].uses):
            producer.erase()
    if folded:
        op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    return folded
