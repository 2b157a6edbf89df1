"""Structured control flow in traced functions, with jax.lax's signatures: ``scan``,
``cond``, ``while_loop`` and ``fori_loop``, emitted as ``rlx.scan``, ``rlx.if`` and
``rlx.while``.

>>> import numpy as np, rlx_mlir as rlx
>>> def loss(w, h0, xs):
...     step = lambda h, x: (rlx.nn.tanh(h @ w + x), None)   # closes over the weight w
...     h, _ = rlx.scan(step, h0, xs)
...     return h.sum()
>>> w, h0, xs = np.eye(3, dtype=np.float32), np.zeros(3, np.float32), np.ones((5, 3), np.float32)
>>> rlx.grad(loss)(w, h0, xs).shape
(3, 3)

Bodies are Python functions of (pytrees of) tensors, traced once into the op's region.
A tensor of an enclosing trace that a body uses (a weight) is closure-converted into an
operand of the op: a broadcast input of ``rlx.scan``, a captured operand of ``rlx.if``,
a value from above for ``rlx.while``; so ``grad`` differentiates it and ``vmap`` batches
it. ``rlx.scan`` and ``rlx.while`` carry one tensor: a carry with several leaves (and
scan's per-step outputs ``ys``) is packed into one 1-d vector, in f64 when the leaves'
dtypes differ (exact for f32, f64, f16, bf16, i8, i32 and bool), and ``ys`` are read
from the saved trajectory of that vector. Called outside any trace, each function is
traced and compiled natively on the spot (like jax.lax outside ``jit``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region, SSAValue

from rlx_mlir.builder import Builder, Tensor, _user_location, innermost
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import tensor
from rlx_mlir.frontend.tracing import (
    _DTYPE_NAMES,
    TreeDef,
    _active,
    _as_array,
    flatten,
    jit,
    require_enclosing,
    unflatten,
)

__all__ = ["cond", "fori_loop", "scan", "while_loop"]


def _error(message: str) -> RlxError:
    """An RlxError located at the user's line."""
    return RlxError(message, loc=loc_from_attr(_user_location()))


# ---------------------------------------------------------------- leaves


