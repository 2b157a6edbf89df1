"""Rule registries: one table per transform, filled by the op family modules.

Each family module registers, next to its ops, the rules of every op::

    @INTERPRET.register(AddOp)
    def _add(op, a, b):
        return a + b

A transform looks the rule up by op class and reports a located error when
it is missing (see :func:`Registry.lookup`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Operation

from rlx_mlir.diagnostics import RlxError


class Registry:
    """A table from op class to rule, named after the transform it serves."""

    def __init__(self, transform: str):
        self.transform = transform
        self._rules: dict[type[Operation], Callable[..., Any]] = {}

    def register(self, *op_types: type[Operation]) -> Callable[[Callable], Callable]:
        """Decorator registering one rule for one or more op classes."""

        def wrap(rule: Callable) -> Callable:
            for op_type in op_types:
                self._rules[op_type] = rule
            return rule

        return wrap

    def __contains__(self, op_type: type[Operation]) -> bool:
        return op_type in self._rules

    def get(self, op_type: type[Operation]) -> Callable[..., Any] | None:
        return self._rules.get(op_type)

    def lookup(self, op: Operation) -> Callable[..., Any]:
        """The rule of ``op``, or a located error naming the op and the transform."""
        rule = self._rules.get(type(op))
        if rule is None:
            raise RlxError(
                f"'{op.name}' has no {self.transform} rule", op=op
            )
        return rule

    def ops(self) -> list[type[Operation]]:
        return list(self._rules)


INTERPRET = Registry("interpreter")
VJP = Registry("vjp (reverse-mode autodiff)")
JVP = Registry("jvp (forward-mode autodiff)")
VMAP = Registry("vmap (batching)")
LOWER = Registry("lowering to linalg")
PREPARE_AD = Registry("prepare-for-autodiff")
"""Rewrites applied while the forward body is mirrored for AD (SPEC 4.4): inline
``rlx.if``, unroll ``rlx.while``, inline ``rlx.custom_fn`` without a vjp, put scans in
trajectory form. A rule ``(builder, op, operands) -> results`` emits the replacement."""

ALL_REGISTRIES = {
    "interpret": INTERPRET,
    "vjp": VJP,
    "jvp": JVP,
    "vmap": VMAP,
    "lower": LOWER,
}


def no_gradient(ctx: Any, op: Operation, *cotangents: Any) -> list[None]:
    """VJP/JVP rule of a non-differentiable op (compare, stop_gradient, constant...)."""
    return [None] * len(op.operands)
