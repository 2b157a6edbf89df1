"""Lowering: rlx -> upstream dialects on tensors (xDSL), then upstream MLIR to LLVM.

    rlx-opt model.mlir --lower-to-linalg                 # xDSL pass, upstream dialects only
    rlx-opt model.mlir --autodiff --lower-to-llvm | .venv/lib/python3.11/site-packages/mlir/bin/mlir-opt
    rlx-opt model.mlir --print-after-all-upstream --lower-to-llvm   # IR after each stage

Rule authors use :class:`Emitter` (see ``docs/lowering.md``).
"""

from __future__ import annotations

import os
from typing import Any

from rlx_mlir.lowering.emitter import Emitter, broadcast_map
from rlx_mlir.lowering.to_linalg import LowerToLinalg, lower_module
from rlx_mlir.lowering.upstream import (
    PIPELINE,
    Stage,
    handoff_text,
    lower_to_llvm,
    pipeline_spec,
    run_upstream,
)

__all__ = [
    "Emitter", "broadcast_map", "LowerToLinalg", "lower_module", "PIPELINE", "Stage",
    "handoff_text", "lower_to_llvm", "pipeline_spec", "run_upstream",
]


def _lower_to_llvm_stage(stage_spec: str, module: Any, args: Any) -> str:
    """rlx-opt ``--lower-to-llvm``: print the LLVM-dialect module."""
    return lower_to_llvm(module)


def _print_after_all_stage(stage_spec: str, module: Any, args: Any) -> None:
    """rlx-opt ``--print-after-all-upstream`` (place it before ``--lower-to-llvm``)."""
    os.environ["RLX_PRINT_AFTER_ALL"] = "1"


def _register_stage_hooks() -> None:
    from rlx_mlir.tools.rlx_opt_hooks import STAGE_HOOKS

    STAGE_HOOKS["lower-to-llvm"] = _lower_to_llvm_stage
    STAGE_HOOKS["print-after-all-upstream"] = _print_after_all_stage


_register_stage_hooks()