@dataclass(frozen=True)
class Spec:
    """The shape and dtype of one leaf."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    @property
    def type(self) -> TensorType:
        return tensor(self.shape, self.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


_WEAK_KINDS = {bool: ("i1",), int: ("i8", "i32", "i64", "f32", "f64", "f16", "bf16"),
               float: ("f32", "f64", "f16", "bf16", "c64", "c128")}


def _spec(leaf: Any, like: str | None = None) -> Spec:
    """A leaf's spec; a Python number takes the dtype ``like`` when it can (JAX's weak
    types: ``0.0`` next to an f64 carry is f64), else its default (f32, i32)."""
    if isinstance(leaf, Tensor):
        return Spec(leaf.shape, leaf.dtype)
    if like in _WEAK_KINDS.get(type(leaf), ()):
        return Spec((), like)
    array = _as_array(leaf)
    return Spec(array.shape, _DTYPE_NAMES[array.dtype])


def _is_leaf_value(leaf: Any) -> bool:
    return isinstance(leaf, (Tensor, np.ndarray, np.generic, bool, int, float))


def _check_leaf(leaf: Any, where: str, caller: str) -> None:
    if not _is_leaf_value(leaf):
        raise _error(f"{caller}: {where} is a {type(leaf).__name__}; expected a tensor, a "
                     "numpy array or a Python number")
    if not isinstance(leaf, Tensor) and np.asarray(leaf).dtype not in _DTYPE_NAMES:
        raise _error(f"{caller}: {where} has the unsupported dtype {np.asarray(leaf).dtype}")


def _tensor(b: Builder, leaf: Any, dtype: str | None = None) -> Tensor:
    """``leaf`` as a tensor of ``b``: a tensor of an enclosing trace is captured, a numpy
    array or Python number becomes a constant (of ``dtype`` when given)."""
    if isinstance(leaf, Tensor):
        return b.wrap(b._value(leaf))
    if dtype is not None:
        return b.constant(np.asarray(leaf), dtype)
    return b.constant(_as_array(leaf))


def _inputs(b: Builder, tree: Any, what: str, caller: str) -> tuple[list[Tensor], TreeDef]:
    """The leaves of an input pytree as tensors of ``b``, and its structure."""
    leaves, treedef = flatten(tree, what)
    for path, leaf in leaves:
        _check_leaf(leaf, path, caller)
    return [_tensor(b, leaf) for _, leaf in leaves], treedef


def _describe(tree: TreeDef) -> str:
    if tree.kind in ("leaf", "none"):
        return "a single array" if tree.kind == "leaf" else "None"
    return f"a {tree.kind} of {len(tree.children)}"


def _specs_of(leaves: Sequence[Tensor]) -> list[Spec]:
    return [Spec(t.shape, t.dtype) for t in leaves]


def _target(*trees: Any) -> Builder | None:
    """The builder an op goes into: the innermost trace in progress, else the innermost
    builder of the tensors given (a hand-built module), else None (no trace: run eagerly)."""
    stack = _active()
    if stack:
        return stack[-1]
    tensors = [leaf for tree in trees for _, leaf in flatten(tree)[0]
               if isinstance(leaf, Tensor)]
    return innermost(*tensors) if tensors else None


def _check_callable(caller: str, **functions: Any) -> None:
    for name, fn in functions.items():
        if not callable(fn):
            raise _error(f"{caller}: {name} must be callable; got {type(fn).__name__} {fn!r}")


# ---------------------------------------------------------------- bodies


class _Capture:
    """``Builder.capture`` of a body being traced. A tensor of an enclosing trace becomes
    a new block argument (``explicit``; the tensors are recorded in ``tensors``) or is
    used from above (an ``rlx.while`` region may do that). ``outer`` is the builder the op
    goes into (``nesting_depth`` and ``innermost`` follow it)."""

    def __init__(self, builder: Builder, outer: Builder, explicit: bool):
        self.builder, self.outer, self.explicit = builder, outer, explicit
        self.tensors: list[Tensor] = []
        self._args: dict[SSAValue, Tensor] = {}

    def __call__(self, t: Tensor) -> Tensor:
        require_enclosing(t, self.outer)
        if not self.explicit:
            return self.outer.wrap(self.outer._value(t))
        if t.value not in self._args:
            block = self.builder.block
            self._args[t.value] = self.builder.wrap(block.insert_arg(t.type, len(block.args)))
            self.tensors.append(t)
        return self._args[t.value]


@dataclass
class _Body:
    """A Python function (``name``) traced into a scratch block: the block's arguments
    are its argument leaves, then the stand-ins of the tensors it captured; ``out`` is
    what it returned."""

    block: Block
    builder: Builder
    capture: _Capture
    out: Any
    name: str

    def outputs(self, tree: Any, what: str, caller: str) -> tuple[list[Any], TreeDef]:
        """The leaves of the output subtree ``tree``: tensors (captured when they belong to
        an enclosing trace) and Python numbers / numpy arrays as they are."""
        leaves, treedef = flatten(tree, what)
        for path, leaf in leaves:
            _check_leaf(leaf, f"the leaf {path} that {self.name} returned", caller)
        return [self.builder.wrap(self.builder._value(leaf)) if isinstance(leaf, Tensor)
                else leaf for _, leaf in leaves], treedef


def _trace_body(target: Builder, fn: Callable, name: str, args: Sequence[Any],
                explicit: bool) -> _Body:
    """Trace ``fn(*args)`` (``args``: pytrees of Specs) into a scratch block whose builder
    is the innermost trace meanwhile, so nested transformations and control flow go in."""
    leaves, tree = flatten(list(args))
    block = Block(arg_types=[spec.type for _, spec in leaves])
    builder = Builder.appending_to(block)
    capture = _Capture(builder, target, explicit)
    builder.capture = capture
    stack = _active()
    stack.append(builder)
    try:
        out = fn(*unflatten(tree, [builder.wrap(a) for a in block.args]))
    finally:
        stack.pop()
    return _Body(block, builder, capture, out, name)


Prologue = Callable[[Builder, list[Tensor]], list[Tensor]]
Epilogue = Callable[[Builder, Callable[[Any, str | None], Tensor]], list[Tensor]]


def _region(body: _Body, arg_types: Sequence[TensorType], prologue: Prologue,
            epilogue: Epilogue) -> Region:
    """The op's region: ``prologue(b, args)`` gives a stand-in for each argument of the
    scratch block, the traced ops follow, and the region yields ``epilogue(b, local)``,
    where ``local(leaf, dtype)`` makes an output leaf a tensor of the region."""
    block = Block(arg_types=list(arg_types))
    b = Builder.appending_to(block)
    stand_ins = prologue(b, [b.wrap(a) for a in block.args])
    for op in list(body.block.ops):
        body.block.detach_op(op)
        block.add_op(op)
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(body.block.args, stand_ins, strict=True):
        old.replace_all_uses_with(new.value)
        mapping[old] = new.value

    def local(leaf: Any, dtype: str | None = None) -> Tensor:
        if isinstance(leaf, Tensor):
            return b.wrap(mapping.get(leaf.value, leaf.value))
        return _tensor(b, leaf, dtype)

    b.emit("yield", *epilogue(b, local))
    return Region(block)


def _check_carry(caller: str, name: str, leaves: Sequence[Any], tree: TreeDef,
                 want_tree: TreeDef, want: Sequence[Spec], what: str) -> None:
    """Raise unless the returned carry has the structure, shapes and dtypes of ``what``."""
    if tree != want_tree:
        raise _error(f"{caller}: {name} must return a carry with the structure of {what} "
                     f"({_describe(want_tree)}); got {_describe(tree)}")
    paths = [p for p, _ in flatten(unflatten(want_tree, list(want)), what)[0]]
    for path, leaf, spec in zip(paths, leaves, want, strict=True):
        got = _spec(leaf, spec.dtype)
        if got != spec:
            raise _error(f"{caller}: {name} returned {got} for the carry leaf {path}, which "
                         f"is {spec}; the carry must keep its shape and dtype")


# ---------------------------------------------------------------- packing


_EXACT_IN_F64 = ("f32", "f64", "f16", "bf16", "i1", "i8", "i32")


@dataclass(frozen=True)
class _Packing:
    """Tensors of ``specs`` carried as one: the only leaf itself, or a 1-d vector of all
    leaves flattened and converted to ``dtype`` (rlx.scan and rlx.while carry one tensor)."""

    specs: tuple[Spec, ...]
    dtype: str

    @classmethod
    def of(cls, specs: Sequence[Spec], caller: str, what: str) -> _Packing:
        dtypes = sorted({s.dtype for s in specs})
        if not specs:
            raise _error(f"{caller}: {what} is empty; rlx needs at least one array to carry")
        if len(dtypes) == 1:
            return cls(tuple(specs), dtypes[0])
        if all(d in (*_EXACT_IN_F64, "i64") for d in dtypes):
            return cls(tuple(specs), "f64")
        if all(d in (*_EXACT_IN_F64, "i64", "c64", "c128") for d in dtypes):
            return cls(tuple(specs), "c128")  # real leaves as the real parts
        raise _error(f"{caller}: the leaves of {what} have the dtypes {', '.join(dtypes)}; "
                     "rlx carries one tensor, so they are packed into one vector, which is "
                     "exact for mixed f32, f64, f16, bf16, i64, i32, i8, bool, c64 and c128 "
                     "leaves only")

    @property
    def single(self) -> bool:
        return len(self.specs) == 1

    def lanes(self, spec: Spec) -> int:
        """Elements of the packed vector holding ``spec``'s leaf: an i64 leaf among others
        takes two per element (its high and low 32 bits, each exact in f64)."""
        return spec.size * (2 if spec.dtype == "i64" and not self.single else 1)

    @property
    def type(self) -> TensorType:
        if self.single:
            return self.specs[0].type
        return tensor((sum(self.lanes(s) for s in self.specs),), self.dtype)

    def pack(self, b: Builder, leaves: Sequence[Tensor]) -> Tensor:
        if self.single:
            return leaves[0]
        flat = [_reshaped(b, _converted(b, part, self.dtype), (s.size,))
                for x, s in zip(leaves, self.specs, strict=True) for part in _words(x)]
        return flat[0] if len(flat) == 1 else b.concat(*flat, axis=0)

    def unpack(self, b: Builder, packed: Tensor, rows: tuple[int, ...] = (),
               which: Sequence[int] | None = None) -> list[Tensor]:
        """Leaves ``which`` (default: all) of ``packed``, a ``[*rows, N]`` tensor: each
        leaf gets the ``rows`` axes in front."""
        which = range(len(self.specs)) if which is None else which
        if self.single:
            return [packed for _ in which]
        starts = np.cumsum([0, *(self.lanes(s) for s in self.specs)])
        return [self._leaf(b, packed, rows, int(starts[i]), self.specs[i]) for i in which]

    def _leaf(self, b: Builder, packed: Tensor, rows: tuple[int, ...], start: int,
              spec: Spec) -> Tensor:
        def read(at: int) -> Tensor:
            part = b.narrow(packed, axis=len(rows), start=at, length=spec.size)
            return _converted(b, _reshaped(b, part, (*rows, *spec.shape)), spec.dtype)

        if spec.dtype == "i64" and not self.single:
            return read(start) * np.int64(2**32) + read(start + spec.size)
        return read(start)


def _words(x: Tensor) -> list[Tensor]:
    """``[x]``, or an i64 ``x`` as ``[x >> 32, x & 0xFFFFFFFF]`` (each exact in f64)."""
    if x.dtype != "i64":
        return [x]
    high = x // np.int64(2**32)
    return [high, x - high * np.int64(2**32)]


def _converted(b: Builder, x: Tensor, dtype: str) -> Tensor:
    """``x`` as ``dtype``: ``rlx.cast`` between reals; a real into complex as its real part
    and back (values the packing holds exactly)."""
    if x.dtype == dtype:
        return x
    if dtype in ("c64", "c128") or x.dtype in ("c64", "c128"):
        real = x.real if dtype not in ("c64", "c128") else x
        return real.astype(dtype)
    return b.cast(x, dtype)


def _reshaped(b: Builder, x: Tensor, shape: tuple[int, ...]) -> Tensor:
    return x if x.shape == shape else b.reshape(x, shape)


# ---------------------------------------------------------------- scan


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1, *, num_checkpoints: int = 0
         ) -> tuple[Any, Any]:
    """``jax.lax.scan``: ``carry = init; for x in xs: carry, y = f(carry, x)``; returns
    ``(carry, ys)`` with ``ys`` the stacked ``y`` (``None`` when ``f`` returns no ``y``).

    ``init``, ``xs`` and ``ys`` are pytrees; ``f`` may close over tensors of the trace (a
    weight gets its gradient). ``num_checkpoints=K`` (0 < K < length) stores only K
    carries for the backward pass and recomputes the rest (only without ``ys``, which are
    read from the stored carries). ``unroll`` is accepted and ignored.

    >>> # h, hs = rlx.scan(lambda h, x: (rlx.nn.tanh(h @ w + x),) * 2, h0, xs)
    """
    _check_callable("scan", f=f)
    return _scan("scan", "f", f, init, xs, length, reverse, _checkpoints(num_checkpoints))


def _scan(caller: str, name: str, f: Callable, init: Any, xs: Any, length: int | None,
          reverse: bool, num_checkpoints: int, init_name: str = "init") -> tuple[Any, Any]:
    target = _target(init, xs)
    if target is None:
        return jit(lambda init, xs: _scan(caller, name, f, init, xs, length, reverse,
                                          num_checkpoints, init_name))(init, xs)
    carry, carry_tree = _inputs(target, init, init_name, caller)
    steps, x_tree = _inputs(target, xs, "xs", caller)
    n = _scan_length(caller, steps, xs, length)
    _check_checkpoints(caller, num_checkpoints, n)
    if reverse:
        steps = [_flip(x) for x in steps]
    step_specs = [Spec(x.shape[1:], x.dtype) for x in steps]
    body = _trace_body(target, f, name, [unflatten(carry_tree, _specs_of(carry)),
                                         unflatten(x_tree, step_specs)], explicit=True)
    plan = _ScanPlan.of(caller, body, carry_tree, _specs_of(carry), init_name)
    if plan.ys and num_checkpoints not in (0, n):
        raise _error(f"{caller}: num_checkpoints={num_checkpoints} needs {name} to return no "
                     "per-step outputs (y = None): ys are read from the carries saved at "
                     "every step")
    out = target._emit_with_regions(
        "scan", [plan.packing.pack(target, carry + plan.init_extras(target)),
                 *body.capture.tensors, *steps],
        [plan.region(body, step_specs)], length=n, num_xs=len(steps) or None,
        save_trajectory=bool(plan.ys) or None, num_checkpoints=num_checkpoints or None)
    final, ys = plan.results(target, out, n)
    if reverse:
        ys = [_flip(y) for y in ys]
    return unflatten(carry_tree, final), unflatten(plan.y_tree, ys)


def _scan_length(caller: str, steps: Sequence[Tensor], xs: Any, length: int | None) -> int:
    """The common leading extent of the ``xs`` leaves (and ``length``), checked."""
    paths = [p for p, _ in flatten(xs, "xs")[0]]
    extents = {}
    for path, x in zip(paths, steps, strict=True):
        if not x.shape:
            raise _error(f"{caller}: {path} is 0-d; every xs leaf needs a leading axis to "
                         "scan over")
        extents.setdefault(x.shape[0], path)
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
            raise _error(f"{caller}: length must be an int; got {length!r}")
        extents.setdefault(int(length), "length")
    if len(extents) > 1:
        raise _error(f"{caller}: the scanned lengths disagree: " + ", ".join(
            f"{where} has {n}" for n, where in extents.items()))
    if not extents:
        raise _error(f"{caller}: give xs or length (there is nothing to scan over)")
    n = next(iter(extents))
    if n < 1:
        raise _error(f"{caller}: length {n} is not supported (rlx.scan runs at least one step)")
    return n


def _checkpoints(k: Any) -> Any:
    """``num_checkpoints`` as a Python int (left as is when it is not an integer)."""
    return int(k) if isinstance(k, np.integer) else k


def _check_checkpoints(caller: str, k: Any, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise _error(f"{caller}: num_checkpoints must be an int in [0, length = {n}]; "
                     f"got {k!r}")


def _flip(x: Tensor) -> Tensor:
    """``x`` reversed along axis 0 (a gather, so it is differentiable and batchable)."""
    n = x.shape[0]
    return x if n == 1 else x[np.arange(n - 1, -1, -1)]


@dataclass
class _ScanPlan:
    """How a traced scan body is laid out on ``rlx.scan``'s one carry: ``packing`` holds
    the carry leaves, then the ``y`` leaves that are not a carry leaf (``y_slots[i]`` is
    the packed leaf that y leaf ``i`` is read from)."""

    packing: _Packing
    n_carry: int
    carry_out: list[Any]
    ys: list[Any]
    y_tree: TreeDef
    y_slots: list[int]

    @classmethod
    def of(cls, caller: str, body: _Body, carry_tree: TreeDef, specs: list[Spec],
           init_name: str) -> _ScanPlan:
        out = body.out
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise _error(f"{caller}: {body.name} must return a pair (carry, y), with y None "
                         f"for no per-step output; got {type(out).__name__}"
                         + (f" of {len(out)}" if isinstance(out, (tuple, list)) else ""))
        carry_out, tree = body.outputs(out[0], "carry", caller)
        _check_carry(caller, body.name, carry_out, tree, carry_tree, specs, init_name)
        ys, y_tree = body.outputs(out[1], "y", caller)
        slots, extra = _y_slots(carry_out, ys, len(specs))
        packing = _Packing.of([*specs, *(_spec(ys[i]) for i in extra)], caller,
                              "the carry and per-step outputs")
        return cls(packing, len(specs), carry_out, ys, y_tree, slots)

    @property
    def extra(self) -> list[int]:
        """Indices of the y leaves packed after the carry."""
        return [i for i, slot in enumerate(self.y_slots) if slot >= self.n_carry]

    def init_extras(self, b: Builder) -> list[Tensor]:
        """Zeros for the y slots of the initial packed carry (never read)."""
        return [b.full(s.shape, 0, s.dtype) for s in self.packing.specs[self.n_carry:]]

    def region(self, body: _Body, step_specs: Sequence[Spec]) -> Region:
        caps = [c.type for c in body.capture.tensors]
        n_caps = len(caps)

        def prologue(b: Builder, args: list[Tensor]) -> list[Tensor]:
            carry = self.packing.unpack(b, args[0], which=range(self.n_carry))
            return [*carry, *args[1 + n_caps:], *args[1:1 + n_caps]]

        def epilogue(b: Builder, local) -> list[Tensor]:
            outs = [local(leaf, s.dtype) for leaf, s in zip(self.carry_out, self.packing.specs,
                                                             strict=False)]
            outs += [local(self.ys[i]) for i in self.extra]
            return [self.packing.pack(b, outs)]

        types = [self.packing.type, *caps, *(s.type for s in step_specs)]
        return _region(body, types, prologue, epilogue)

    def results(self, b: Builder, out: Tensor, n: int) -> tuple[list[Tensor], list[Tensor]]:
        """The final carry leaves and the stacked ys from the scan's result."""
        carry = range(self.n_carry)
        if not self.ys:
            return self.packing.unpack(b, out, which=carry), []
        last = b.reshape(b.narrow(out, axis=0, start=n - 1, length=1), out.shape[1:])
        return (self.packing.unpack(b, last, which=carry),
                self.packing.unpack(b, out, rows=(n,), which=self.y_slots))


