"""Cut a big lowered function in two, so its halves go through upstream MLIR on two cores.

A training step is one function, and most of the upstream pipeline (the transform
scripts, one-shot bufferization, the dialect conversions) works on the module as a whole
on one core. :func:`split_function` cuts the body of a module's only function where half
of its ops are behind (the ops stay in order) into two private functions, and the function
calls them::

    func @step(%x, %w) {              func @step(%x, %w) { %a = call @step__part0(%x, %w)
      %a = ... ; %b = ... (%a)   ->                        %b = call @step__part1(%w, %a)
      return %b                                            return %b }

Values the second half reads from the first (activations saved for the backward pass)
become results of the first and arguments of the second; constants and ``tensor.empty``
are cloned instead. The first module holds the function and its first half, and declares
the second, which the other module defines: each goes through the whole pipeline in its
own context and thread (:func:`rlx_mlir.lowering.upstream.lower_to_llvm`), and the LLVM
texts are merged (:func:`merge_llvm_texts`) into the module the compile caches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from rlx_mlir.diagnostics import RlxError, int_setting
from rlx_mlir.runtime.native import top_level_ops


def split_min_ops() -> int:
    """Ops (nested ones included) a function needs to be split (``RLX_SPLIT_MIN_OPS``,
    default 600; part of the cache key): the MLP step (~200 ops) lowers in 0.1 s, where
    two threads would mostly add their start-up.

    >>> split_min_ops()   # doctest: +SKIP
    600
    """
    return int_setting("RLX_SPLIT_MIN_OPS", 600, minimum=1)
MAX_FIRST_RESULTS = 32
"""Values the first half may hand over (results); a function whose cut passes more is
compiled whole. One-shot bufferization of a first half returning 106 values (an 8-layer
char-LM gradient) took 0.61 s, the whole function 0.40 s."""
REMATERIALIZED = frozenset({"arith.constant", "tensor.empty", "tensor.expand_shape",
                            "tensor.collapse_shape"})
"""Ops the second half gets its own copy of (reading the first's value they read)."""
RESHAPES = frozenset({"tensor.expand_shape", "tensor.collapse_shape"})


def weight(op: Operation) -> int:
    """The ops in ``op``, itself included (the measure of work the halves balance)."""
    return sum(1 for _ in op.walk())


def _only_function(module: ModuleOp) -> func.FuncOp | None:
    """The module's one function with a body (others must be declarations), or None."""
    defined = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    others = [op for op in module.ops if not isinstance(op, func.FuncOp)]
    return defined[0] if len(defined) == 1 and not others else None


def _cut_index(block: Block, ops: Sequence[Operation]) -> int:
    """Where to cut ``ops``: among the cuts that leave 40-60% of the weight in front, the
    one passing the fewest bytes from the first half to the second (a value crossing the
    cut is not fused with its readers there)."""
    weights = [weight(op) for op in ops]
    total, running, window = sum(weights), 0, []
    for k in range(1, len(ops)):
        running += weights[k - 1]
        if 0.4 * total <= running <= 0.6 * total:
            window.append(k)
    if not window:
        return _balanced_cut(weights)
    crossing = _crossing_bytes(block, ops)
    return min(window, key=lambda k: (crossing[k], abs(2 * sum(weights[:k]) - total)))


def _balanced_cut(weights: Sequence[int]) -> int:
    """Where the running weight first reaches half of the total."""
    half, running = sum(weights) / 2, 0
    for i, w in enumerate(weights):
        running += w
        if running >= half:
            return min(max(i + 1, 1), len(weights) - 1)
    return len(weights) - 1


def _crossing_bytes(block: Block, ops: Sequence[Operation]) -> list[int]:
    """For each cut ``k``, the bytes of the values ops before ``k`` make and ops from
    ``k`` on (or the return) read; rematerialized ops' values count nothing."""
    index = {op: i for i, op in enumerate(ops)}
    delta = [0] * (len(ops) + 2)
    for i, op in enumerate(ops):
        if op.name in REMATERIALIZED:
            continue
        for r in op.results:
            last = max((index.get(block.find_ancestor_op_in_block(u.operation), len(ops))
                        for u in r.uses), default=i)
            if last > i:
                delta[i + 1] += _bytes(r)
                delta[last + 1] -= _bytes(r)
    out, running = [], 0
    for d in delta[:len(ops) + 1]:
        running += d
        out.append(running)
    return out


def _bytes(value: SSAValue) -> int:
    t = value.type
    if isinstance(t, TensorType):
        count = 1
        for size in t.get_shape():
            count *= max(size, 1)
        return count * 4
    return 8


def _used_in(value: SSAValue, block: Block, ops: set[Operation]) -> bool:
    """Whether an op of ``ops`` (top-level ops of ``block``), or one nested in it, uses ``value``."""
    return any(block.find_ancestor_op_in_block(use.operation) in ops for use in value.uses)


def _passable(value: SSAValue) -> bool:
    return isinstance(value.type, (TensorType, IntegerType, IndexType)) or \
        value.type.name in ("f16", "bf16", "f32", "f64")  # type: ignore[attr-defined]


def _rewire(value: SSAValue, replacement: SSAValue, block: Block, ops: set[Operation]) -> None:
    """Point the uses of ``value`` inside ``ops`` (top-level ops of ``block``) at ``replacement``."""
    for use in list(value.uses):
        if block.find_ancestor_op_in_block(use.operation) in ops:
            use.operation.operands = [replacement if i == use.index else v
                                      for i, v in enumerate(use.operation.operands)]


def split_function(module: ModuleOp) -> tuple[ModuleOp, ModuleOp] | None:
    """Two modules holding ``module``'s only function cut in two (``module`` is consumed),
    or None when it has no such function, is small, or passes a value that is not a
    tensor or scalar between the halves.

    >>> first, second = split_function(lowered_training_step)   # doctest: +SKIP
    """
    f = _only_function(module)
    if f is None or weight(f) < split_min_ops() or len(f.body.blocks) != 1:
        return None
    block = f.body.block
    *ops, ret = list(block.ops)
    if not isinstance(ret, func.ReturnOp) or len(ops) < 2:
        return None
    cut = _cut_index(block, ops)
    head, tail = ops[:cut], set(ops[cut:])
    passed = [_reshaped(v) for v in _crossing(block, head, tail)]  # a reshape passes its source
    head_values = {r for op in head for r in op.results}
    returned_early = {v for v in ret.operands if v in head_values}
    if not all(_passable(v) for v in passed) or \
            len({*passed, *returned_early}) > MAX_FIRST_RESULTS:
        return None
    tail_ops = [*_clone_rematerialized(block, head, ops[cut], tail), *ops[cut:]]
    crossing = _crossing(block, head, tail)
    made_by = {r: part for part, group in ((0, head), (1, tail_ops)) for op in group
               for r in op.results}
    returned = [list(dict.fromkeys(v for v in ret.operands if made_by.get(v) == part))
                for part in (0, 1)]
    outputs0 = list(dict.fromkeys([*crossing, *returned[0]]))
    args = [[a for a in block.args if _used_in(a, block, group)] for group in (set(head), tail)]
    part0 = _part(f"{f.sym_name.data}__part0", block, args[0], head, outputs0)
    part1 = _part(f"{f.sym_name.data}__part1", block, [*args[1], *crossing], tail_ops,
                  returned[1])
    results = [v for v in ret.operands]
    ret.detach()
    ret.erase()
    _call_parts(f, (part0, args[0], outputs0), (part1, args[1], returned[1]), crossing, results)
    # The second half only reads its arguments (it copies before writing in place), so
    # the caller's bufferization passes them without copies.
    count = len(part1.args)
    part1.arg_attrs = _arg_attrs(count, "bufferization.writable", BoolAttr.from_bool(False))
    declaration = func.FuncOp(part1.sym_name.data, part1.function_type, Region(), "private",
                              arg_attrs=_arg_attrs(count, "bufferization.access",
                                                   StringAttr("read")))
    externals = [op for op in module.ops if isinstance(op, func.FuncOp) and op is not f]
    f.detach()
    return (ModuleOp([*(e.clone() for e in externals), f, part0, declaration]),
            ModuleOp([*(e.clone() for e in externals), part1]))


def _reshaped(value: SSAValue) -> SSAValue:
    """The value a chain of reshapes starts from (what the second half gets for it)."""
    while isinstance(value.owner, Operation) and value.owner.name in RESHAPES:
        value = value.owner.operands[0]
    return value


def _crossing(block: Block, head: Sequence[Operation], tail: set[Operation]) -> list[SSAValue]:
    """Results of ``head`` ops that ``tail`` ops read (the second half's extra arguments)."""
    return [r for op in head for r in op.results if _used_in(r, block, tail)]


def _arg_attrs(count: int, name: str, value: Attribute) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({name: value}) for _ in range(count)])


