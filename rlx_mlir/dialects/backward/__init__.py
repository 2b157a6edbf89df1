"""The backward family: dedicated ``rlx.*_backward`` ops emitted by autodiff (SPEC 3).

One submodule per forward family, so each sits next to the math it differentiates.
"""

from __future__ import annotations

from rlx_mlir.dialects.backward import (
    activation,
    attention,
    conv,
    indexing,
    loss,
    moe,
    norms,
    quant,
    scan,
)

SUBMODULES = (activation, norms, attention, conv, indexing, loss, quant, moe, scan)
OPS: list = [op for module in SUBMODULES for op in module.OPS]