def _y_slots(carry_out: Sequence[Any], ys: Sequence[Any], n_carry: int
             ) -> tuple[list[int], list[int]]:
    """Each y leaf's packed slot: the carry leaf it is (``return h, h`` stores ``h`` once),
    else a new slot after the carry; and the indices of the y leaves given new slots."""
    carry_of = {leaf.value: i for i, leaf in enumerate(carry_out) if isinstance(leaf, Tensor)}
    slots, extra = [], []
    for i, y in enumerate(ys):
        if isinstance(y, Tensor) and y.value in carry_of:
            slots.append(carry_of[y.value])
        else:
            slots.append(n_carry + len(extra))
            extra.append(i)
    return slots, extra


# ---------------------------------------------------------------- cond


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``jax.lax.cond``: ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    ``pred`` is a scalar bool; both branches return the same pytree of shapes and dtypes
    and may close over tensors of the trace. Under ``grad`` and ``vmap`` both branches are
    evaluated and selected (``rlx.where``).

    >>> # y = rlx.cond(x.sum() > 0, lambda x: x * w, lambda x: -x, x)
    """
    _check_callable("cond", true_fun=true_fun, false_fun=false_fun)
    target = _target(pred, list(operands))
    if target is None:
        return jit(lambda p, *ops: cond(p, true_fun, false_fun, *ops))(pred, *operands)
    p = _predicate(target, pred)
    leaves, tree = _inputs(target, list(operands), "operands", "cond")
    args = unflatten(tree, _specs_of(leaves))
    bodies = [_trace_body(target, fn, name, args, explicit=True)
              for fn, name in ((true_fun, "true_fun"), (false_fun, "false_fun"))]
    outs = [body.outputs(body.out, "output", "cond") for body in bodies]
    specs = _branch_specs(outs)
    captures = _union_captures(bodies)
    types = [t.type for t in [*leaves, *captures]]
    regions = [_branch_region(body, types, len(leaves), captures, leaves_out, specs)
               for body, (leaves_out, _) in zip(bodies, outs, strict=True)]
    results = target._emit_with_regions("if", [p, *leaves, *captures], regions,
                                        out=[s.type for s in specs])
    results = list(results) if isinstance(results, tuple) else [results]
    return unflatten(outs[0][1], results)


def _predicate(b: Builder, pred: Any) -> Tensor:
    """``pred`` as a scalar i1 tensor of ``b`` (an integer scalar is ``pred != 0``, as in
    JAX), or a clear error."""
    _check_leaf(pred, "pred", "cond")
    spec = _spec(pred)
    if spec.shape == () and spec.dtype in ("i8", "i32", "i64"):
        return _tensor(b, pred, spec.dtype) != 0
    if spec != Spec((), "i1"):
        hint = " (compare it, e.g. pred > 0)" if spec.dtype != "i1" and not spec.shape else ""
        raise _error(f"cond: pred must be a scalar boolean or integer; got {spec}{hint}")
    return _tensor(b, pred)


def _branch_specs(outs: Sequence[tuple[list[Any], TreeDef]]) -> list[Spec]:
    """The common output specs of both branches (a Python number takes the other
    branch's dtype), or a clear error."""
    (true_leaves, true_tree), (false_leaves, false_tree) = outs
    if true_tree != false_tree:
        raise _error("cond: true_fun and false_fun must return the same pytree structure; "
                     f"got {_describe(true_tree)} and {_describe(false_tree)}")
    specs = []
    paths = [p for p, _ in flatten(unflatten(true_tree, list(true_leaves)), "output")[0]]
    for path, t, f in zip(paths, true_leaves, false_leaves, strict=True):
        st, sf = _spec(t, _spec(f).dtype), _spec(f, _spec(t).dtype)
        if st != sf:
            raise _error(f"cond: true_fun and false_fun must return the same shapes and "
                         f"dtypes; at {path} true_fun returned {st} and false_fun {sf}")
        specs.append(st)
    return specs


def _union_captures(bodies: Sequence[_Body]) -> list[Tensor]:
    """Every tensor that either branch captures, once, in order of first capture."""
    seen: dict[SSAValue, Tensor] = {}
    for body in bodies:
        for t in body.capture.tensors:
            seen.setdefault(t.value, t)
    return list(seen.values())


def _branch_region(body: _Body, types: Sequence[TensorType], n_operands: int,
                   captures: Sequence[Tensor], outs: Sequence[Any], specs: Sequence[Spec]
                   ) -> Region:
    """A branch of ``rlx.if``: it takes the operands and every branch's captures."""
    position = {t.value: n_operands + i for i, t in enumerate(captures)}

    def prologue(b: Builder, args: list[Tensor]) -> list[Tensor]:
        mine = [args[position[t.value]] for t in body.capture.tensors]
        return [*args[:n_operands], *mine]

    def epilogue(b: Builder, local) -> list[Tensor]:
        return [local(leaf, s.dtype) for leaf, s in zip(outs, specs, strict=True)]

    return _region(body, types, prologue, epilogue)


# ---------------------------------------------------------------- while / fori


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *,
               max_iterations: int | None = None) -> Any:
    """``jax.lax.while_loop``: ``val = init_val; while cond_fun(val): val = body_fun(val)``.

    ``cond_fun`` returns a scalar bool; ``body_fun`` returns a pytree like ``init_val``.
    ``max_iterations`` (an rlx extension) stops the loop after that many steps and makes
    it differentiable (autodiff runs that many steps as a scan, each masked by
    ``cond_fun``); without it
    ``grad`` is an error, as in JAX.

    >>> # i, x = rlx.while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))
    """
    _check_callable("while_loop", cond_fun=cond_fun, body_fun=body_fun)
    if max_iterations is not None and (isinstance(max_iterations, bool) or not isinstance(
            max_iterations, (int, np.integer)) or max_iterations < 0):
        raise _error(f"while_loop: max_iterations must be None or an int >= 0; "
                     f"got {max_iterations!r}")
    bound = None if max_iterations is None else int(max_iterations)
    return _while("while_loop", cond_fun, body_fun, init_val, bound)


