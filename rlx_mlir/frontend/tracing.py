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
pytrees of them (dicts, lists, tuples; ``None`` is an empty subtree). Transformations
compose: inside a trace a transformed function is traced into its own function,
transformed by the pass (``--autodiff``, ``--vmap``, ``--jvp``) and inlined. A function
traced inside another trace may close over the enclosing trace's tensors: each one becomes
an extra argument (closure conversion) that the inner transformation holds constant and
the inlined call passes, so the outer transformation still sees it as a value of its own.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from rlx_mlir.builder import Builder, Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import NUMPY_DTYPES, REAL_FLOAT_DTYPES
from rlx_mlir.ir import find_func, to_text
from rlx_mlir.runtime.process_settings import collector_paused

if TYPE_CHECKING:
    from rlx_mlir.runtime.jit import Executable

_DTYPE_NAMES = {v: k for k, v in NUMPY_DTYPES.items()}


def _error(message: str) -> RlxError:
    """An :class:`RlxError` at the user's line: the call of the transformed function (or
    the line of the traced function running when it is raised)."""
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _check_callable(fn: Any, caller: str) -> None:
    """A located error for ``jit(3)`` and the like, when the transformation is made."""
    if not callable(fn):
        raise _error(f"{caller}: the function to transform must be callable; got "
                     f"{type(fn).__name__} {fn!r}")


def _check_arity(fn: Callable, args: Sequence[Any]) -> None:
    """A located error when ``fn`` cannot take ``args`` (too few or too many), before
    tracing it (the call would raise a TypeError from inside the trace)."""
    signature = python_signature(fn)
    if signature is None:
        return
    try:
        signature.bind(*args)
    except TypeError as e:
        raise _error(f"cannot call {getattr(fn, '__name__', 'the function')} with "
                     f"{len(args)} argument{'s' * (len(args) != 1)}: {e}") from None