def _clone_rematerialized(block: Block, head: Sequence[Operation], before: Operation,
                          tail: set[Operation]) -> list[Operation]:
    """Give the second half its own copy of each constant, empty and reshape of the first
    that it reads (a reshape's source is passed instead: a reshaped result would be copied
    into its out-param); the copies are inserted before ``before`` and returned in order."""
    copies: list[Operation] = []
    for op in reversed(head):
        if op.name not in REMATERIALIZED or not any(_used_in(r, block, tail) for r in op.results):
            continue
        copy = op.clone()
        block.insert_op_before(copy, copies[0] if copies else before)
        tail.add(copy)
        copies.insert(0, copy)
        for old, new in zip(op.results, copy.results, strict=True):
            _rewire(old, new, block, tail)
    return copies


def _part(name: str, block: Block, inputs: Sequence[SSAValue], ops: Sequence[Operation],
          outputs: Sequence[SSAValue]) -> func.FuncOp:
    """A private function of ``ops`` (moved out of ``block``) over ``inputs``, returning
    ``outputs``."""
    part_block = Block(arg_types=[v.type for v in inputs])
    members = set(ops)
    for old, new in zip(inputs, part_block.args, strict=True):
        _rewire(old, new, block, members)
    for op in ops:
        op.detach()
        part_block.add_op(op)
    part_block.add_op(func.ReturnOp(*outputs))
    return func.FuncOp(name, FunctionType.from_lists([v.type for v in inputs],
                                                     [v.type for v in outputs]),
                       Region(part_block), "private")