def _while(caller: str, cond_fun: Callable, body_fun: Callable, init_val: Any,
           max_iterations: int | None) -> Any:
    target = _target(init_val)
    if target is None:
        return jit(lambda v: _while(caller, cond_fun, body_fun, v, max_iterations))(init_val)
    leaves, tree = _inputs(target, init_val, "init_val", caller)
    specs = _specs_of(leaves)
    packing = _Packing.of(specs, caller, "the loop state")
    args = [unflatten(tree, specs)]
    test = _trace_body(target, cond_fun, "cond_fun", args, explicit=False)
    step = _trace_body(target, body_fun, "body_fun", args, explicit=False)
    pred = _loop_predicate(caller, test)
    state, state_tree = step.outputs(step.out, "init_val", caller)
    _check_carry(caller, "body_fun", state, state_tree, tree, specs, "init_val")

    def prologue(b: Builder, args: list[Tensor]) -> list[Tensor]:
        return packing.unpack(b, args[0])

    regions = [_region(test, [packing.type], prologue, lambda b, local: [local(pred, "i1")]),
               _region(step, [packing.type], prologue, lambda b, local: [packing.pack(
                   b, [local(v, s.dtype) for v, s in zip(state, specs, strict=True)])])]
    out = target._emit_with_regions("while", [packing.pack(target, leaves)], regions,
                                    max_iterations=max_iterations)
    return unflatten(tree, packing.unpack(target, out))


