"""JAX-style transformations over traced Python functions: ``jit``, ``grad``,
``value_and_grad``, ``vmap`` and ``jvp``.

>>> import numpy as np, rlx_mlir as rlx
>>> @rlx.jit
... def f(x, w):
...     return rlx.nn.relu(x @ w).sum()
>>> float(f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)))
24.0

A function is traced once per input signature (tree structure, shapes, dtypes)
into an rlx module, compiled natively and cached. Arguments are numpy arrays or
pytrees of them (dicts, lists, tuples). Transformations compose: inside a trace a
transformed function is traced into its own function, transformed by the pass
(``--autodiff``, ``--vmap``, ``--jvp``) and inlined.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rlx_mlir.builder import Builder, Tensor
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import NUMPY_DTYPES
from rlx_mlir.ir import find_func, to_text

_DTYPE_NAMES = {v: k for k, v in NUMPY_DTYPES.items()}


# ---------------------------------------------------------------- pytrees


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree: ``kind`` is leaf, dict, list or tuple."""

    kind: str
    keys: tuple = ()
    children: tuple[TreeDef, ...] = ()


def flatten(tree: Any, path: str = "") -> tuple[list[tuple[str, Any]], TreeDef]:
    """``(leaves with their paths, structure)``; dicts are visited in key order."""
    if isinstance(tree, dict):
        leaves, children = [], []
        for key in sorted(tree):
            sub, d = flatten(tree[key], f"{path}.{key}" if path else str(key))
            leaves += sub
            children.append(d)
        return leaves, TreeDef("dict", tuple(sorted(tree)), tuple(children))
    if isinstance(tree, (list, tuple)):
        leaves, children = [], []
        for i, item in enumerate(tree):
            sub, d = flatten(item, f"{path}[{i}]" if path else f"[{i}]")
            leaves += sub
            children.append(d)
        return leaves, TreeDef(type(tree).__name__, (), tuple(children))
    return [(path or "x", tree)], TreeDef("leaf")


def unflatten(tree: TreeDef, leaves: list[Any]) -> Any:
    it = iter(leaves)

    def build(d: TreeDef) -> Any:
        if d.kind == "leaf":
            return next(it)
        items = [build(c) for c in d.children]
        if d.kind == "dict":
            return dict(zip(d.keys, items, strict=True))
        return tuple(items) if d.kind == "tuple" else items

    return build(tree)


def _as_array(value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)  # Python floats are f32 like JAX's default
    if array.dtype == np.int64 and not isinstance(value, np.ndarray):
        array = array.astype(np.int32)
    if array.dtype not in _DTYPE_NAMES:
        raise RlxError(f"unsupported argument dtype {array.dtype}")
    return array


def _spec(leaf: Any) -> tuple[tuple[int, ...], str]:
    if isinstance(leaf, (Tensor, _Example)):
        return leaf.shape, leaf.dtype
    array = _as_array(leaf)
    return array.shape, _DTYPE_NAMES[array.dtype]


# ---------------------------------------------------------------- tracing


@dataclass
class Traced:
    """A traced function: its module, entry name, argument paths and output structure."""

    module: ModuleOp
    name: str
    paths: list[str]
    out_tree: TreeDef

    def as_text(self) -> str:
        return to_text(self.module)

    def __str__(self) -> str:
        return self.as_text()


def trace(fn: Callable, args: Sequence[Any], name: str = "main",
          params: Sequence[int] = ()) -> Traced:
    """Trace ``fn(*args)`` into a new module; leaves of ``args[i]`` for i in ``params``
    become ``rlx.param`` arguments (what ``grad`` differentiates)."""
    leaves, tree = flatten(list(args))
    b = Builder(name)
    tensors = []
    for path, leaf in leaves:
        shape, dtype = _spec(leaf)
        top = int(path[1:path.index("]")])
        make = b.param if top in params else b.input
        tensors.append(make(path, shape, dtype))
    out = fn(*unflatten(tree, tensors))
    out_leaves, out_tree = flatten(out)
    values = []
    for _, leaf in out_leaves:
        if not isinstance(leaf, Tensor):
            leaf = b.constant(_as_array(leaf))
        values.append(leaf)
    b.ret(*values)
    return Traced(b.module, name, [p for p, _ in leaves], out_tree)


