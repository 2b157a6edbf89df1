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

import os
from dataclasses import dataclass

SCHEDULE_VERSION = "sched-v1"
ATTR = "rlx_sched"

# matmul micro-kernel / cache tiles (CODEGEN.md §1a, best measured on this AVX-512 machine)
MR, NR = 4, 64
KC, NC, MC = 256, 256, 64
PACK_MIN_FLOPS = 1 << 18  # below this a register-tiled unpacked schedule is enough
THREAD_MIN_FLOPS = 1 << 24  # below this a 2-thread split does not pay for its dispatch
VEC_MAX_FULL = 64  # an innermost parallel dim up to this size is one vector


def num_threads() -> int:
    """``RLX_NUM_THREADS`` (default: the machine's cores)."""
    configured = os.environ.get("RLX_NUM_THREADS", "")
    if configured.strip():
        return max(1, int(configured))
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


# ---------------------------------------------------------------- op analysis


@dataclass
class OpInfo:
    name: str
    ranges: list[int]
    iterators: list[str]


def _shape(value) -> list[int] | None:
    from mlir import ir

    t = value.type
    if ir.RankedTensorType.isinstance(t):
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
        if "indexing_maps" in op.attributes and _has_custom_maps(op):
            return None
        (m, k), (_, n) = shapes[0], shapes[1]
        return OpInfo(name, [m, n, k], ["parallel", "parallel", "reduction"])
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
        for amap, shape in zip(maps, shapes, strict=True):
            for expr, size in zip(amap.results, shape, strict=True):
                if ir.AffineDimExpr.isinstance(expr):
                    pos = ir.AffineDimExpr(expr).position
                    if ranges[pos] is None:
                        ranges[pos] = size
        if any(r is None for r in ranges):
            return None
        return OpInfo(name, [int(r) for r in ranges], its)  # type: ignore[arg-type]
    return None


def _has_custom_maps(op) -> bool:
    from mlir import ir

    maps = [str(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    defaults = {
        "linalg.matmul": ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)",
                          "(d0, d1, d2) -> (d0, d1)"],
        "linalg.batch_matmul": ["(d0, d1, d2, d3) -> (d0, d1, d3)",
                                "(d0, d1, d2, d3) -> (d0, d3, d2)",
                                "(d0, d1, d2, d3) -> (d0, d1, d2)"],
    }
    return [m.replace("affine_map<", "").rstrip(">") for m in maps] != defaults[op.name]


def _body_is_vectorizable(op) -> bool:
    """No tensor.extract (gathers) and no ops the vectorizer does not know in the body."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                n = inner.name
                if n.startswith("tensor.") or n.startswith("scf.") or n.startswith("func."):
                    return False
    return True


def _vec_size(n: int) -> int | None:
    """Innermost vector width for a dim of size ``n`` (None: leave scalar)."""
    if n <= VEC_MAX_FULL:
        return n
    for c in (64, 48, 32, 16, 8):
        if n % c == 0:
            return c
    return None


# ---------------------------------------------------------------- schedule fragments


def _match(i: int, opname: str, into: str = "%op") -> str:
    return (f"    {into} = transform.structured.match ops{{[\"{opname}\"]}} "
            f"attributes{{{ATTR} = {i} : i64}} in %root "
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


def _generic_fragment(i: int, info: OpInfo) -> str | None:
    n = len(info.ranges)
    if n == 0 or any(r == 0 for r in info.ranges):
        return None
    last = info.ranges[-1]
    sizes = [1] * (n - 1)
    if info.iterators[-1] == "reduction" and last <= 512:
        sizes.append(0)
    else:
        v = _vec_size(last)
        if v is None:
            return None
        sizes.append(v if v < last else 0)
    # an outer dim of extent 1 needs no loop
    sizes = [0 if (s == 1 and r == 1) else s for s, r in zip(sizes, info.ranges, strict=True)]
    text = _match(i, info.name)
    text += _tile_for("%op", sizes, f"%t{i}")
    text += f"    transform.structured.vectorize %t{i} : !transform.any_op\n"
    return text


def _batch_matmul_fragment(i: int, info: OpInfo) -> str:
    b, m, n, k = info.ranges
    mr = min(MR if n >= 32 else 8, m)
    nr = min(NR if n >= 64 else 32 if n >= 32 else 16, n)
    text = _match(i, info.name)
    sizes = [1 if b > 1 else 0, mr if mr < m else 0, nr if nr < n else 0, 0]
    text += _tile_for("%op", sizes, f"%a{i}")
    text += _tile_for(f"%a{i}", [0, 0, 0, 1], f"%t{i}")
    text += (f"    transform.structured.vectorize %t{i} vector_sizes [1, {mr}, {nr}, 1] "
             f"{{create_named_contraction}} : !transform.any_op\n")
    return text


def _small_matmul_fragment(i: int, info: OpInfo) -> str:
    m, n, k = info.ranges
    mr = min(MR if n >= 64 else 8, m)
    nr = min(NR if n >= 64 else 32 if n >= 32 else 16, n)
    text = _match(i, info.name)
    text += _tile_for("%op", [mr if mr < m else 0, nr if nr < n else 0, 0], f"%a{i}")
    text += _tile_for(f"%a{i}", [0, 0, 1], f"%t{i}")
    text += (f"    transform.structured.vectorize %t{i} vector_sizes [{mr}, {nr}, 1] "
             f"{{create_named_contraction}} : !transform.any_op\n")
    return text


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _packed_matmul_fragment(i: int, info: OpInfo, threads: int) -> str:
    """CODEGEN.md §1a: cache tiles, register tile, packed A/B panels via pad + hoist_pad."""
    m, n, k = info.ranges
    nr = NR if n >= NR else 32 if n >= 32 else 16
    mr = MR if nr == 64 else 8
    kc = min(KC, k)
    nc = min(NC, _round_up(n, nr))
    mc = min(MC, _round_up(m, mr))
    text = _match(i, info.name, "%mm")
    target = "%mm"
    if threads > 1 and 2 * m * n * k >= THREAD_MIN_FLOPS:
        # split the bigger of N (in NC blocks) or M (in MC blocks) across the threads;
        # never leave a unit-trip forall dim (CODEGEN pitfall iv)
        if n >= threads * nc:
            per = _round_up(-(-n // threads), nc)
            fsizes = [0, per]
        else:
            per = _round_up(-(-m // threads), mc)
            fsizes = [per, 0]
        if max(fsizes) < max(m if fsizes[0] else 0, n if fsizes[1] else 0):
            text += (f"    %fa{i}, %fl{i} = transform.structured.tile_using_forall %mm "
                     f"tile_sizes {fsizes} : (!transform.any_op) -> "
                     f"(!transform.any_op, !transform.any_op)\n")
            target = f"%fa{i}"
    text += _tile_for(target, [0, nc if nc < n else 0, kc if kc < k else 0], f"%c{i}",
                      interchange=[1, 2, 0] if (nc < n and kc < k) else None)
    text += _tile_for(f"%c{i}", [mc if mc < m else 0, 0, 0], f"%d{i}")
    text += _tile_for(f"%d{i}", [mr, nr, 0], f"%e{i}")
    a_loops = 1 if mr < m else 0
    b_loops = sum(1 for s in (nc < n, kc < k) if s) + (1 if mc < m else 0) + (1 if mr < m else 0)
    text += f"""    %p{i}, %pad{i}, %cp{i} = transform.structured.pad %e{i} {{
        padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [0, 1, 2],
        nofold_flags = [1, 1, 0], copy_back_op = "none"}}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %pB{i} = transform.get_producer_of_operand %p{i}[1] : (!transform.any_op) -> !transform.any_op
    %pA{i} = transform.get_producer_of_operand %p{i}[0] : (!transform.any_op) -> !transform.any_op
    %f{i} = transform.structured.match ops{{["func.func"]}} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f{i} {{ transform.apply_patterns.canonicalization }} : !transform.any_op