def _loop_predicate(caller: str, test: _Body) -> Any:
    leaves, tree = test.outputs(test.out, "result", caller)
    spec = _spec(leaves[0]) if tree.kind == "leaf" else None
    if spec != Spec((), "i1"):
        got = str(spec) if spec is not None else _describe(tree)
        raise _error(f"{caller}: cond_fun must return a scalar boolean; got {got}")
    return leaves[0]


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: Any = None, num_checkpoints: int = 0) -> Any:
    """``jax.lax.fori_loop``: ``val = init_val; for i in range(lower, upper):
    val = body_fun(i, val)``.

    With Python (or numpy) int bounds it is an ``rlx.scan`` over the indices, so it is
    differentiable (``num_checkpoints`` as for :func:`scan`); with traced bounds it is a
    ``while_loop`` (not differentiable, as in JAX). ``unroll`` is accepted and ignored.

    >>> # x = rlx.fori_loop(0, 5, lambda i, x: x * w + i, x0)
    """
    _check_callable("fori_loop", body_fun=body_fun)
    if isinstance(lower, Tensor) or isinstance(upper, Tensor):
        if num_checkpoints:
            raise _error("fori_loop: num_checkpoints needs int bounds (with traced bounds "
                         "the loop is an rlx.while)")
        return _fori_while(lower, upper, body_fun, init_val)
    index = _indices(lower, upper)
    if not index.size:
        return init_val
    if index.size > FORI_INDEX_ARRAY_MAX and index.dtype == np.int32:
        return _fori_counted(int(lower), index.size, body_fun, init_val, num_checkpoints)
    carry, _ = _scan("fori_loop", "body_fun", lambda c, i: (body_fun(i, c), None), init_val,
                     index, None, False, _checkpoints(num_checkpoints), "init_val")
    return carry


