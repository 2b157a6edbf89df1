"""What a Python function reads from outside its arguments, so that a cached trace of it
is dropped when one of those names is rebound (``grad(loss)`` where ``loss`` reads a
global batch that the training loop reassigns).

JAX's ``grad`` and ``vmap`` retrace on every call, so they always see the current
values; rlx compiles a transformed function once per signature, and checks instead, per
call, that every value the function could read is still the object it traced with:
its closure cells, the globals its code (and the code of functions nested in it) names,
a bound method's instance attributes, followed through the functions found there.
In-place changes (``x[:] = ...``) keep the object and are not seen: pass data that
changes as an argument.

>>> reads = outside_reads(loss)                          # doctest: +SKIP
>>> unchanged(values_now(reads), values_now(reads))         # doctest: +SKIP
True
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

DEPTH = 3
"""How many functions deep the reads are followed (a ``vmap`` wrapper, the user's
function, and a helper it calls)."""

MAX_READS = 512
"""Reads followed at most (the first ones found: the function's own come first)."""

LIBRARIES = ("rlx_mlir", "numpy", "jax", "torch", "ml_dtypes", "builtins")
"""Functions of these packages are not followed (what they read is not the user's)."""

Read = tuple[Any, Any]
"""``(cell, None)``, ``(namespace dict, name)``."""

_MISSING = object()


def outside_reads(fn: Callable, depth: int = DEPTH) -> list[Read]:
    """Where ``fn`` reads values from outside its arguments (see the module docstring)."""
    reads: list[Read] = []
    _visit(fn, depth, reads, set())
    return reads


def values_now(reads: list[Read]) -> tuple[Any, ...]:
    """The objects the reads find now (held, so that none is freed and its id reused)."""
    return tuple(_current(read) for read in reads)


def unchanged(before: tuple[Any, ...] | None, now: tuple[Any, ...]) -> bool:
    """Every read finds the very object it found ``before``."""
    return before is not None and len(before) == len(now) and all(
        a is b for a, b in zip(before, now, strict=True))


def _current(read: Read) -> Any:
    where, name = read
    if name is None:
        try:
            return where.cell_contents
        except ValueError:  # an empty cell (a name assigned after the function was made)
            return _MISSING
    return where.get(name, _MISSING)


def _visit(fn: Any, depth: int, reads: list[Read], seen: set[int]) -> None:
    if id(fn) in seen or depth < 0 or len(reads) >= MAX_READS:
        return
    seen.add(id(fn))
    if inspect.ismethod(fn):
        instance = getattr(fn.__self__, "__dict__", None)
        if isinstance(instance, dict):
            reads.extend((instance, name) for name in instance)
            for value in list(instance.values()):
                _follow(value, depth - 1, reads, seen)
        fn = fn.__func__
    if isinstance(fn, functools.partial):
        for value in (fn.func, *fn.args, *fn.keywords.values()):
            _follow(value, depth - 1, reads, seen)
        return
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return
    for cell in fn.__closure__ or ():
        reads.append((cell, None))
        _follow(_current((cell, None)), depth - 1, reads, seen)
    namespace = getattr(fn, "__globals__", None)
    if isinstance(namespace, dict):
        for name in sorted(_global_names(code)):
            if name in namespace:
                reads.append((namespace, name))
                _follow(namespace[name], depth - 1, reads, seen)


def _follow(value: Any, depth: int, reads: list[Read], seen: set[int]) -> None:
    """Functions found among the values read are read through too (not the libraries')."""
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and module.split(".")[0] in LIBRARIES and \
            not getattr(value, "__qualname__", "").startswith("_make_vmapped"):
        return
    if inspect.isfunction(value) or inspect.ismethod(value) or \
            isinstance(value, functools.partial):
        _visit(value, depth, reads, seen)
    elif callable(value) and hasattr(value, "fn") and inspect.isfunction(
            getattr(value, "fn", None)):  # a transformed function (Transformed.fn)
        _visit(value.fn, depth, reads, seen)


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code nested in it (lambdas, comprehensions) look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
