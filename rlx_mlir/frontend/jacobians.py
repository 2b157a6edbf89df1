"""Whole Jacobians and Hessians, JAX's ``jacfwd``, ``jacrev`` and ``hessian``, built from
``jvp`` / ``grad`` batched with ``vmap`` (one traced derivative for every basis vector).

>>> import numpy as np, rlx_mlir as rlx
>>> f = lambda x: rlx.nn.tanh(x) * x.sum()
>>> rlx.jacfwd(f)(np.ones(3)).shape, rlx.hessian(lambda x: (x ** 3).sum())(np.ones(2)).shape
((3, 3), (2, 2))

Arguments and outputs are pytrees of float arrays, as in JAX: the Jacobian of output leaf
``o`` with respect to argument leaf ``a`` has shape ``o.shape + a.shape``, and the result
is the output's pytree holding, per output leaf, the differentiated argument's pytree (a
tuple of them when ``argnums`` is a tuple). All the argument leaves are differentiated in
one batched ``jvp`` (``jacfwd``) or one batched gradient (``jacrev``). Called outside a
trace, the whole computation is compiled natively.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor
from rlx_mlir.dialects.base import COMPLEX_DTYPES, NUMPY_DTYPES, REAL_FLOAT_DTYPES
from rlx_mlir.frontend.tracing import (
    TreeDef,
    _active,
    _argnums,
    _as_array,
    _at,
    _check_callable,
    _describe_tree,
    _error,
    _leaf_count,
    _resolve_argnums,
    _spec,
    flatten,
    grad,
    jit,
    jvp,
    unflatten,
    vmap,
)

__all__ = ["hessian", "jacfwd", "jacrev", "vjp"]

Spec = tuple[tuple[int, ...], str]
"""A leaf's shape and rlx dtype."""