def _call_parts(f: func.FuncOp, first: tuple, second: tuple, crossing: Sequence[SSAValue],
                results: Sequence[SSAValue]) -> None:
    """``f``'s body becomes the two calls and a return of ``results`` (each a value of
    ``f``'s block, or an output of one of the parts)."""
    block = f.body.block
    if any(True for _ in block.ops):
        raise RlxError("splitting left ops in the function (internal error)")
    calls, outputs = [], {}
    for part, args, outs in (first, second):
        operands = [*args, *(outputs[v] for v in crossing)] if calls else list(args)
        call = func.CallOp(part.sym_name.data, operands, part.function_type.outputs.data)
        calls.append(call)
        outputs.update(zip(outs, call.results, strict=True))
    block.add_ops([*calls, func.ReturnOp(*(outputs.get(v, v) for v in results))])


# ---------------------------------------------------------------- merging the LLVM texts

def _declaration(op: list[str]) -> bool:
    """A function declaration (``llvm.func @f(...)`` without a body)."""
    return len(op) == 1 and op[0].split()[:1] == ["llvm.func"]


def _local(op: list[str]) -> bool:
    """A global, or a function another object file cannot see (``internal``, ``private``
    or ``linkonce`` linkage): each part's own copy may be renamed."""
    words = op[0].split("@")[0].split()
    return words[:1] == ["llvm.mlir.global"] or \
        any(w in ("internal", "private", "linkonce", "linkonce_odr") for w in words)


def _rename_local_clashes(text: str, merged: dict[str, list[str]], suffix: str) -> str:
    """``text`` with each global or local function whose name ``merged`` already holds
    with other text renamed (``@name`` -> ``@name<suffix>``): each half names its constant
    globals on its own (``@__constant_4xf32`` in both, with different values)."""
    cut = top_level_ops(text)
    if cut is None:
        return text
    renames = {}
    for op in cut[1]:
        key = _symbol(op)
        if key.startswith("@") and _local(op) and key in merged and merged[key] != op:
            renames[key] = key + suffix
    for old, new in renames.items():
        text = re.sub(re.escape(old) + r"(?![\w.$-])", new, text)
    return text


def _symbol(op: list[str]) -> str:
    """``@name`` of a function or global, else the op's whole text (its identity)."""
    words = op[0].split()
    named = [w for w in words if w.startswith("@")]
    if words and words[0] in ("llvm.func", "llvm.mlir.global") and named:
        return named[0].split("(")[0]
    return "\n".join(op)


def merge_llvm_texts(texts: Sequence[str]) -> str | None:
    """One LLVM-dialect module of several that declare each other's functions: every
    definition once, a declaration only where no part defines the symbol, identical ops
    once; attribute aliases (``#loop_annotation = ...``) once, a part's alias, global or
    local function renamed where another part gave the name different text. None when two
    parts define an external function differently (or a text is not the printed form
    expected).

    >>> merge_llvm_texts([first_llvm_text, second_llvm_text])   # doctest: +SKIP
    """
    aliases: dict[str, str] = {}
    merged: dict[str, list[str]] = {}
    module_lines = set()
    for i, text in enumerate(texts):
        body = _merge_aliases(text, aliases, f"_h{i}")
        cut = top_level_ops(_rename_local_clashes(body, merged, f"_h{i}"))
        if cut is None:
            return None
        module_lines.add(cut[0][-1])
        for op in cut[1]:
            key = _symbol(op)
            kept = merged.get(key)
            if kept is None or (_declaration(kept) and not _declaration(op)):
                merged[key] = op  # new, or a definition of what was only declared
            elif kept != op and not _declaration(op):
                return None
    if len(module_lines) != 1:
        return None
    header = [f"{name} = {value}" for name, value in aliases.items()] + [*module_lines]
    return "\n".join([*header, *(line for op in merged.values() for line in op), "}", ""])


