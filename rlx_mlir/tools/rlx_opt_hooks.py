"""Stages of ``rlx-opt`` that are not xDSL passes (they print text, not a module).

A hook is ``fn(stage_spec, module, args) -> str | None``; a string becomes the
printed output (``--lower-to-llvm`` prints LLVM-dialect text, ``--check-grads``
a report).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

STAGE_HOOKS: dict[str, Callable[[str, Any, Any], str | None]] = {}