def _signature(args: Sequence[Any]) -> tuple:
    leaves, tree = flatten(list(args))
    return (tree, tuple(_spec(leaf) for _, leaf in leaves))


def _inside_trace(args: Sequence[Any]) -> Builder | None:
    leaves, _ = flatten(list(args))
    for _, leaf in leaves:
        if isinstance(leaf, Tensor):
            return leaf.builder
    return None


def _inline(builder: Builder, module: ModuleOp, entry: str, args: Sequence[Any]) -> list[Tensor]:
    """Emit ``@entry`` of ``module`` into the outer trace (constants for numpy leaves)."""
    from rlx_mlir.transforms.autodiff import mirror_prepared

    leaves, _ = flatten(list(args))
    operands = [leaf if isinstance(leaf, Tensor) else builder.constant(_as_array(leaf))
                for _, leaf in leaves]
    block = find_func(module, entry).body.block
    for extra in block.args[len(operands):]:  # the cotangent seed of a gradient function
        operands.append(builder.full(tuple(extra.type.get_shape()), 1.0, _name(extra.type)))
    return mirror_prepared(builder, block, operands)


class Transformed:
    """A traced, transformed, natively compiled function, cached per signature."""

    def __init__(self, fn: Callable, transform: Callable[[Traced, tuple], tuple[str, Any]],
                 params: Callable[[Sequence[Any]], Sequence[int]] = lambda args: (),
                 name: str | None = None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.transform = transform
        self.params = params
        self.name = name or getattr(fn, "__name__", "main").replace("<lambda>", "fn")
        self._cache: dict[tuple, tuple[Traced, str, Any, Any]] = {}

    def lower(self, *args: Any) -> Traced:
        """The rlx module (after the transformation) for these example arguments."""
        return self._prepare(args)[0]

    def _prepare(self, args: Sequence[Any]):
        key = _signature(args)
        if key not in self._cache:
            traced = trace(self.fn, args, self.name, self.params(args))
            entry, finish = self.transform(traced, args)
            self._cache[key] = (traced, entry, finish, None)
        return self._cache[key]

    def __call__(self, *args: Any) -> Any:
        traced, entry, finish, executable = self._prepare(args)
        outer = _inside_trace(args)
        if outer is not None:
            return finish(_inline(outer, traced.module, entry, args), args, traced)
        if executable is None:
            from rlx_mlir.runtime.jit import compile as jit_compile

            executable = jit_compile(traced.module, entry=entry)
            self._cache[_signature(args)] = (traced, entry, finish, executable)
        leaves, _ = flatten(list(args))
        outs = executable(*self._extra_inputs([_as_array(v) for _, v in leaves], traced, entry))
        return finish(list(outs), args, traced)

    def _extra_inputs(self, arrays: list[np.ndarray], traced: Traced, entry: str):
        f = find_func(traced.module, entry)
        extra = len(f.function_type.inputs.data) - len(arrays)
        seeds = [np.ones(tuple(t.get_shape()), NUMPY_DTYPES[_name(t)])
                 for t in list(f.function_type.inputs.data)[len(arrays):]]
        return arrays + seeds[:extra]


def _name(t) -> str:
    from rlx_mlir.dialects.base import dtype_of

    return dtype_of(t)


# ---------------------------------------------------------------- the transformations


def jit(fn: Callable) -> Transformed:
    """Trace on first call per signature, compile natively, cache."""

    def transform(traced: Traced, args: tuple):
        return traced.name, lambda outs, args, t: unflatten(t.out_tree, list(outs))

    return Transformed(fn, transform)


def _argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0) -> Transformed:
    """``(fn(*args), gradient of fn w.r.t. args[argnums])``; fn returns a scalar.

    Gradients have the pytree structure of the differentiated arguments (a tuple
    of them when ``argnums`` is a sequence).
    """
    nums = _argnums(argnums)

    def transform(traced: Traced, args: tuple):
        from rlx_mlir.transforms.autodiff import grad_with_loss

        if traced.out_tree.kind != "leaf":
            raise RlxError("value_and_grad needs a function returning one scalar tensor")
        grad_with_loss(traced.module, traced.name, zero_missing_wrt=True)

        def finish(outs, args, t):
            grads = _split_grads(outs[1:], args, nums)
            return outs[0], grads if isinstance(argnums, Sequence) else grads[0]

        return traced.name + "_grad", finish

    return Transformed(fn, transform, params=lambda args: nums)