def jacfwd(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fn`` by forward mode: one ``jvp`` per argument element, batched.
    With ``has_aux``, ``fn`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``.
    With ``holomorphic`` (complex arguments and outputs, as JAX's), the complex derivative.

    >>> J = rlx.jacfwd(lambda p: p["w"] * p["b"])({"w": w, "b": b})  # doctest: +SKIP
    >>> J["w"].shape == w.shape + w.shape                            # doctest: +SKIP
    """
    return _jacobian(fn, argnums, has_aux, "jacfwd", _forward_blocks, holomorphic)


def jacrev(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fn`` by reverse mode: one gradient per output element, batched.
    With ``has_aux``, ``fn`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``.
    With ``holomorphic`` (complex arguments and outputs, as JAX's), the complex derivative.

    >>> Jx, Jy = rlx.jacrev(lambda x, y: x * y, argnums=(0, 1))(x, y)  # doctest: +SKIP
    """
    return _jacobian(fn, argnums, has_aux, "jacrev", _reverse_blocks, holomorphic)


def hessian(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar ``fn``: ``jacfwd(jacrev(fn))`` (forward over reverse); for a
    dict argument ``p``, ``H[k1][k2]`` has shape ``p[k1].shape + p[k2].shape``.

    >>> H = rlx.hessian(lambda x: (x ** 3).sum())(np.ones(2))   # doctest: +SKIP
    """
    inner = _jacobian(fn, argnums, has_aux, "hessian", _reverse_blocks, holomorphic)
    return _jacobian(inner, argnums, has_aux, "hessian", _forward_blocks, holomorphic)


Blocks = list[list[Any]]
"""``blocks[o][j]``: the Jacobian of output leaf ``o`` w.r.t. differentiated leaf ``j``."""


def _jacobian(fn: Callable, argnums: Any, has_aux: Any, caller: str,
              method: Callable[[_Problem], Blocks], holomorphic: Any = False) -> Callable:
    _check_callable(fn, caller)
    nums = _argnums(argnums, caller)
    for name, flag in (("has_aux", has_aux), ("holomorphic", holomorphic)):
        if not isinstance(flag, bool):
            raise _error(f"{caller}: {name} must be a bool; got {flag!r}")
    sequence = isinstance(argnums, (tuple, list))

    def jacobian(*args: Any) -> Any:
        if not _active():
            return compiled(*args)
        picked = _resolve_argnums(nums, len(args), caller)
        problem = _problem(fn, args, picked, has_aux, caller, holomorphic)
        found = problem.assemble(method(problem), picked, sequence)
        return (found, problem.aux) if has_aux else found

    jacobian.__name__ = f"{caller}_{getattr(fn, '__name__', 'fn')}".replace("<lambda>", "fn")
    compiled = jit(jacobian)
    return jacobian


@dataclass
class _Problem:
    """A Jacobian in flat form: ``fn`` as a function of the differentiated leaves ``xs``
    (those of ``args[i]`` for i in ``unique``, of structures ``trees``) to its output
    leaves, of structure ``out_tree`` and specs ``outs``; ``aux`` as ``fn`` returned it."""

    fn: Callable
    args: tuple
    unique: tuple[int, ...]
    trees: list[TreeDef]
    xs: list[Tensor]
    out_tree: TreeDef
    outs: list[Spec]
    aux: Any
    has_aux: bool
    caller: str
    holomorphic: bool = False

    def outputs(self, *xs: Any) -> list[Any]:
        """The output leaves of ``fn`` with ``xs`` in place of the differentiated leaves."""
        args, position = list(self.args), 0
        for i, tree in zip(self.unique, self.trees, strict=True):
            n = _leaf_count(tree)
            args[i] = unflatten(tree, list(xs[position:position + n]))
            position += n
        out, _ = _split_aux(self.fn(*args), self.has_aux, self.caller)
        return [leaf for _, leaf in flatten(out)[0]]

    @property
    def specs(self) -> list[Spec]:
        return [(x.shape, x.dtype) for x in self.xs]

    def zeros(self) -> Blocks:
        """Every block zero (nothing to differentiate, or an empty output)."""
        b = _active()[-1]
        return [[b.constant(np.zeros((*o, *x), NUMPY_DTYPES[dtype])) for x, dtype in self.specs]
                for o, _ in self.outs]

    def assemble(self, blocks: Blocks, picked: tuple[int, ...], sequence: bool) -> Any:
        """The output's pytree of (per ``argnums`` entry) the argument's pytree of blocks."""
        starts = dict(zip(self.unique, _offsets([_leaf_count(t) for t in self.trees]),
                          strict=True))
        trees = dict(zip(self.unique, self.trees, strict=True))

        def per_argument(row: list[Any], i: int) -> Any:
            return unflatten(trees[i], row[starts[i]:starts[i] + _leaf_count(trees[i])])

        per_output = [tuple(per_argument(row, i) for i in picked) if sequence
                      else per_argument(row, picked[0]) for row in blocks]
        return unflatten(self.out_tree, per_output)


def _problem(fn: Callable, args: tuple, picked: tuple[int, ...], has_aux: bool,
             caller: str, holomorphic: bool) -> _Problem:
    """Check and flatten the differentiated arguments and ``fn``'s output at ``args``."""
    unique = tuple(dict.fromkeys(picked))
    trees, xs = [], []
    for i in unique:
        leaves, tree = flatten(args[i])
        trees.append(tree)
        xs += [_float_tensor(leaf, f"the differentiated argument {i}"
                             f"{_at(path) if tree.kind != 'leaf' else ''}", caller, holomorphic)
               for path, leaf in leaves]
    out, aux = _split_aux(fn(*args), has_aux, caller)
    leaves, out_tree = flatten(out)
    outs = [_float_spec(leaf, f"the output{_at(path) if out_tree.kind != 'leaf' else ''}",
                        caller, holomorphic) for path, leaf in leaves]
    return _Problem(fn, args, unique, trees, xs, out_tree, outs, aux, has_aux, caller,
                    holomorphic)


def _split_aux(out: Any, has_aux: bool, caller: str) -> tuple[Any, Any]:
    """``(output, aux)`` of ``fn``'s result (``aux`` None without ``has_aux``)."""
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise _error(f"{caller}(has_aux=True) requires a function returning a pair "
                     f"(output, aux); it returned {_describe_tree(flatten(out)[1])}")
    return out[0], out[1]


def _float_spec(leaf: Any, what: str, caller: str, holomorphic: bool = False) -> Spec:
    """A leaf's spec: a real float one, or with ``holomorphic`` a complex one (JAX's rule)."""
    shape, dtype = _spec(leaf)
    if holomorphic and dtype not in COMPLEX_DTYPES:
        raise _error(f"{caller}(holomorphic=True): {what} must be a complex array; got {dtype}")
    if not holomorphic and dtype not in REAL_FLOAT_DTYPES:
        hint = (" (for the complex derivative of a holomorphic function pass "
                "holomorphic=True)" if dtype in COMPLEX_DTYPES else "")
        raise _error(f"{caller}: {what} must be a float array; got {dtype}{hint}")
    return shape, dtype


def _float_tensor(leaf: Any, what: str, caller: str, holomorphic: bool = False) -> Tensor:
    """A differentiated leaf as a float (or complex) Tensor of the innermost trace."""
    _float_spec(leaf, what, caller, holomorphic)
    return leaf if isinstance(leaf, Tensor) else _active()[-1].constant(_as_array(leaf))


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _offsets(sizes: Sequence[int]) -> list[int]:
    """Where each of ``sizes`` starts in their concatenation."""
    return [int(s) for s in np.cumsum([0, *sizes])[:-1]]


def _basis(specs: Sequence[Spec]) -> list[np.ndarray]:
    """The unit vectors of the leaves ``specs`` taken as one flat vector of N elements:
    ``[N, *shape]`` per leaf, the identity on its own rows and zero elsewhere."""
    sizes = [_size(shape) for shape, _ in specs]
    total = sum(sizes)
    found = []
    for (shape, dtype), n, start in zip(specs, sizes, _offsets(sizes), strict=True):
        rows = np.zeros((total, n), NUMPY_DTYPES[dtype])
        rows[start:start + n] = np.eye(n, dtype=rows.dtype)
        found.append(rows.reshape((total, *shape)))
    return found


def _rows(batched: Tensor, start: int, n: int) -> Tensor:
    """Rows ``start:start + n`` of a batched result."""
    return batched if n == batched.shape[0] else batched[start:start + n]


def _forward_blocks(p: _Problem) -> Blocks:
    """Every block from one ``vmap`` of ``jvp`` over the unit vectors of all the ``xs``."""
    specs = p.specs
    sizes = [_size(shape) for shape, _ in specs]
    if not sum(sizes) or not sum(_size(o) for o, _ in p.outs):
        return p.zeros()
    columns = vmap(lambda ts: jvp(p.outputs, p.xs, ts)[1])(_basis(specs))
    return [[_forward_block(column, o, x, start, n)
             for (x, _), start, n in zip(specs, _offsets(sizes), sizes, strict=True)]
            for column, (o, _) in zip(columns, p.outs, strict=True)]


def _forward_block(column: Tensor, out: tuple[int, ...], x: tuple[int, ...], start: int,
                   n: int) -> Tensor:
    """``[*out, *x]`` from the ``[N, *out]`` JVPs (rows ``start:start + n`` are ``x``'s)."""
    flat = _rows(column, start, n).reshape((n, _size(out)))
    return flat.T.reshape((*out, *x))


def _reverse_blocks(p: _Problem) -> Blocks:
    """Every block from one ``vmap`` of ``grad`` over the unit vectors of all the outputs."""
    sizes = [_size(o) for o, _ in p.outs]
    if not sum(sizes) or not sum(_size(x) for x, _ in p.specs):
        return p.zeros()
    wrt = tuple(range(len(p.xs)))

    def row(cotangents: list[Tensor]) -> tuple:
        grads = grad(lambda *xs: _dot(p.outputs(*xs), cotangents, p.holomorphic),
                     argnums=wrt)(*p.xs)
        # holomorphic: the gradient of Re(f_j) is conj(f_j') / 2 (SPEC 5.9's convention)
        return tuple(g.conj() * 2 for g in grads) if p.holomorphic else grads

    rows = vmap(row)(_basis(p.outs))
    return [[_rows(r, start, n).reshape((*o, *x.shape)) for r, x in zip(rows, p.xs, strict=True)]
            for (o, _), start, n in zip(p.outs, _offsets(sizes), sizes, strict=True)]


def _dot(outs: Sequence[Any], cotangents: Sequence[Tensor], real_part: bool = False) -> Tensor:
    """``sum(<out, cotangent>)`` over the output leaves (in f64 if any of them is; its real
    part with ``real_part``)."""
    terms = [(ct * out).sum() for out, ct in zip(outs, cotangents, strict=True)]
    if real_part:
        terms = [t.real for t in terms]
    dtype = "f64" if any(t.dtype == "f64" for t in terms) else "f32"
    return functools.reduce(operator.add, [t.astype(dtype) for t in terms])


def vjp(fn: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fn(*primals), vjp_fn)`` (JAX's ``vjp``): ``vjp_fn(cotangent)`` is the tuple of
    ``cotangent . J`` with respect to each primal (each with its primal's pytree), where
    ``cotangent`` has the output's pytree, shapes and dtypes. With ``has_aux``, ``fn``
    returns ``(output, aux)`` and the result is ``(output, vjp_fn, aux)``. Real float
    outputs; each call of ``vjp_fn`` is one gradient of ``sum(output * cotangent)``
    (compiled once per signature, the forward recomputed).

    >>> y, pull = rlx.vjp(lambda w, x: x @ w, w, x)              # doctest: +SKIP
    >>> dw, dx = pull(np.ones_like(y))                            # doctest: +SKIP
    """
    _check_callable(fn, "vjp")
    if not isinstance(has_aux, bool):
        raise _error(f"vjp: has_aux must be a bool; got {has_aux!r}")
    if not primals:
        raise _error("vjp: needs at least one primal argument")
    out = fn(*primals)
    if has_aux and not (isinstance(out, tuple) and len(out) == 2):
        raise _error("vjp: with has_aux, fn must return a pair (output, aux)")
    value, aux = out if has_aux else (out, None)
    leaves, tree = flatten(value, "output")
    specs = [_spec(leaf, path) for path, leaf in leaves]
    for (path, _), (_, dtype) in zip(leaves, specs, strict=True):
        if dtype not in REAL_FLOAT_DTYPES:
            raise _error(f"vjp: {path} is {dtype}; vjp takes real float outputs (jacrev "
                         "takes complex ones)")
    count = len(primals)

    def inner_product(*args: Any) -> Any:
        result = fn(*args[:count])
        flat = [leaf for _, leaf in flatten(result[0] if has_aux else result)[0]]
        cotangents = [leaf for _, leaf in flatten(args[count])[0]]
        return functools.reduce(operator.add, [(y * c).sum() for y, c in
                                               zip(flat, cotangents, strict=True)])

    pullback = grad(inner_product, argnums=tuple(range(count)))

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        _check_cotangent(cotangent, tree, specs)
        return pullback(*primals, cotangent)

    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _check_cotangent(cotangent: Any, tree: TreeDef, specs: list[Spec]) -> None:
    """A located error unless ``cotangent`` has the output's structure, shapes, dtypes."""
    leaves, got = flatten(cotangent, "cotangent")
    if got != tree:
        raise _error(f"vjp: the cotangent is {_describe_tree(got)}; the output is "
                     f"{_describe_tree(tree)}")
    for (path, leaf), (shape, dtype) in zip(leaves, specs, strict=True):
        have = _spec(leaf, path)
        if have != (shape, dtype):
            raise _error(f"vjp: {path} has shape {list(have[0])} and dtype {have[1]}; the "
                         f"output has {list(shape)} and {dtype}")