_ALIAS = re.compile(r"^([#!][\w.$-]+) = (.*)$")


def _merge_aliases(text: str, aliases: dict[str, str], suffix: str) -> str:
    """``text`` without its alias lines, which join ``aliases`` (name -> value); an alias
    whose name is taken by another value is renamed (with ``suffix``) in ``text``."""
    lines = text.split("\n")
    body = next((i for i, line in enumerate(lines) if not _ALIAS.match(line)), len(lines))
    renames: dict[str, str] = {}
    for line in lines[:body]:
        name, value = _ALIAS.match(line).groups()  # type: ignore[union-attr]
        value = _renamed(value, renames)
        if aliases.get(name, value) != value:
            renames[name] = name + suffix
            name = renames[name]
        aliases[name] = value
    return _renamed("\n".join(lines[body:]), renames)


def _renamed(text: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        text = re.sub(re.escape(old) + r"(?![\w.$-])", new, text)
    return text


# ---------------------------------------------------------------- the declared half's results


def declared_results_to_out_params(module: Any) -> int:
    """Upstream stage after ``out-params``: a declared function returning memrefs (the
    half another module defines) takes them as trailing arguments instead, as
    ``buffer-results-to-out-params`` made of its definition (the pass leaves declarations
    alone), and each call passes new buffers. Then a buffer a call fills that is only
    copied into an out-param of the caller is that out-param (no copy). Returns how many
    declarations changed.

    >>> declared_results_to_out_params(upstream_module)   # doctest: +SKIP
    1
    """
    from mlir import ir

    from rlx_mlir.lowering.dedupe import symbol_name
    from rlx_mlir.lowering.schedules import ops_named

    declared: set[str] = set()
    for op in module.body.operations:
        if op.operation.name != "func.func" or op.regions[0].blocks:
            continue
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        buffers = [t for t in ftype.results if isinstance(t, ir.MemRefType)]
        if buffers:  # as the pass does: memref results move to the end, others stay
            others = [t for t in ftype.results if not isinstance(t, ir.MemRefType)]
            op.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([*ftype.inputs, *buffers], others))
            if "arg_attrs" in op.attributes:
                del op.attributes["arg_attrs"]
            declared.add(symbol_name(op))
    calls = ops_named(module, "func.call")
    for call in calls:
        if ir.FlatSymbolRefAttr(call.attributes["callee"]).value in declared:
            _pass_out_params(call)
    for alloc in ops_named(module, "memref.alloc"):
        _forward_out_param(alloc)
    return len(declared)


def _pass_out_params(call: Any) -> None:
    """``%r, %s = call @f(%a)`` (``%r`` a memref) -> ``%r = memref.alloc();
    %s = call @f(%a, %r)``."""
    from mlir import ir
    from mlir.dialects import func, memref

    results = list(call.results)
    buffers = [r for r in results if isinstance(r.type, ir.MemRefType)]
    others = [r for r in results if not isinstance(r.type, ir.MemRefType)]
    with ir.InsertionPoint(call), call.location:
        outs = [memref.AllocOp(r.type, [], []).result for r in buffers]
        new = func.CallOp([r.type for r in others], call.attributes["callee"],
                          [*call.operands, *outs])
    for result, buffer in zip(buffers, outs, strict=True):
        result.replace_all_uses_with(buffer)
    for result, value in zip(others, new.results, strict=True):
        result.replace_all_uses_with(value)
    call.erase()


def _forward_out_param(alloc: Any) -> None:
    """An allocation only passed to one call and then copied into a block argument (an
    out-param of the caller) becomes that argument."""
    from mlir import ir

    uses = [(u.owner, u.operand_number) for u in alloc.results[0].uses]
    owners = sorted((owner.name for owner, _ in uses))
    if owners != ["func.call", "memref.copy"]:
        return
    copy, number = next((o, n) for o, n in uses if o.name == "memref.copy")
    call = next(o for o, _ in uses if o.name == "func.call")
    target = copy.operands[1]
    if number != 0 or not isinstance(target, ir.BlockArgument) or \
            target.type != alloc.results[0].type or target in list(call.operands):
        return
    alloc.results[0].replace_all_uses_with(target)
    copy.erase()
    alloc.erase()