# ---------------------------------------------------------------- pytrees


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree: ``kind`` is leaf, dict, list, tuple or none (``None``,
    an empty subtree as in JAX); ``keys`` are a dict's keys, or ``(cls,)`` for a
    namedtuple (rebuilt as ``cls``, as JAX does)."""

    kind: str
    keys: tuple = ()
    children: tuple[TreeDef, ...] = ()


def flatten(tree: Any, path: str = "") -> tuple[list[tuple[str, Any]], TreeDef]:
    """``(leaves with their paths, structure)``; dicts are visited in key order and
    ``None`` has no leaves."""
    if tree is None:
        return [], TreeDef("none")
    if isinstance(tree, dict):
        leaves, children = [], []
        keys = _sorted_keys(tree, path)
        for key in keys:
            sub, d = flatten(tree[key], f"{path}.{key}" if path else str(key))
            leaves += sub
            children.append(d)
        return leaves, TreeDef("dict", keys, tuple(children))
    if isinstance(tree, (list, tuple)):
        leaves, children = [], []
        for i, item in enumerate(tree):
            sub, d = flatten(item, f"{path}[{i}]" if path else f"[{i}]")
            leaves += sub
            children.append(d)
        if isinstance(tree, list):
            return leaves, TreeDef("list", (), tuple(children))
        return leaves, TreeDef("tuple", _namedtuple_class(tree), tuple(children))
    return [(path or "x", tree)], TreeDef("leaf")


def _sorted_keys(tree: dict, path: str = "") -> tuple:
    """A dict's keys in order (a located error when they cannot be sorted, as ``{1: a,
    "b": c}``: JAX sorts them too and refuses)."""
    try:
        return tuple(sorted(tree))
    except TypeError as e:
        raise _error(f"the keys of a dict{_at(path)} cannot be sorted ({e}); a pytree's dict "
                     f"keys must be comparable, e.g. all str: {list(tree)!r}") from None


def _namedtuple_class(tree: tuple) -> tuple:
    """``(type(tree),)`` for a namedtuple (rebuilt as one), else ``()``."""
    cls = type(tree)
    return (cls,) if cls is not tuple and hasattr(cls, "_fields") else ()


def unflatten(tree: TreeDef, leaves: list[Any]) -> Any:
    """The pytree of structure ``tree`` holding ``leaves`` (the inverse of ``flatten``)."""
    if tree.kind == "leaf":
        return leaves[0]
    return _build(tree, iter(leaves))


def _build(d: TreeDef, leaves: Iterator[Any]) -> Any:
    if d.kind == "leaf":
        return next(leaves)
    if d.kind == "none":
        return None
    items = [_build(c, leaves) for c in d.children]
    if d.kind == "dict":
        return dict(zip(d.keys, items, strict=True))
    if d.kind == "tuple":
        return d.keys[0](*items) if d.keys else tuple(items)
    return items


_TRACED = object()
"""The key of a traced Tensor leaf (never cached: such a call is inlined)."""


def _call_key(args: tuple, arrays: list[Any]) -> tuple:
    """A hashable key of what a trace of ``args`` depends on (their structure, as
    ``flatten`` sees it, and each leaf's shape and dtype), appending the leaves to
    ``arrays`` (numpy arrays as they are, other numbers through :func:`_as_array`)."""
    return tuple([_tree_key(arg, arrays) for arg in args])


def _tree_key(tree: Any, arrays: list[Any]) -> Any:
    if type(tree) is np.ndarray:
        arrays.append(tree)
        return tree.shape, tree.dtype
    if isinstance(tree, dict):
        keys = _sorted_keys(tree)
        return "dict", keys, tuple([_tree_key(tree[k], arrays) for k in keys])
    if isinstance(tree, (list, tuple)):
        return type(tree), tuple([_tree_key(item, arrays) for item in tree])
    if tree is None:
        return None
    if isinstance(tree, Tensor):
        arrays.append(tree)
        return _TRACED
    array = _as_array(tree)
    arrays.append(array)
    return (array.shape, array.dtype, "weak") if _is_weak(tree) else (array.shape, array.dtype)


def _as_array(value: Any, path: str = "") -> np.ndarray:
    """An argument leaf as a numpy array of an rlx dtype (``path`` names it in errors)."""
    try:
        array = np.asarray(value)
    except RlxError:
        raise
    except Exception as e:  # a ragged list, an object numpy cannot convert, ...
        raise _error(f"unsupported argument{_at(path)}: {type(value).__name__} "
                     f"({e})") from None
    if array.dtype.kind in "fc" and array.itemsize in (8, 16) and not isinstance(
            value, (np.ndarray, np.generic)):  # Python floats are f32 like JAX's default
        array = array.astype(np.float32 if array.dtype.kind == "f" else np.complex64)
    if array.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
        i32 = np.iinfo(np.int32)  # min and max, not abs: abs(-2**63) wraps to -2**63
        if array.size and (array.min() < i32.min or array.max() > i32.max):
            raise _error(f"the Python int {value!r}{_at(path)} does not fit int32 (Python "
                         "ints are i32 like JAX's default); pass np.int64(...) for an i64 "
                         "argument")
        array = array.astype(np.int32)
    if array.dtype not in _DTYPE_NAMES:
        what = type(value).__name__ if array.dtype.kind in "OSUV" else ""
        raise _error(f"unsupported argument dtype {array.dtype}{_at(path)}"
                     f"{f' (a {what})' if what else ''}; arguments are numpy arrays or "
                     f"numbers of dtype {', '.join(str(d) for d in _DTYPE_NAMES)}")
    return array


def _at(path: str) -> str:
    """`` at <path>`` for an argument leaf's path, if known."""
    return f" at {path}" if path else ""


def _spec(leaf: Any, path: str = "") -> tuple[tuple[int, ...], str]:
    if isinstance(leaf, (Tensor, _Example)):
        return leaf.shape, leaf.dtype
    array = _as_array(leaf, path)
    return array.shape, _DTYPE_NAMES[array.dtype]


# ---------------------------------------------------------------- tracing


@dataclass
class Traced:
    """A traced function: its module, entry name, argument paths and output structure;
    ``captures`` are the enclosing traces' tensors it closes over, in the order of the
    extra arguments that stand for them (after the ``paths`` arguments)."""

    module: ModuleOp
    name: str
    paths: list[str]
    out_tree: TreeDef
    captures: list[Tensor] = field(default_factory=list)

    def as_text(self) -> str:
        return to_text(self.module)

    def __str__(self) -> str:
        return self.as_text()


_TRACING = threading.local()  # .stack: the builders of the traces in progress, innermost last


def _active() -> list[Builder]:
    """This thread's traces in progress, outermost first."""
    if not hasattr(_TRACING, "stack"):
        _TRACING.stack = []
    return _TRACING.stack


class _Closure:
    """``Builder.capture`` of a trace: each tensor of an enclosing trace used here becomes
    (once per value) an extra ``rlx.input`` argument of this trace; a tensor of any other
    builder (a finished or inner trace's) is an error. ``outer`` is None for the outermost
    trace, which captures nothing."""

    def __init__(self, builder: Builder, outer: Builder | None):
        self.builder = builder
        self.outer = outer
        """The enclosing trace's builder (``Builder.capture``'s ``outer``)."""
        self.captures: list[Tensor] = []
        self._args: dict[SSAValue, Tensor] = {}

    def __call__(self, t: Tensor) -> Tensor:
        require_enclosing(t, self.outer)
        if t.value not in self._args:
            name = f"captured_{len(self.captures)}"
            self._args[t.value] = self.builder.input(name, t.shape, t.dtype)
            self.captures.append(t)
        return self._args[t.value]


def require_enclosing(t: Tensor, outer: Builder | None) -> None:
    """A located error unless ``t`` belongs to ``outer`` or a trace it is nested in (a
    ``Builder.capture`` hook may only capture those)."""
    if not any(t.builder.block is b.block for b in _enclosing_builders(outer)):
        raise RlxError("a traced value was used outside the trace it belongs to (it escaped "
                       "a finished trace or a control-flow body, e.g. through a global or a "
                       "closure); pass it as an argument instead",
                       loc=loc_from_attr(_user_location()))


def _enclosing_builders(builder: Builder | None) -> list[Builder]:
    """``builder`` and the builders of the traces it is nested in, innermost first."""
    chain = []
    while builder is not None:
        chain.append(builder)
        builder = getattr(builder.capture, "outer", None)
    return chain


def trace(fn: Callable, args: Sequence[Any], name: str = "main",
          params: Sequence[int] = ()) -> Traced:
    """Trace ``fn(*args)`` into a new module; leaves of ``args[i]`` for i in ``params``
    become ``rlx.param`` arguments (what ``grad`` differentiates). Inside another trace,
    tensors of the enclosing traces that ``fn`` uses become extra ``rlx.input`` arguments
    (``Traced.captures``).

    >>> rlx.trace(lambda x, y: x @ y, (a, b)).module       # doctest: +SKIP
    """
    _check_trace_call(fn, args, name, params)
    _check_arity(fn, args)
    leaves, tree = flatten(list(args))
    names = _named_by_parameter(fn, [p for p, _ in leaves])
    b = Builder(name)
    tensors = _arguments(b, leaves, params, names)
    stack = _active()
    closure = b.capture = _Closure(b, stack[-1] if stack else None)
    stack.append(b)
    try:
        out = fn(*unflatten(tree, tensors))
        out_leaves, out_tree = flatten(out)
        b.ret(*[_output_value(b, path, leaf) for path, leaf in out_leaves])
    finally:
        stack.pop()
        b.capture = None
    return Traced(b.module, name, names, out_tree, closure.captures)


def _named_by_parameter(fn: Callable, paths: list[str]) -> list[str]:
    """Leaf paths under positional argument ``i`` (``[i]``, ``[i].w``, ``[i][1]``) named
    after ``fn``'s parameter there (``x``, ``params.w``, ``xs[1]``), so a compiled function
    takes its arguments by those names and errors name them; ``[i]`` stays for ``*args``
    and functions without a signature."""
    signature = python_signature(fn)
    if signature is None:
        return paths
    positional = []
    for p in signature.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        positional.append(p.name)
    named = []
    for path in paths:
        top, rest = int(path[1:path.index("]")]), path[path.index("]") + 1:]
        named.append(positional[top] + rest if top < len(positional) else path)
    return named


def _check_trace_call(fn: Any, args: Any, name: Any, params: Any) -> None:
    """Clear errors for ``trace(fn, x, y)`` (args not gathered in a tuple) and the like."""
    if not callable(fn):
        raise _error(f"trace: fn must be callable; got {type(fn).__name__}")
    if not isinstance(args, (tuple, list)):
        raise _error(f"trace: args must be a tuple or list of the arguments, as in "
                       f"trace(fn, (x, y)); got {type(args).__name__}")
    if not isinstance(name, str):
        raise _error(f"trace: name must be a str; got {type(name).__name__} (pass the "
                       f"arguments as one tuple: trace(fn, (x, y)))")
    if not isinstance(params, (tuple, list, range)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in params):
        raise _error(f"trace: params must be a sequence of argument indices; got {params!r}")


def _arguments(b: Builder, leaves: list[tuple[str, Any]], params: Sequence[int],
               names: Sequence[str]) -> list[Tensor]:
    """One argument of ``b`` per leaf, named ``names[k]``: ``rlx.param`` for leaves of
    ``args[i]`` (path ``[i]...``), i in ``params``, else ``rlx.input``."""
    tensors = []
    for (path, leaf), name in zip(leaves, names, strict=True):
        shape, dtype = _spec(leaf)
        top = int(path[1:path.index("]")])
        make = b.param if top in params else b.input
        tensors.append(make(name, shape, dtype))
        tensors[-1].weak = _is_weak(leaf)
    return tensors


def _is_weak(leaf: Any) -> bool:
    """A Python int or float argument: weakly typed, as in JAX (``x_bf16 * lr`` stays bf16)."""
    return isinstance(leaf, (int, float)) and not isinstance(leaf, (bool, np.generic))


_NUMBERS = (np.ndarray, np.generic, bool, int, float, complex)


def _output_value(b: Builder, path: str, leaf: Any) -> Tensor:
    """An output leaf as a Tensor: numpy arrays and Python numbers become constants."""
    if isinstance(leaf, Tensor):
        return leaf
    where = "the output" if path == "x" else f"output {path}"
    if not isinstance(leaf, _NUMBERS):
        kind = type(leaf).__name__
        article = "an" if kind[0] in "aeiouAEIOU" else "a"
        raise _error(f"the traced function returned {article} {kind} at {where}; "
                       "outputs must be tensors, numpy arrays or Python numbers")
    try:
        return b.constant(_as_array(leaf))
    except RlxError:
        raise _error(f"unsupported dtype {np.asarray(leaf).dtype} at {where} "
                       "of the traced function") from None


def _signature(args: Sequence[Any]) -> tuple:
    leaves, tree = flatten(list(args))
    return (tree, tuple(_spec(leaf, path) for path, leaf in leaves),
            tuple(_is_weak(leaf) for _, leaf in leaves))


def _inside_trace(args: Sequence[Any]) -> Builder | None:
    """The builder a transformed function called with ``args`` is inlined into: the
    innermost trace in progress, else the builder of the first Tensor leaf (a hand-built
    module), else None (a native call)."""
    stack = _active()
    if stack:
        return stack[-1]
    leaves, _ = flatten(list(args))
    for _, leaf in leaves:
        if isinstance(leaf, Tensor):
            return leaf.builder
    return None


def _visible(traced: Traced) -> bool:
    """Whether every tensor ``traced`` closes over belongs to a trace in progress (a cached
    trace made inside another trace is reused only there)."""
    blocks = [b.block for b in _active()]
    return all(any(c.builder.block is block for block in blocks) for c in traced.captures)


def _inline(builder: Builder, module: ModuleOp, entry: str, leaves: Sequence[Any]
            ) -> list[Tensor]:
    """Emit ``@entry`` of ``module`` into the outer trace on its argument ``leaves``
    (constants for numpy leaves; tensors of enclosing traces are captured), op for op
    (a transformation of the outer trace prepares them itself)."""
    from rlx_mlir.transforms.autodiff import mirror_prepared

    operands = [builder.wrap(builder._value(leaf)) if isinstance(leaf, Tensor)
                else builder.constant(_as_array(leaf)) for leaf in leaves]
    block = find_func(module, entry).body.block
    for extra in block.args[len(operands):]:  # the cotangent seed of a gradient function
        operands.append(builder.full(tuple(extra.type.get_shape()), 1.0, _name(extra.type)))
    return mirror_prepared(builder, block, operands, prepare=False)


def positional(fn: Callable, args: Sequence[Any], kwargs: dict[str, Any],
               signature: inspect.Signature | None = None, through: int = 0) -> tuple:
    """``fn``'s arguments as one positional tuple (keyword arguments bound to their
    parameters, as JAX's ``jit`` traces them; defaults fill the parameters skipped before
    one given by keyword, and up to position ``through``); keyword-only parameters are an
    error. ``signature`` is ``fn``'s (:func:`python_signature`), if known.

    >>> positional(lambda x, n=2.0, scale=1.0: x, (1,), {"scale": 3.0})
    (1, 2.0, 3.0)
    """
    try:
        signature = signature or inspect.signature(fn)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise _error(f"cannot call {getattr(fn, '__name__', 'the function')}: {e}") from None
    params = list(signature.parameters.values())
    keyword_only = [p.name for p in params
                    if p.kind is p.KEYWORD_ONLY and p.name in bound.arguments]
    if keyword_only:
        raise _error("keyword-only parameters are not supported by rlx's transformations "
                     f"({', '.join(keyword_only)}): make them positional or close over them")
    extra = next((bound.arguments.get(p.name) for p in params if p.kind is p.VAR_KEYWORD), None)
    if extra:  # they would be dropped: **kwargs has no position to trace them at
        raise _error("keyword arguments that go to **kwargs are not supported by rlx's "
                     f"transformations ({', '.join(extra)}): pass them positionally, "
                     "or as static arguments (static_argnames) of jit")
    if not bound.kwargs and len(bound.args) >= through:
        return tuple(bound.args)
    given = [i + 1 for i, p in enumerate(params) if p.name in bound.arguments]
    bound.apply_defaults()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return tuple(bound.args)
    return tuple(bound.args[:max([through, len(args), *given])])


def python_signature(fn: Callable) -> inspect.Signature | None:
    """``inspect.signature(fn)`` (tens of us: computed once per function), or None when
    there is none (:func:`positional` then names the error)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


class Transformed:
    """A traced, transformed, natively compiled function, cached per signature.

    A trace of a signature is reused while every value ``fn`` reads from outside its
    arguments is the object it was traced with (:mod:`rlx_mlir.frontend.closures`), so a
    closure called again with a rebound variable is traced again, as JAX's
    transformations (which trace every call) see it. Outside any trace, ``jit``
    (``rereads`` False) does not check: as JAX's, it reads closed-over values when it
    traces."""

    def __init__(self, fn: Callable, transform: Callable[[Traced, tuple], tuple[str, Any]],
                 params: Callable[[Sequence[Any]], Sequence[int]] = lambda args: (),
                 name: str | None = None, rereads: bool = True):
        functools.update_wrapper(self, fn, updated=())  # not fn's __dict__ (its .lower)
        self.fn = fn
        self.transform = transform
        self.params = params
        self.name = name or getattr(fn, "__name__", "main").replace("<lambda>", "fn")
        self.rereads = rereads
        self._cache: dict[tuple, tuple[Traced, str, Any, Any]] = {}
        self._traced_reads: dict[tuple, tuple[Any, ...]] = {}
        """:func:`_signature` -> what ``fn``'s outside reads found when it was traced."""
        self._native: dict[Any, _NativeCall] = {}
        """:func:`_call_key` of the arguments -> their native call, outside any trace."""

    def lower(self, *args: Any, **kwargs: Any) -> Traced:
        """The rlx module (after the transformation) for these example arguments (keyword
        arguments bound to their parameters, as in a call)."""
        if kwargs:
            args = positional(self.fn, args, kwargs, self._fn_signature)
        return self._prepare(args)[0]

    def _prepare(self, args: Sequence[Any]):
        from rlx_mlir.frontend.closures import unchanged, values_now

        key, reads = _signature(args), values_now(self._outside_reads)
        if key not in self._cache or not unchanged(self._traced_reads.get(key), reads) or \
                not _visible(self._cache[key][0]):
            self._cache[key] = (*self._transformed(args), None)
            self._traced_reads[key] = reads
        return self._cache[key]

    def _transformed(self, args: Sequence[Any]) -> tuple[Traced, str, Any]:
        traced = self._trace(args)
        try:
            entry, finish = self.transform(traced, args)
        except RlxError as e:  # from the IR transformation: point at the user's call
            if e.loc is None:
                e.loc = loc_from_attr(_user_location())
            raise
        return traced, entry, finish

    @functools.cached_property
    def _outside_reads(self) -> list:
        from rlx_mlir.frontend.closures import outside_reads

        return outside_reads(self.fn)

    def _native_is_current(self, native: _NativeCall) -> bool:
        """Whether ``fn`` reads what it read when ``native`` was traced (always, for jit)."""
        from rlx_mlir.frontend.closures import unchanged, values_now

        return not self.rereads or unchanged(native.reads, values_now(self._outside_reads))

    def _trace(self, args: Sequence[Any]) -> Traced:
        """``fn`` traced for these arguments, before the transformation."""
        return trace(self.fn, args, self.name, self.params(args))

    def _operands(self, args: Sequence[Any], traced: Traced) -> list[Any]:
        """The leaves passed to the transformed entry: the arguments', then the captures."""
        return [leaf for _, leaf in flatten(list(args))[0]] + traced.captures

    @functools.cached_property
    def _fn_signature(self) -> inspect.Signature | None:
        return python_signature(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = positional(self.fn, args, kwargs, self._fn_signature)
        if not getattr(_TRACING, "stack", None):  # the common case: a native call seen before
            arrays: list[Any] = []
            native = self._native.get(_call_key(args, arrays))
            if native is not None and self._native_is_current(native):
                return native(args, arrays)
        return self._first_call(args)

    def _first_call(self, args: tuple) -> Any:
        """A call inside a trace (inlined), or the first native call of a signature."""
        with collector_paused():
            traced, entry, finish, executable = self._prepare(args)
        outer = _inside_trace(args)
        if outer is not None:
            operands = self._operands(args, traced)
            return finish(_inline(outer, traced.module, entry, operands), args, traced)
        if executable is None:
            from rlx_mlir.runtime.jit import compile as jit_compile

            executable = jit_compile(traced.module, entry=entry)
            self._cache[_signature(args)] = (traced, entry, finish, executable)
        arrays: list[Any] = []
        key = _call_key(args, arrays)
        native = _NativeCall(executable, _seeds(traced, entry, len(arrays)), finish, traced,
                             self._traced_reads.get(_signature(args), ()))
        if not traced.captures:
            self._native[key] = native
        return native(args, arrays)


def _seeds(traced: Traced, entry: str, n_leaves: int) -> tuple[np.ndarray, ...]:
    """Ones for ``entry``'s inputs after the argument leaves (a gradient's cotangent seed),
    read-only: one set is passed to every call."""
    inputs = list(find_func(traced.module, entry).function_type.inputs.data)[n_leaves:]
    seeds = tuple(np.ones(tuple(t.get_shape()), NUMPY_DTYPES[_name(t)]) for t in inputs)
    for seed in seeds:
        seed.flags.writeable = False
    return seeds


@dataclass(frozen=True)
class _NativeCall:
    """What a native call of one signature needs: the executable, the seeds passed after
    the argument leaves, and how its outputs become the result."""

    executable: Executable
    seeds: tuple[np.ndarray, ...]
    finish: Callable[[list[Any], Sequence[Any], Traced], Any]
    traced: Traced
    reads: tuple[Any, ...] = ()  # what the function's outside reads found when traced

    def __call__(self, args: Sequence[Any], arrays: list[Any]) -> Any:
        return self.finish(list(self.executable(*arrays, *self.seeds)), args, self.traced)


def _name(t) -> str:
    from rlx_mlir.dialects.base import dtype_of

    return dtype_of(t)


# ---------------------------------------------------------------- the transformations


def jit(fn: Callable, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = ()) -> Callable:
    """Trace on first call per signature, compile natively, cache. Arguments at
    ``static_argnums`` are Python values, not traced (JAX's ``static_argnums``): they must
    be hashable, and each distinct value (of a distinct type: ``2`` and ``2.0`` apart) is
    traced and compiled once (``if flag:`` works). As in JAX, numpy arrays and Python
    numbers ``fn`` closes over are read when it is traced: later changes to them are seen
    only by new traces (a new signature or static value), never by cached ones.

    ``static_argnames`` names such parameters instead (bound to their positions).

    >>> step = jit(lambda x, train: x * 2.0 if train else x, static_argnums=1)
    """

    def transform(traced: Traced, args: tuple):
        return traced.name, lambda outs, args, t: unflatten(t.out_tree, list(outs))

    _check_callable(fn, "jit")
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    keywords = _var_keyword_names(fn, names)
    if keywords:  # names that only **kwargs takes (a wrapper): bound per call
        return _KeywordStatics(fn, keywords, lambda f: jit(
            f, static_argnums, [n for n in names if n not in keywords]))
    statics = () if static_argnums == () else _argnums(static_argnums, "jit")
    statics = tuple(sorted({*statics, *_named_positions(fn, names)}))
    if not statics:
        return Transformed(fn, transform, rereads=False)
    return _StaticDispatch(fn, statics, lambda f: Transformed(f, transform, rereads=False))


def _var_keyword_names(fn: Callable, names: Sequence[str]) -> tuple[str, ...]:
    """``names`` that are not parameters of ``fn`` but go to its ``**kwargs``."""
    signature = python_signature(fn)
    if signature is None or not any(p.kind is p.VAR_KEYWORD
                                    for p in signature.parameters.values()):
        return ()
    return tuple(n for n in names if n not in signature.parameters)


class _KeywordStatics:
    """``jit`` of a ``**kwargs`` function with ``static_argnames`` among the keywords (a
    ``def wrapper(*args, **kwargs)``, as JAX allows): one jitted ``partial`` per value."""

    def __init__(self, fn: Callable, names: tuple[str, ...], make: Callable[[Callable], Any]):
        functools.update_wrapper(self, fn, updated=())
        self.fn, self.names, self.make = fn, names, make
        self._by_value: dict[tuple, Any] = {}

    def _bound(self, kwargs: dict) -> tuple[Any, dict]:
        statics = {n: kwargs[n] for n in self.names if n in kwargs}
        key = _static_key(tuple(sorted(statics.items())), statics)
        if key not in self._by_value:
            self._by_value[key] = self.make(functools.partial(self.fn, **statics))
        return self._by_value[key], {k: v for k, v in kwargs.items() if k not in statics}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jitted, rest = self._bound(kwargs)
        return jitted(*args, **rest)

    def lower(self, *args: Any, **kwargs: Any) -> Traced:
        jitted, rest = self._bound(kwargs)
        return jitted.lower(*args, **rest)


def _named_positions(fn: Callable, names: str | Sequence[str]) -> tuple[int, ...]:
    """The positions of ``fn``'s parameters called ``names`` (``static_argnames``)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    if not names:
        return ()
    signature = python_signature(fn)
    params = list(signature.parameters) if signature is not None else []
    missing = [n for n in names if n not in params]
    if missing:
        raise _error(f"jit: static_argnames {missing} are not parameters of "
                     f"{getattr(fn, '__name__', 'the function')} (its parameters: "
                     f"{', '.join(params) or 'unknown'})")
    return tuple(params.index(n) for n in names)


class _Dispatch:
    """Calls and lowers through ``_split``: the transformed function for these arguments
    (some bound as Python values) and the arguments it still takes."""

    def _split(self, args: tuple, kwargs: dict) -> tuple[Transformed, tuple]:
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        transformed, dynamic = self._split(args, kwargs)
        return transformed(*dynamic)

    def lower(self, *args: Any, **kwargs: Any) -> Traced:
        transformed, dynamic = self._split(args, kwargs)
        return transformed.lower(*dynamic)


class _StaticDispatch(_Dispatch):
    """``fn`` with its static arguments bound, one transformed function per value."""

    def __init__(self, fn: Callable, statics: tuple[int, ...],
                 make: Callable[[Callable], Transformed]):
        functools.update_wrapper(self, fn, updated=())
        self.fn, self.statics, self.make = fn, statics, make
        self._by_value: dict[tuple, Transformed] = {}

    @functools.cached_property
    def _fn_signature(self) -> inspect.Signature | None:
        return python_signature(self.fn)

    def _split(self, args: tuple, kwargs: dict) -> tuple[Transformed, tuple]:
        if kwargs or max(self.statics) >= len(args):  # statics left to their defaults
            args = positional(self.fn, args, kwargs, self._fn_signature,
                              through=max(self.statics) + 1)
        where = _resolve_argnums(self.statics, len(args), "jit: static_argnums")
        values = tuple(args[i] for i in where)
        key = (where, _static_key(values, values))
        if key not in self._by_value:
            self._by_value[key] = self.make(_bound(self.fn, dict(zip(where, values, strict=True))))
        return self._by_value[key], tuple(a for i, a in enumerate(args) if i not in where)



def _static_key(values: tuple, shown: Any) -> Any:
    """The cache key of static argument ``values`` (:func:`_typed`: 2 and 2.0, equal with
    the same hash, trace differently); a located error naming ``shown`` if unhashable."""
    try:
        hash(values)
    except TypeError:
        raise _error(f"jit: static arguments must be hashable; got {shown!r}") from None
    return _typed(values)


def _typed(value: Any) -> Any:
    """``value`` with its type (and its items', for a tuple), as a cache key: static
    arguments that compare equal but trace differently (``2``, ``2.0``, ``True``,
    ``np.float32(2)``) get their own trace, as in JAX."""
    if isinstance(value, tuple):
        return type(value), tuple([_typed(item) for item in value])
    return type(value), value


def _bound(fn: Callable, statics: dict[int, Any]) -> Callable:
    """``fn`` taking only its dynamic arguments, the static ones filled in at ``statics``."""

    @functools.wraps(fn)
    def call(*dynamic: Any) -> Any:
        rest = iter(dynamic)
        total = len(dynamic) + len(statics)
        args = [statics[i] if i in statics else next(rest) for i in range(total)]
        _check_arity(fn, args)
        return fn(*args)

    del call.__wrapped__  # trace() sees ``(*dynamic)``; the check above is against ``fn``
    return call


def _is_int(value: Any) -> bool:
    """An integer that is not a bool (JAX rejects ``True`` as an axis or argnum)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _argnums(argnums: Any, caller: str) -> tuple[int, ...]:
    """``argnums`` as a tuple of ints, checked for type (the arity is checked per call)."""
    nums = (argnums,) if not isinstance(argnums, (tuple, list)) else tuple(argnums)
    if not nums or not all(_is_int(i) for i in nums):
        raise _error(f"{caller}: argnums must be an int or a non-empty tuple of ints; "
                       f"got {argnums!r}")
    return tuple(int(i) for i in nums)


def _resolve_argnums(nums: tuple[int, ...], n_args: int, caller: str) -> tuple[int, ...]:
    """``nums`` with negative entries counted from the end, each checked against the arity."""
    bad = [i for i in nums if not -n_args <= i < n_args]
    if bad:
        raise _error(f"{caller}: argnums {bad[0]} is out of range for a function called "
                       f"with {n_args} positional argument{'s' * (n_args != 1)}")
    return tuple(i % n_args for i in nums)


def _check_scalar_output(traced: Traced, caller: str, has_aux: bool = False) -> TreeDef:
    """Raise unless the traced function returns one 0-d tensor (with ``has_aux``: a pair
    ``(scalar, aux)``), as JAX's ``grad`` does; returns the structure of ``aux``."""
    tree, aux = traced.out_tree, TreeDef("none")
    if has_aux:
        if tree.kind not in ("tuple", "list") or len(tree.children) != 2:
            raise _error(f"{caller}(has_aux=True) requires a function returning a pair "
                         f"(scalar loss, aux); it returned {_describe_tree(tree)}")
        tree, aux = tree.children
    if tree.kind != "leaf":
        raise _error(f"{caller} requires a function returning one scalar (0-d) tensor"
                     f"{' as the first of its pair' if has_aux else ''}; it returned "
                     f"{_describe_tree(tree)}")
    out_type = find_func(traced.module, traced.name).function_type.outputs.data[0]
    shape = tuple(out_type.get_shape())
    if shape:
        raise _error(f"{caller} requires a scalar (0-d) output; got shape {shape}")
    return aux


def _describe_tree(tree: TreeDef) -> str:
    return "None" if tree.kind == "none" else "a tensor" if tree.kind == "leaf" else \
        f"a {tree.kind}" + (f" of {len(tree.children)}" if tree.kind in ("tuple", "list")
                            else "")


def _leaf_count(tree: TreeDef) -> int:
    return 1 if tree.kind == "leaf" else sum(_leaf_count(c) for c in tree.children)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """``(fn(*args), gradient of fn w.r.t. args[argnums])``; fn returns a 0-d tensor (with
    ``has_aux``, a pair ``(loss, aux)``: the value is then ``(loss, aux)``, as in JAX).

    Gradients have the pytree structure of the differentiated arguments (a tuple
    of them when ``argnums`` is a sequence); negative ``argnums`` count from the end.

    >>> (loss, stats), g = rlx.value_and_grad(f, has_aux=True)(w, x)   # doctest: +SKIP
    """
    return _value_and_grad(fn, argnums, "value_and_grad", has_aux)


def _value_and_grad(fn: Callable, argnums: Any, caller: str,
                    has_aux: bool = False) -> _PythonFlags:
    _check_callable(fn, caller)
    nums = _argnums(argnums, caller)
    sequence = isinstance(argnums, (tuple, list))
    if not isinstance(has_aux, bool):
        raise _error(f"{caller}: has_aux must be a bool; got {has_aux!r}")
    return _PythonFlags(fn, nums, caller, lambda f, wrt: _gradient_of(f, wrt, sequence,
                                                                      caller, has_aux))


class _PythonFlags(_Dispatch):
    """``grad`` / ``value_and_grad`` of ``fn``: a top-level Python ``bool`` or ``str``
    argument it does not differentiate stays a Python value (bound, one trace per value),
    as JAX's ``grad`` leaves such arguments alone, so ``loss(params, x, training)`` can
    say ``if training:``."""

    def __init__(self, fn: Callable, nums: tuple[int, ...], caller: str,
                 make: Callable[[Callable, tuple[int, ...]], Transformed]):
        functools.update_wrapper(self, fn, updated=())
        self.fn, self.nums, self.caller, self.make = fn, nums, caller, make
        self._plain = make(fn, nums)
        self._by_value: dict[tuple, Transformed] = {}

    def _split(self, args: tuple, kwargs: dict) -> tuple[Transformed, tuple]:
        if kwargs:
            args = positional(self.fn, args, kwargs, python_signature(self.fn))
        wrt = _resolve_argnums(self.nums, len(args), self.caller)
        where = tuple(i for i, a in enumerate(args)
                      if i not in wrt and isinstance(a, (bool, str)))
        if not where:
            return self._plain, args
        key = (where, _typed(tuple(args[i] for i in where)))
        if key not in self._by_value:
            shifted = tuple(i - sum(w < i for w in where) for i in wrt)
            bound = _bound(self.fn, {i: args[i] for i in where})
            self._by_value[key] = self.make(bound, shifted)
        return self._by_value[key], tuple(a for i, a in enumerate(args) if i not in where)



def _gradient_of(fn: Callable, nums: tuple[int, ...], sequence: bool, caller: str,
                 has_aux: bool) -> Transformed:
    """The ``Transformed`` computing ``(value, gradients)`` of ``fn`` w.r.t. ``nums``."""

    def transform(traced: Traced, args: tuple):
        from rlx_mlir.transforms.autodiff import grad_with_loss

        aux_tree = _check_scalar_output(traced, caller, has_aux)
        n_aux = _leaf_count(aux_tree)
        grad_with_loss(traced.module, traced.name, zero_missing_wrt=True)

        def finish(outs, args, t):
            grads = _split_grads(outs[1 + n_aux:], args,
                                 _resolve_argnums(nums, len(args), caller))
            value = (outs[0], unflatten(aux_tree, list(outs[1:1 + n_aux]))) if has_aux \
                else outs[0]
            return value, tuple(grads) if sequence else grads[0]

        return traced.name + "_grad", finish

    return Transformed(fn, transform,
                       params=lambda args: _resolve_argnums(nums, len(args), caller))


def _split_grads(grads: list[Any], args: Sequence[Any], nums: tuple[int, ...]) -> list[Any]:
    """Regroup the flat gradients (in argument order) into one pytree per ``nums`` entry."""
    by_arg, position = {}, 0
    for i in sorted(set(nums)):
        leaves, tree = flatten(args[i])
        by_arg[i] = unflatten(tree, grads[position:position + len(leaves)])
        position += len(leaves)
    return [by_arg[i] for i in nums]


def grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function w.r.t. ``args[argnums]`` (JAX's ``grad``); with
    ``has_aux``, ``fn`` returns ``(loss, aux)`` and the result is ``(gradient, aux)``."""
    both = _value_and_grad(fn, argnums, "grad", has_aux)

    @functools.wraps(fn)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    gradient.lower = both.lower  # type: ignore[attr-defined]
    return gradient


AxisSpec = Any
"""An ``in_axes``/``out_axes`` entry: an int, ``None``, or a tuple, list or dict of them (a
pytree prefix: an int or ``None`` stands for every leaf of its subtree)."""


def vmap(fn: Callable, in_axes: AxisSpec = 0, out_axes: AxisSpec = 0) -> Callable:
    """Map ``fn`` over one axis of the arguments (JAX's ``vmap``).

    ``in_axes`` is an int or ``None`` for every argument, or a tuple/list with one entry per
    argument; an entry is an int (the batch axis of every leaf of that argument, negative
    counting from the end), ``None`` (shared) or a tuple/list/dict prefix of the argument's
    pytree. ``out_axes`` is a prefix of the output's pytree: where each output leaf gets the
    batch axis, or ``None`` for an output that does not depend on the batched inputs.

    >>> rlx.vmap(f, in_axes=({"w": None, "b": 0}, 0), out_axes=-1)(params, x)  # doctest: +SKIP
    """
    _check_callable(fn, "vmap")
    _check_in_axes(in_axes)
    _check_axes(out_axes, "out_axes", out_axes)
    out_key = _freeze(out_axes)

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        axes = _axes_per_argument(in_axes, len(args))
        if kwargs:
            args, axes = _keywords_batched(fn, args, kwargs, axes)
        _check_arity(fn, args)
        inner, args, axes = _python_values_bound(fn, args, axes)
        leaves = _batched_leaves(args, axes)
        moved = _move_batch_axes(args, leaves)
        flags = tuple(leaf.axis is not None for leaf in leaves)
        return _vmapped(inner, flags, _batch_size(leaves), out_axes, out_key)(*moved)

    return batched


def _keywords_batched(fn: Callable, args: tuple, kwargs: dict[str, Any],
                      axes: list) -> tuple[tuple, list]:
    """Keyword arguments bound to their parameters and batched along axis 0, as JAX's
    ``vmap`` does (``in_axes`` covers the positional ones); a default filling a parameter
    skipped before one given by keyword is not batched."""
    signature = python_signature(fn)
    bound = positional(fn, args, kwargs, signature)
    names = list(signature.parameters) if signature is not None else []
    extra = [0 if i < len(names) and names[i] in kwargs else None
             for i in range(len(args), len(bound))]
    return bound, [*axes, *extra]


_PYTHON_VALUES = (bool, str, int, float, type(None))
_STATIC_BOUND: OrderedDict[tuple, Callable] = OrderedDict()


def _python_values_bound(fn: Callable, args: tuple, axes: list) -> tuple[Callable, tuple, list]:
    """Arguments ``vmap`` does not batch (``in_axes`` None) that are Python values (a
    flag, a string, a number, None) stay Python values, as in JAX: ``fn`` with them bound
    (one trace per value), and the other arguments and axes."""
    where = tuple(i for i, (a, axis) in enumerate(zip(args, axes, strict=True))
                  if axis is None and isinstance(a, _PYTHON_VALUES))
    if not where:
        return fn, args, axes
    key = (fn, where, _typed(tuple(args[i] for i in where)))
    if key not in _STATIC_BOUND:
        _STATIC_BOUND[key] = _bound(fn, {i: args[i] for i in where})
        while len(_STATIC_BOUND) > VMAPPED_KEPT:
            _STATIC_BOUND.popitem(last=False)
    keep = [i for i in range(len(args)) if i not in where]
    return _STATIC_BOUND[key], tuple(args[i] for i in keep), [axes[i] for i in keep]


def _check_in_axes(in_axes: Any) -> None:
    """``in_axes`` at the top level is an int, ``None`` or one entry per argument."""
    if isinstance(in_axes, dict):
        raise _error("vmap: in_axes must be an int, None or a tuple/list with one entry per "
                     f"positional argument; got the dict {in_axes!r} (a dict entry is valid "
                     "inside the tuple, as the prefix of a dict argument: "
                     "in_axes=({'w': None, 'b': 0},))")
    _check_axes(in_axes, "in_axes", in_axes)


def _check_axes(spec: Any, name: str, whole: Any) -> None:
    """Raise unless every leaf of the prefix ``spec`` is an int or ``None``."""
    if isinstance(spec, (tuple, list, dict)):
        for entry in spec.values() if isinstance(spec, dict) else spec:
            _check_axes(entry, name, whole)
    elif spec is not None and not _is_int(spec):
        raise _error(f"vmap: {name} entries must be ints or None; got {spec!r} in "
                     f"{name}={whole!r} (an entry may also be a tuple, list or dict of them, "
                     "matching the structure of its value)")


def _freeze(spec: Any) -> Any:
    """A hashable form of an axis prefix (a cache key)."""
    if isinstance(spec, dict):
        return "dict", tuple((k, _freeze(spec[k])) for k in sorted(spec))
    if isinstance(spec, (tuple, list)):
        return type(spec).__name__, tuple(_freeze(s) for s in spec)
    return None if spec is None else int(spec)


def _axes_per_argument(in_axes: Any, n_args: int) -> list[AxisSpec]:
    if not isinstance(in_axes, (tuple, list)):
        return [in_axes] * n_args
    if len(in_axes) != n_args:
        raise _error(f"vmap: in_axes has {len(in_axes)} entries but the function got "
                     f"{n_args} argument{'s' * (n_args != 1)}")
    return list(in_axes)


def _prefix_axes(spec: AxisSpec, tree: TreeDef, name: str, where: str) -> list[int | None]:
    """One axis per leaf of ``tree`` from its prefix ``spec`` (JAX's tree prefixes; a tuple
    and a list of the same length match either sequence).

    >>> _prefix_axes({"a": 0, "b": None}, flatten({"a": 1, "b": (2, 3)})[1], "in_axes", "x")
    [0, None, None]
    """
    if spec is None or _is_int(spec):
        return [spec] * _leaf_count(tree)
    children = _matching_children(spec, tree)
    if children is None:
        raise _error(f"vmap: the {name} entry {spec!r} for {where} does not match its "
                     f"structure: {where} is {_describe_value(tree)} (an entry is an int, "
                     "None, or a tuple/list/dict with one entry per child)")
    return [axis for label, s, child in children
            for axis in _prefix_axes(s, child, name, f"{where}{label}")]


def _matching_children(spec: Any, tree: TreeDef) -> list[tuple[str, Any, TreeDef]] | None:
    """``(label, spec entry, subtree)`` per child when ``spec`` has ``tree``'s node type."""
    if isinstance(spec, dict) and tree.kind == "dict" and tuple(sorted(spec)) == tree.keys:
        return [(f"[{k!r}]", spec[k], c) for k, c in zip(tree.keys, tree.children, strict=True)]
    if isinstance(spec, (tuple, list)) and tree.kind in ("tuple", "list") \
            and len(spec) == len(tree.children):
        return [(f"[{i}]", s, c) for i, (s, c) in enumerate(zip(spec, tree.children,
                                                                  strict=True))]
    return None


def _describe_value(tree: TreeDef) -> str:
    if tree.kind == "dict":
        return f"a dict with keys {', '.join(repr(k) for k in tree.keys)}"
    return _describe_tree(tree).replace("a tensor", "an array")


@dataclass(frozen=True)
class _BatchedLeaf:
    """One argument leaf, its batch axis (``None``: shared) and its name in errors."""

    value: Any
    axis: int | None
    where: str


def _batched_leaves(args: Sequence[Any], axes: Sequence[AxisSpec]) -> list[_BatchedLeaf]:
    """Every argument leaf (in ``flatten(list(args))`` order) with its batch axis."""
    found = []
    for i, (arg, spec) in enumerate(zip(args, axes, strict=True)):
        leaves, tree = flatten(arg)
        per_leaf = _prefix_axes(spec, tree, "in_axes", f"argument {i}")
        found += [_BatchedLeaf(leaf, axis, _leaf_name(i, path, tree))
                  for (path, leaf), axis in zip(leaves, per_leaf, strict=True)]
    return found


def _leaf_name(i: int, path: str, tree: TreeDef) -> str:
    return f"argument {i}" if tree.kind == "leaf" else f"argument {i} (leaf {path})"


def _move_batch_axes(args: Sequence[Any], leaves: list[_BatchedLeaf]) -> list[Any]:
    """``args`` with every batched leaf's axis moved to the front (a host ``moveaxis`` for
    arrays, ``rlx.transpose`` for traced tensors)."""
    _, tree = flatten(list(args))
    return unflatten(tree, [_batch_axis_first(leaf) for leaf in leaves])


def _batch_axis_first(leaf: _BatchedLeaf) -> Any:
    if leaf.axis is None:
        return leaf.value
    rank = len(_spec(leaf.value)[0])
    if rank == 0:
        raise _error(f"vmap: {leaf.where} is 0-d and cannot be batched along axis {leaf.axis}")
    if not -rank <= leaf.axis < rank:
        raise _error(f"vmap: in_axes entry {leaf.axis} is out of range for {leaf.where} "
                     f"of rank {rank}")
    return _move_to_front(leaf.value, int(leaf.axis) % rank, rank)


def _move_to_front(leaf: Any, axis: int, rank: int) -> Any:
    if axis == 0:
        return leaf
    if isinstance(leaf, Tensor):
        return leaf.transpose([axis, *(d for d in range(rank) if d != axis)])
    return np.ascontiguousarray(np.moveaxis(_as_array(leaf), axis, 0))


def _batch_size(leaves: list[_BatchedLeaf]) -> int:
    """The common leading extent of the batched leaves (moved), or a clear error."""
    first: dict[int, str] = {}
    for leaf in leaves:
        if leaf.axis is not None:
            first.setdefault(_spec(leaf.value)[0][int(leaf.axis)], leaf.where)
    if not first:
        raise _error("vmap: no argument is batched (every in_axes entry is None)")
    if len(first) > 1:
        sizes = ", ".join(f"{where} has {size}" for size, where in first.items())
        raise _error(f"vmap: batched arguments disagree on the batch size: {sizes}")
    return next(iter(first))


_VMAPPED: OrderedDict[tuple, Transformed] = OrderedDict()
"""``(fn, batched leaves, size, frozen out_axes)`` -> its batched function, the
:data:`VMAPPED_KEPT` last used (each holds ``fn`` and its closure)."""
VMAPPED_KEPT = 64


def _vmapped(fn: Callable, flags: tuple[bool, ...], size: int, out_axes: AxisSpec,
             out_key: Any) -> Transformed:
    """``fn`` batched over the argument leaves flagged in ``flags`` (cached)."""
    key = (fn, flags, size, out_key)
    if key not in _VMAPPED:
        _VMAPPED[key] = _make_vmapped(fn, flags, size, out_axes)
        while len(_VMAPPED) > VMAPPED_KEPT:
            _VMAPPED.popitem(last=False)
    _VMAPPED.move_to_end(key)
    return _VMAPPED[key]


def _make_vmapped(fn: Callable, flags: tuple[bool, ...], size: int,
                  out_axes: AxisSpec) -> Transformed:
    def per_example(*args):
        return fn(*args)

    per_example.__name__ = getattr(fn, "__name__", "fn").replace("<lambda>", "fn")

    def transform(traced: Traced, args: tuple):
        from rlx_mlir.transforms.vmap import vmap as vmap_pass

        batched = [p for p, flag in zip(traced.paths, flags, strict=True) if flag]
        placed = _output_axes(traced, out_axes, batched)
        vmap_pass(traced.module, traced.name, batched, size)

        def finish(outs, args, t):
            return unflatten(t.out_tree, [_place(o, a) for o, a in zip(outs, placed,
                                                                        strict=True)])

        return traced.name + "_vmap", finish

    class _PerExample(Transformed):
        def _trace(self, args: Sequence[Any]) -> Traced:
            leaves, tree = flatten(list(args))
            examples = [_Example(*_spec(leaf)) if flag else leaf
                        for (_, leaf), flag in zip(leaves, flags, strict=True)]
            return trace(self.fn, unflatten(tree, examples), self.name)

    return _PerExample(per_example, transform)


def _output_axes(traced: Traced, out_axes: AxisSpec, batched: Sequence[str]
                 ) -> list[int | None]:
    """Where each output leaf gets the batch axis (normalised), checked against its rank
    and, for ``None``, against its dependence on the batched arguments."""
    tree = traced.out_tree
    axes = _prefix_axes(out_axes, tree, "out_axes", "the output")
    types = find_func(traced.module, traced.name).function_type.outputs.data
    mapped = _depends_on_batched(traced, batched)
    names = _output_names(tree)
    return [_output_axis(axis, len(t.get_shape()), m, where)
            for axis, t, m, where in zip(axes, types, mapped, names, strict=True)]


def _output_axis(axis: int | None, rank: int, mapped: bool, where: str) -> int | None:
    if axis is None:
        if mapped:
            raise _error(f"vmap: out_axes is None for {where}, but it depends on a batched "
                         "argument (None is only for outputs that are the same for every "
                         "example); give it an int out_axes")
        return None
    if not -rank - 1 <= axis <= rank:
        raise _error(f"vmap: out_axes entry {axis} is out of range for {where} of rank "
                     f"{rank} (rank {rank + 1} once batched)")
    return int(axis) % (rank + 1)


def _output_names(tree: TreeDef) -> list[str]:
    """``the output`` or ``output <path>`` per leaf of an output tree (for errors)."""
    paths = [p for p, _ in flatten(unflatten(tree, list(range(_leaf_count(tree)))))[0]]
    return ["the output" if tree.kind == "leaf" else f"output {p}" for p in paths]


def _depends_on_batched(traced: Traced, batched: Sequence[str]) -> list[bool]:
    """Per output of ``traced``: whether it depends on a ``batched`` argument, as the vmap
    pass flags values (an op is batched when an operand or a value its regions capture is)."""
    from rlx_mlir.transforms.autodiff import values_from_above

    block = find_func(traced.module, traced.name).body.block
    names = set(batched)
    tainted = {a for a, p in zip(block.args, traced.paths, strict=False) if p in names}
    for op in block.ops:
        if any(v in tainted for v in (*op.operands, *values_from_above(op))):
            tainted.update(op.results)
    return [v in tainted for v in block.last_op.operands]


def _place(out: Any, axis: int | None) -> Any:
    """A batched output (batch axis 0) with the batch axis at ``axis``, or (``None``) its
    first example."""
    if axis is None:
        return out[0] if isinstance(out, Tensor) else np.array(out[0])
    if axis == 0:
        return out
    if isinstance(out, Tensor):
        order = list(range(1, out.ndim))
        order.insert(axis, 0)
        return out.transpose(order)
    return np.moveaxis(out, 0, axis)


@dataclass(frozen=True)
class _Example:
    """A shape-only stand-in for one example of a batched argument while tracing."""

    batched_shape: tuple[int, ...]
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.batched_shape[1:]


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(fn(*primals), J fn(primals) . tangents)`` (JAX's ``jvp``).

    ``primals`` and ``tangents`` are tuples or lists whose pytrees agree in structure,
    shapes and dtypes. Called with traced tensors (inside ``jit``, ``grad``, ``vmap``, ...)
    the JVP is emitted into the enclosing trace, so the transformations compose.
    """
    _check_callable(fn, "jvp")
    _check_tangents(primals, tangents)
    return _Forward(fn, len(primals))(*primals, *tangents)


class _Forward(Transformed):
    """``fn``'s JVP as a function of ``(*primals, *tangents)`` (the ``--jvp`` pass)."""

    def __init__(self, fn: Callable, n_primals: int):
        super().__init__(fn, self._transform)
        self.n_primals = n_primals

    def _trace(self, args: Sequence[Any]) -> Traced:
        n = self.n_primals
        return trace(self.fn, args[:n], self.name, params=range(n))

    def _operands(self, args: Sequence[Any], traced: Traced) -> list[Any]:
        """``@f_jvp`` takes the primals, the captures (no tangent), then the tangents; with
        no primal leaves the pass differentiates every float input, so the captures get
        zero tangents."""
        n = self.n_primals
        primals = [leaf for _, leaf in flatten(list(args[:n]))[0]]
        operands = primals + traced.captures + [leaf for _, leaf in flatten(list(args[n:]))[0]]
        inputs = find_func(traced.module, traced.name + "_jvp").function_type.inputs.data
        zeros = [np.zeros(tuple(t.get_shape()), NUMPY_DTYPES[_name(t)])
                 for t in list(inputs)[len(operands):]]
        return operands + zeros

    @staticmethod
    def _transform(traced: Traced, args: tuple):
        from rlx_mlir.transforms.jvp import jvp as jvp_pass

        jvp_pass(traced.module, traced.name)

        def finish(outs, args, t):
            half = len(outs) // 2
            return unflatten(t.out_tree, list(outs[:half])), unflatten(t.out_tree,
                                                                       list(outs[half:]))

        return traced.name + "_jvp", finish


def _check_tangents(primals: Any, tangents: Any) -> None:
    """Raise unless ``tangents`` matches ``primals`` as JAX's ``jvp`` requires."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise _error("jvp: primals and tangents must be tuples or lists; got "
                       f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise _error(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_tree = flatten(list(primals))
    t_leaves, t_tree = flatten(list(tangents))
    if p_tree != t_tree:
        raise _error("jvp: primals and tangents must have the same pytree structure")
    for (path, p), (_, t) in zip(p_leaves, t_leaves, strict=True):
        (ps, pd), (ts, td) = _spec(p), _spec(t)
        if pd not in (*REAL_FLOAT_DTYPES, "c64", "c128"):
            raise _error(f"jvp: the primal at {path} is {pd}{list(ps)}; jvp differentiates "
                           "float primals only")
        if (ps, pd) != (ts, td):
            raise _error(f"jvp: the tangent at {path} is {td}{list(ts)} but its primal "
                           f"is {pd}{list(ps)}; they must have the same shape and dtype")
