"""The ``rlx`` dialect, assembled from its op family modules.

Each family module (``elementwise``, ``linalg``, ``nn``, ``attention``, ``conv``,
``shape``, ``solve``, ``sort``, ``random``, ``complex``, ``fft``, ``quant``, ``moe``, ``backward``, ``control``) defines its ops and registers their rules beside them; importing
this package registers everything.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from rlx_mlir.dialects import (
    attention,
    backward,
    complex,
    control,
    conv,
    elementwise,
    fft,
    linalg,
    moe,
    nn,
    quant,
    random,
    shape,
    solve,
    sort,
)
from rlx_mlir.dialects.base import RlxOp

FAMILIES = {
    "elementwise": elementwise,
    "complex": complex,
    "fft": fft,
    "linalg": linalg,
    "nn": nn,
    "attention": attention,
    "conv": conv,
    "shape": shape,
    "solve": solve,
    "sort": sort,
    "quant": quant,
    "moe": moe,
    "random": random,
    "backward": backward,
    "control": control,
}

ALL_OPS: list[type[RlxOp]] = [op for module in FAMILIES.values() for op in module.OPS]
Rlx = Dialect("rlx", ALL_OPS, [])


def op_by_name(name: str) -> type[RlxOp]:
    """The op class of ``rlx.<name>`` (KeyError when unknown)."""
    for op in ALL_OPS:
        if op.name == name or op.name == f"rlx.{name}":
            return op
    raise KeyError(name)
