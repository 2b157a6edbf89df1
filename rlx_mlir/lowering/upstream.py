"""The hand-off to upstream MLIR 22 and its pass pipeline down to the LLVM dialect.

    text = handoff_text(lowered_xdsl_module)      # generic form, upstream-clean
    llvm = lower_to_llvm(rlx_module)              # LLVM-dialect text mlir-opt verifies

:data:`PIPELINE` is the named list of upstream stages; swap or extend it (e.g. a tiled,
vectorised schedule) without touching the rest. ``RLX_PRINT_AFTER_ALL=1`` (or
``rlx-opt --print-after-all-upstream``) prints the IR after each stage to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, BoolAttr, DictionaryAttr, ModuleOp, UnitAttr

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.ir import to_text
from rlx_mlir.lowering.bool_storage import widen_bool_storage


@dataclass(frozen=True)
class Stage:
    """One named step of the upstream pipeline (a ``PassManager`` pipeline string)."""

    name: str
    passes: str


PIPELINE: list[Stage] = [
    Stage("fuse", "func.func(linalg-fuse-elementwise-ops),canonicalize,cse"),
    Stage("bufferize",
          "one-shot-bufferize{bufferize-function-boundaries "
          "function-boundary-type-conversion=identity-layout-map},canonicalize,cse"),
    Stage("out-params",
          "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
          "canonicalize"),
    Stage("deallocate", "buffer-deallocation-pipeline"),
    Stage("loops", "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,canonicalize"),
    Stage("math", "convert-math-to-funcs,convert-math-to-llvm,convert-math-to-libm"),
    Stage("llvm",
          "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-to-llvm,"
          "reconcile-unrealized-casts,canonicalize,cse"),
]


def pipeline_spec(stages: Sequence[Stage] | None = None) -> str:
    """The whole pipeline as one string (part of the compile-cache key)."""
    return ";".join(f"{s.name}={s.passes}" for s in (stages or PIPELINE))


# ---------------------------------------------------------------- hand-off text


def prepare_for_handoff(module: ModuleOp) -> ModuleOp:
    """A clone: bools stored as i8, rlx arg attributes and empty attr lists gone, entries C-callable."""
    clone = module.clone()
    widen_bool_storage(clone)
    for f in clone.walk():
        if isinstance(f, func.FuncOp):
            _clean_func(f)
    return clone


def _clean_func(f: func.FuncOp) -> None:
    public = f.sym_visibility is None or f.sym_visibility.data == "public"
    f.arg_attrs = _clean_attr_list(f.arg_attrs, len(f.function_type.inputs), read_only=public)
    f.res_attrs = _clean_attr_list(f.res_attrs, len(f.function_type.outputs))
    for name in [k for k in f.attributes if k.startswith("rlx.")]:
        del f.attributes[name]
    if public and f.body.blocks:
        f.attributes["llvm.emit_c_interface"] = UnitAttr()


def _clean_attr_list(attrs: ArrayAttr | None, count: int,
                     read_only: bool = False) -> ArrayAttr | None:
    """Drop ``rlx.*`` entries; ``read_only`` marks arguments ``bufferization.writable = false``
    so the compiled code never writes into the caller's numpy arrays."""
    dicts = [d.data for d in attrs.data] if attrs is not None else [{}] * count  # type: ignore[union-attr]
    cleaned = [{k: v for k, v in d.items() if not k.startswith("rlx.")} for d in dicts]
    if read_only:
        cleaned = [{**d, "bufferization.writable": BoolAttr.from_bool(False)} for d in cleaned]
    if not any(cleaned):
        return None
    return ArrayAttr([DictionaryAttr(d) for d in cleaned])


def handoff_text(lowered: ModuleOp) -> str:
    """Generic-form text of an already lowered module, ready for ``mlir.ir.Module.parse``."""
    leftover = next((op for op in lowered.walk() if op.name.startswith("rlx.")), None)
    if leftover is not None:
        raise RlxError(f"'{leftover.name}' was not lowered before the hand-off", op=leftover)
    return to_text(prepare_for_handoff(lowered), generic=True)


# ---------------------------------------------------------------- upstream passes

StageCallback = Callable[[Stage, str], None]


def print_after_all_requested() -> bool:
    return os.environ.get("RLX_PRINT_AFTER_ALL", "") not in ("", "0")


def _stderr_dump(stage: Stage, text: str) -> None:
    print(f"// -----// IR after upstream stage '{stage.name}' ({stage.passes}) //----- //",
          file=sys.stderr)
    print(text, file=sys.stderr)


def run_upstream(text: str, stages: Sequence[Stage] | None = None,
                 after_stage: StageCallback | None = None) -> str:
    """Parse ``text`` upstream, run ``stages`` (default :data:`PIPELINE`), return LLVM-dialect text."""
    from mlir import ir
    from mlir.passmanager import PassManager

    if after_stage is None and print_after_all_requested():
        after_stage = _stderr_dump
    with ir.Context():
        module = _parse_upstream(ir, text)
        for stage in stages or PIPELINE:
            _run_stage(PassManager, module, stage)
            if after_stage is not None:
                after_stage(stage, str(module))
        return str(module)


def _parse_upstream(ir, text: str):
    try:
        return ir.Module.parse(text)
    except Exception as e:  # MLIRError carries upstream's diagnostics
        raise RlxError(f"upstream MLIR rejected the lowered module: {e}") from None


def _run_stage(pass_manager_cls, module, stage: Stage) -> None:
    pm = pass_manager_cls.parse(f"builtin.module({stage.passes})")
    try:
        pm.run(module.operation)
    except Exception as e:
        raise RlxError(f"upstream stage '{stage.name}' ({stage.passes}) failed: {e}") from None


def lower_to_llvm(module: ModuleOp, stages: Sequence[Stage] | None = None,
                  after_stage: StageCallback | None = None) -> str:
    """rlx (or already lowered) xDSL module -> LLVM-dialect text (the module is not changed)."""
    from rlx_mlir.lowering.to_linalg import lower_module

    lowered = module.clone()
    lower_module(lowered)
    return run_upstream(handoff_text(lowered), stages, after_stage)