"""
    kb = min(kc, k)
    if b_loops:
        text += (f"    %hB{i} = transform.structured.hoist_pad %pB{i} by {min(b_loops, 3)} loops "
                 f": (!transform.any_op) -> !transform.any_op\n"
                 f"    transform.structured.vectorize %hB{i} vector_sizes [{kb}, {nr}] "
                 f": !transform.any_op\n")
    else:
        text += f"    transform.structured.vectorize %pB{i} vector_sizes [{kb}, {nr}] : !transform.any_op\n"
    if a_loops:
        text += (f"    %hA{i} = transform.structured.hoist_pad %pA{i} by {a_loops} loops "
                 f": (!transform.any_op) -> !transform.any_op\n"
                 f"    transform.structured.vectorize %hA{i} vector_sizes [{mr}, {kb}] "
                 f": !transform.any_op\n")
    else:
        text += f"    transform.structured.vectorize %pA{i} vector_sizes [{mr}, {kb}] : !transform.any_op\n"
    text += _match(i, info.name, f"%r{i}")
    text += (f"    %t{i}, %kl{i} = transform.structured.tile_using_for %r{i} tile_sizes [0, 0, 1] "
             f": (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
             f"    transform.structured.vectorize %t{i} {{create_named_contraction}} "
             f": !transform.any_op\n")
    return text


def plan(module) -> tuple[str, dict[str, int]]:
    """Tag ops of the upstream ``module`` and return (transform script, counts by kind)."""
    from mlir import ir

    threads = num_threads()
    fragments: list[str] = []
    hoists: list[str] = []
    counts: dict[str, int] = {}
    candidates = []

    def visit(op):
        o = op.operation if hasattr(op, "operation") else op
        if o.name.startswith("linalg.") and o.name not in ("linalg.yield", "linalg.index"):
            candidates.append(o)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in candidates:
        if any(not ir.RankedTensorType.isinstance(r.type) for r in op.results) or not op.results:
            continue
        info = _loop_info(op)
        if info is None or not _body_is_vectorizable(op):
            continue
        i = len(fragments)
        kind = None
        if info.name == "linalg.matmul":
            m, n, k = info.ranges
            if 2 * m * n * k >= PACK_MIN_FLOPS and m >= 4 and n >= 16:
                text, kind = _packed_matmul_fragment(i, info, threads), "matmul_packed"
                hoists.append(f"%kl{i}")
            else:
                text, kind = _small_matmul_fragment(i, info), "matmul_small"
                hoists.append(f"%t{i}_l")
        elif info.name == "linalg.batch_matmul":
            text, kind = _batch_matmul_fragment(i, info), "batch_matmul"
            hoists.append(f"%t{i}_l")
        else:
            frag = _generic_fragment(i, info)
            if frag is None:
                continue
            text, kind = frag, "vector"
        op.attributes[ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        fragments.append(text)
        counts[kind] = counts.get(kind, 0) + 1
    body = "".join(fragments)
    tail = """    %func = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %func : !transform.any_op
"""
    for loop in hoists:
        tail += f"    transform.loop.hoist_loop_invariant_subsets {loop} : !transform.any_op\n"
    script = ("module attributes {transform.with_named_sequence} {\n"
              "  transform.named_sequence @__transform_main(%root: !transform.any_op "
              "{transform.readonly}) {\n" + body + tail + "    transform.yield\n  }\n}\n")
    return script, counts