FORI_INDEX_ARRAY_MAX = 1024
"""A ``fori_loop`` of more i32 steps scans over indices computed at run time (an exclusive
``cumsum`` of ones) instead of a constant ``arange(lower, upper)`` of every index, which
made 10^7 steps trace for 11 s in 860 MB."""


def _fori_counted(lower: int, steps: int, body_fun: Callable, init_val: Any,
                  num_checkpoints: int) -> Any:
    """:func:`fori_loop` over ``lower + cumsum(ones(steps), exclusive)``."""
    target = _target(init_val)
    if target is None:
        return jit(lambda init: _fori_counted(lower, steps, body_fun, init,
                                              num_checkpoints))(init_val)
    ones = target.full((steps,), 1, "i32")
    index = target.cumsum(ones, axis=0, exclusive=True) + np.int32(lower)
    carry, _ = _scan("fori_loop", "body_fun", lambda c, i: (body_fun(i, c), None), init_val,
                     index, None, False, _checkpoints(num_checkpoints), "init_val")
    return carry


def _indices(lower: Any, upper: Any) -> np.ndarray:
    """``arange(lower, upper)`` in the bounds' dtype (Python ints are i32, as in JAX)."""
    for name, bound in (("lower", lower), ("upper", upper)):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise _error(f"fori_loop: {name} must be an int or an integer scalar tensor; "
                         f"got {bound!r}")
    dtype = np.result_type(_as_array(lower), _as_array(upper))
    return np.arange(int(lower), int(upper), dtype=dtype)


def _fori_while(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    target = _target(lower, upper, init_val)
    for name, bound in (("lower", lower), ("upper", upper)):
        if not isinstance(bound, (Tensor, int, np.integer)) or isinstance(bound, bool):
            raise _error(f"fori_loop: {name} must be an int or an integer scalar tensor; "
                         f"got {bound!r}")
    kinds = {_spec(b).dtype for b in (lower, upper) if isinstance(b, Tensor)}
    shapes = {_spec(b).shape for b in (lower, upper) if isinstance(b, Tensor)}
    if len(kinds) != 1 or not kinds <= {"i32", "i64"} or shapes != {()}:
        raise _error("fori_loop: traced bounds must be integer scalars of one dtype; got "
                     + " and ".join(str(_spec(b)) for b in (lower, upper)))
    dtype = kinds.pop()
    lo, hi = _tensor(target, lower, dtype), _tensor(target, upper, dtype)
    _, out = _while("fori_loop", lambda s: s[0] < hi,
                    lambda s: (s[0] + 1, body_fun(s[0], s[1])), (lo, init_val), None)
    return out
