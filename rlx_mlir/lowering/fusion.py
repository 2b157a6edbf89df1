"""The ``fuse`` stage: elementwise fusion, after rematerializing cheap shared producers.

``linalg-fuse-elementwise-ops`` only fuses a producer into a consumer when the producer
has one use, so a cheap value read by two elementwise ops is written to memory and read
back twice: the transformer's ``h = x @ w1 + b1`` feeds both GELU and, in the backward,
GELU's derivative (an 8 MB round trip for one add). Here such a producer -- a parallel
generic of at most two adds/subs/muls/negs or integer widenings whose users are all
parallel generics -- is
cloned for every user first; each clone then fuses into its user::

    %h = generic(mm, b1) {addf}          %g  = generic(mm, b1) {addf; gelu}
    %g = generic(%h) {gelu}       ->     %dg = generic(mm, b1, dy) {addf; gelu'}
    %dg = generic(%h, dy) {gelu'}
"""

from __future__ import annotations

from typing import Any

FUSION_VERSION = "fuse-remat-v5"
CHEAP_OPS = frozenset({"arith.addf", "arith.subf", "arith.mulf", "arith.negf",
                       # widening an integer (the bytes of quantized weights, read by
                       # one decode per nibble) costs less than its wide copy
                       "arith.extsi", "arith.extui", "arith.addi", "arith.subi",
                       "arith.sitofp", "arith.uitofp"})
MAX_CHEAP_OPS = 2


def _all_parallel(op: Any) -> bool:
    from mlir import ir

    return all("parallel" in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"]))


def _is_cheap_elementwise(op: Any) -> bool:
    """A single-result, all-parallel generic whose body is a few cheap ops (CHEAP_OPS)."""
    if op.name != "linalg.generic" or len(op.results) != 1 or not _all_parallel(op):
        return False
    body = [o for o in op.regions[0].blocks[0].operations if o.name != "linalg.yield"]
    return len(body) <= MAX_CHEAP_OPS and all(o.name in CHEAP_OPS for o in body)


def _reads_as_input(user: Any, operand_number: int) -> bool:
    """``user`` is an all-parallel generic reading the value as an input (not its init)."""
    if user.name != "linalg.generic" or not _all_parallel(user):
        return False
    return operand_number < len(user.operands) - len(user.results)


def rematerialize_cheap_producers(module: Any) -> int:
    """Clone each cheap shared producer for every user but the first; returns the clones."""
    from mlir import ir

    from rlx_mlir.lowering.schedules import walk_ops

    clones = 0
    for op in [o for o in walk_ops(module) if _is_cheap_elementwise(o)]:
        uses = [(u.owner, u.operand_number) for u in op.results[0].uses]
        if len(uses) < 2 or not all(_reads_as_input(user, n) for user, n in uses):
            continue
        for user, number in uses[1:]:
            clone = op.clone(ip=ir.InsertionPoint(user))
            user.operands[number] = clone.results[0]
            clones += 1
    return clones


def apply_fusion(module: Any) -> None:
    """Elementwise ops on whole tensors (``arith.addf %a, %b : tensor<..>`` written by
    hand) as linalg, CSE + canonicalize, rematerialize, then elementwise fusion (+ cleanup)."""
    from mlir.passmanager import PassManager

    from rlx_mlir.lowering.capi import run_pass_manager

    run_pass_manager(PassManager.parse("builtin.module(func.func(convert-elementwise-to-linalg),"
                                       "cse,canonicalize)"), module.operation)
    generalize_reductions(module)
    rematerialize_cheap_producers(module)
    run_pass_manager(PassManager.parse("builtin.module(func.func(linalg-fuse-elementwise-ops),"
                                       "canonicalize,cse)"), module.operation)


_GENERALIZE_REDUCE = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %r = transform.structured.match ops{["linalg.reduce"]} in %root : (!transform.any_op) -> !transform.any_op
    %g = transform.structured.generalize %r : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""


def generalize_reductions(module: Any) -> None:
    """``linalg.reduce`` -> the equivalent ``linalg.generic``, which elementwise fusion can
    fuse a single-use producer into: ``sum(x * y)`` becomes one pass, and a broadcast
    product summed over its middle dim (``(x[:, :, None] * y[None]).sum(1)``) becomes a
    contraction the matmul rewrite recognises instead of a materialised 3-d tensor."""
    from rlx_mlir.lowering.schedules import _run_script, ops_named

    if ops_named(module, "linalg.reduce"):
        _run_script(module, _GENERALIZE_REDUCE)