def _split_grads(grads: list[Any], args: Sequence[Any], nums: tuple[int, ...]) -> list[Any]:
    out, position = [], 0
    for i in nums:
        leaves, tree = flatten(args[i])
        out.append(unflatten(tree, grads[position:position + len(leaves)]))
        position += len(leaves)
    return out


def grad(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The gradient of a scalar function w.r.t. ``args[argnums]`` (JAX's ``grad``)."""
    both = value_and_grad(fn, argnums)

    @functools.wraps(fn)
    def gradient(*args: Any) -> Any:
        return both(*args)[1]

    gradient.lower = both.lower  # type: ignore[attr-defined]
    return gradient


def vmap(fn: Callable, in_axes: int | None | Sequence[int | None] = 0) -> Callable:
    """Map ``fn`` over a leading batch axis of the arguments with ``in_axes == 0``
    (``None``: shared). Outputs are batched on axis 0."""

    @functools.wraps(fn)
    def batched(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, Sequence) else [in_axes] * len(args)
        sizes = {_spec(leaf)[0][0] for a, ax in zip(args, axes, strict=True) if ax == 0
                 for _, leaf in flatten(a)[0]}
        if len(sizes) != 1:
            raise RlxError(f"vmap: batched arguments disagree on the batch size: {sizes}")
        size = sizes.pop()
        return _vmapped(fn, tuple(axes), size)(*args)

    return batched


@functools.cache
def _vmapped(fn: Callable, axes: tuple, size: int) -> Transformed:
    def per_example(*args):
        return fn(*args)

    per_example.__name__ = getattr(fn, "__name__", "fn").replace("<lambda>", "fn")

    def transform(traced: Traced, args: tuple):
        from rlx_mlir.transforms.vmap import vmap as vmap_pass

        batched = [p for p in traced.paths if axes[int(p[1:p.index("]")])] == 0]
        vmap_pass(traced.module, traced.name, batched, size)
        return traced.name + "_vmap", lambda outs, args, t: unflatten(t.out_tree, list(outs))

    class _PerExample(Transformed):
        def _prepare(self, args):
            key = _signature(args)
            if key not in self._cache:
                examples = [_unbatch(a) if ax == 0 else a for a, ax in zip(args, axes,
                                                                            strict=True)]
                traced = trace(self.fn, examples, self.name)
                entry, finish = self.transform(traced, args)
                self._cache[key] = (traced, entry, finish, None)
            return self._cache[key]

    return _PerExample(per_example, transform)


def _unbatch(tree: Any) -> Any:
    leaves, structure = flatten(tree)
    return unflatten(structure, [_Example(*_spec(leaf)) for _, leaf in leaves])


@dataclass(frozen=True)
class _Example:
    """A shape-only stand-in for one example of a batched argument while tracing."""

    batched_shape: tuple[int, ...]
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.batched_shape[1:]


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(fn(*primals), J fn(primals) . tangents)`` (JAX's ``jvp``)."""
    from rlx_mlir.transforms.jvp import jvp as jvp_pass

    traced = trace(fn, primals, getattr(fn, "__name__", "fn").replace("<lambda>", "fn"),
                   params=range(len(primals)))
    jvp_pass(traced.module, traced.name)
    from rlx_mlir.runtime.jit import compile as jit_compile

    run = jit_compile(traced.module, entry=traced.name + "_jvp")
    leaves = [_as_array(v) for _, v in flatten(list(primals))[0]]
    t_leaves = [_as_array(v) for _, v in flatten(list(tangents))[0]]
    outs = run(*leaves, *t_leaves)
    n = len(outs) // 2
    return (unflatten(traced.out_tree, list(outs[:n])),
            unflatten(traced.out_tree, list(outs[n:])))
