"""Neural-network functions for traced code (``rlx_mlir.jit`` and friends).

>>> import rlx_mlir as rlx
>>> @rlx.jit
... def mlp(params, x):
...     h = rlx.nn.relu(x @ params["w1"] + params["b1"])
...     return rlx.nn.softmax(h @ params["w2"])

Each function emits the matching ``rlx`` op into the trace its arguments belong to (the
innermost one when they mix a closure's tensors with an enclosing trace's).
"""

from __future__ import annotations

import builtins
import functools
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from rlx_mlir.builder import Builder, Tensor, _floor, _user_location, innermost
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import COMPLEX_DTYPES, FLOAT_DTYPES, REAL_FLOAT_DTYPES
from rlx_mlir.dialects.base import NUMPY_DTYPES as _NUMPY_OF


def _b(*xs: Tensor | None) -> Builder:
    """The builder to emit into: the innermost of the tensor operands' (``None`` and
    numbers are skipped), so a closure may mix its tensors with an enclosing trace's."""
    return innermost(*xs)


def _like(x: Tensor, *values: Tensor | np.ndarray | float | None) -> list:
    """``values`` with each numpy array or number made a constant of ``x``'s dtype (as
    ``x + array`` does) when ``x`` is a tensor; tensors and None as they are."""
    if not isinstance(x, Tensor):
        return list(values)
    return [v if v is None or isinstance(v, Tensor) else x._lift(v) for v in values]


def _traced_among(x: Tensor | np.ndarray | float, *others: object) -> Tensor | np.ndarray:
    """``x`` as a tensor when it is a numpy array or number next to traced ``others`` (a
    constant of their innermost trace, in the first one's dtype, as ``_like`` lifts);
    otherwise as it is. ``conv2d(data, w)`` with closed-over data and traced weights.

    >>> _traced_among(np.ones(3), w)   # doctest: +SKIP
    """
    traced = [o for o in others if isinstance(o, Tensor)]
    if isinstance(x, Tensor) or not traced:
        return x
    return traced[0]._lift(np.asarray(x))


def _same_float(*xs: Tensor | None) -> list:
    """Traced float operands of one op at their common dtype (f32 with f64 is f64, as
    ``x @ w``); others as they are."""
    floats = {x.dtype for x in xs if isinstance(x, Tensor) and x.dtype in REAL_FLOAT_DTYPES}
    if len(floats) < 2:
        return list(xs)
    common = _common_inexact(floats)
    return [x.astype(common) if isinstance(x, Tensor) and x.dtype in floats else x for x in xs]


def _integer(value: object) -> object:
    """A 0-d integer numpy array (what an eager call makes of ``np.int64(4)``) as an int;
    anything else as it is."""
    if isinstance(value, (np.ndarray, np.generic)) and np.shape(value) == () and \
            np.asarray(value).dtype.kind in "iu":
        return int(value)
    return value


def _inexact(x: Tensor) -> Tensor:
    """An integer or bool tensor as f32 (JAX promotes them so for ``exp``, ``tanh``, ...)."""
    return x.astype("f32") if isinstance(x, Tensor) and x.dtype in (
        "i1", "i8", "i32", "i64") else x


def relu(x: Tensor) -> Tensor:
    return _b(x).relu(x)


def gelu(x: Tensor, approximate: bool | str = False) -> Tensor:
    """GELU: exact (``x * Phi(x)``) or, with ``approximate`` True (JAX's spelling) or
    ``"tanh"`` (PyTorch's; ``"none"`` is exact), the tanh form."""
    if isinstance(approximate, str):
        if approximate not in ("none", "tanh"):
            raise RlxError(f"gelu: approximate={approximate!r} must be 'none' or 'tanh' "
                           "(or a bool)", loc=loc_from_attr(_user_location()))
        approximate = approximate == "tanh"
    x = _inexact(x)
    return _b(x).gelu_approx(x) if approximate else _b(x).gelu(x)


def _float_function(name: str, op: str, doc: str):
    """``rlx.nn.<name>``: the elementwise ``rlx.<op>`` of a float tensor (integer and bool
    tensors as f32, as ``jnp.exp`` promotes them)."""
    def fn(x: Tensor) -> Tensor:
        x = _inexact(x)
        return getattr(_b(x), op)(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


silu = _float_function("silu", "silu", "``x * sigmoid(x)``.")
sigmoid = _float_function("sigmoid", "sigmoid", "``1 / (1 + exp(-x))``.")
tanh = _float_function("tanh", "tanh", "Hyperbolic tangent.")
exp = _float_function("exp", "exp", "``e ** x``.")
log = _float_function("log", "log", "Natural logarithm.")
sqrt = _float_function("sqrt", "sqrt", "Square root.")
sin = _float_function("sin", "sin", "Sine.")
cos = _float_function("cos", "cos", "Cosine.")
tan = _float_function("tan", "tan", "Tangent.")
arctan = _float_function("arctan", "atan", "Arc tangent (``jnp.arctan``).")
rsqrt = _float_function("rsqrt", "rsqrt", "``1 / sqrt(x)``.")


def abs(x: Tensor) -> Tensor:  # noqa: A001  (jax.numpy's name)
    """``|x|``; for a complex tensor the modulus ``sqrt(re^2 + im^2)``, as f32."""
    return builtins.abs(x)


# ---------------------------------------------------------------- complex (c64)


def complex(re: Tensor, im: Tensor | float = 0.0) -> Tensor:  # noqa: A001 (lax.complex)
    """``re + i im`` as a c64 tensor (``jax.lax.complex``); the parts broadcast.

    >>> rlx.nn.complex(np.float32([1, 2]), np.float32([3, 4]))  # doctest: +SKIP
    array([1.+3.j, 2.+4.j], dtype=complex64)
    """
    re, im = _pair(re, im)
    if re.dtype in ("c64", "c128"):
        raise RlxError("complex(re, im) takes real parts; got a complex tensor (for z + i w "
                       "write z + 1j * w)", loc=loc_from_attr(_user_location()))
    part = "f64" if re.dtype == "f64" else "f32"
    return _b(re, im).complex(re.astype(part), im.astype(part))


def real(z: Tensor) -> Tensor:
    """The real part (f32) of a complex tensor (``jnp.real``)."""
    return z.real


def imag(z: Tensor) -> Tensor:
    """The imaginary part (f32) of a complex tensor (``jnp.imag``)."""
    return z.imag


def conj(z: Tensor) -> Tensor:
    """The complex conjugate ``re - i im`` (``jnp.conj``)."""
    _b(z)  # a list is an error naming np.asarray
    return z.conj()


def complex_norm_sq(z: Tensor) -> Tensor:
    """``|z|^2 = re^2 + im^2`` as f32: the real loss surface of a complex model. Its
    gradient is ``z`` (SPEC 5.9: rlx's complex cotangents are ``dL/d conj(z)``)."""
    b = _b(z)  # a list is an error naming np.asarray
    return b.complex_norm_sq(z) if z.dtype in ("c64", "c128") else z * z


def log1p(x: Tensor) -> Tensor:
    """``log(1 + x)``, accurate for small ``x`` (where ``log(1.0 + x)`` loses its digits).

    >>> rlx.nn.log1p(np.float32(1e-10))                     # doctest: +SKIP
    """
    if isinstance(x, Tensor) and x.dtype in ("c64", "c128"):
        return log(1.0 + x)  # complex: numpy's value (without the small-|x| refinement)
    return _log1p(x)


def floor(x: Tensor) -> Tensor:
    """The largest integer ``<= x`` (integers as they are); a zero gradient, as JAX's."""
    _real_only("floor", x)
    return _floor(x) if x.dtype in REAL_FLOAT_DTYPES else x


def ceil(x: Tensor) -> Tensor:
    """The smallest integer ``>= x``; a zero gradient."""
    _real_only("ceil", x)
    return -_floor(-x) if x.dtype in REAL_FLOAT_DTYPES else x


def _real_only(name: str, x: Tensor) -> None:
    if isinstance(x, Tensor) and x.dtype in ("c64", "c128"):
        raise RlxError(f"{name}: complex numbers are not ordered (got {x.dtype}); apply it "
                       "to .real and .imag", loc=loc_from_attr(_user_location()))


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 in ``x``'s dtype (NaN stays NaN); a zero gradient, as JAX's. Complex:
    ``z / |z|`` (0 at 0), as numpy 2's."""
    if isinstance(x, Tensor) and x.dtype in ("c64", "c128"):
        magnitude = abs(x)
        unit = x / where(magnitude == 0, 1.0, magnitude).astype(x.dtype)
        return stop_gradient(where(magnitude == 0, x * 0, unit))
    signs = where(x > 0, 1, where(x < 0, -1, x * 0))
    return stop_gradient(signs)


def clip(x: Tensor, lower: Tensor | float | None = None,
         upper: Tensor | float | None = None) -> Tensor:
    """``np.clip``: ``min(max(x, lower), upper)`` (either bound may be None)."""
    _real_only("clip", x)
    if lower is not None:
        x = maximum(x, lower)
    return x if upper is None else minimum(x, upper)


def _log1p(u: Tensor) -> Tensor:
    """``log(1 + u)`` accurate for small ``u >= 0`` (Goldberg's ``log(w) * u / (w - 1)``
    with ``w = 1 + u``; ``u`` itself where ``w`` rounds to 1), where ``log(1.0 + u)``
    loses ``u``'s digits (all of them below machine epsilon). The rounding correction
    ``log(w) * (u / (w - 1) - 1)`` is a constant of the gradient, which is ``1 / w``
    (accurate: ``w - 1``'s rounding error must not reach it)."""
    w = 1.0 + u
    rounds_to_one = w == 1.0
    ratio = where(rounds_to_one, 1.0, u / where(rounds_to_one, 1.0, w - 1.0))
    lw = log(w)
    finite = (w > 0.0) & (w < np.inf)  # log1p(-1) = -inf, log1p(inf) = inf: no correction
    correction = where(finite, lw * (ratio - 1.0), 0.0)
    return where(rounds_to_one, u, lw + stop_gradient(correction))


def softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))``, without overflow: ``x + log1p(exp(-x))`` for ``x > 0``, else
    ``log1p(exp(x))``, each exp of a clamped argument so that neither branch nor its
    derivative overflows (the derivative at 0 is 0.5, as in JAX and PyTorch), and with an
    accurate ``log1p`` so that the negative tail keeps its relative precision
    (``softplus(-40) = 4.2e-18``, not 0, as jax.nn and PyTorch).

    >>> rlx.nn.softplus(z)                                       # doctest: +SKIP
    """
    _real_only("softplus", x)
    positive = x + _log1p(exp(-maximum(x, 0.0)))
    return where(x > 0, positive, _log1p(exp(minimum(x, 0.0))))


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` if ``x >= 0`` else ``negative_slope * x`` (jax.nn's default slope)."""
    _real_only("leaky_relu", x)
    return where(x >= 0, x, x * negative_slope)


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)`` (the exp only of ``min(x, 0)``,
    so a large x does not overflow the unused branch)."""
    _real_only("elu", x)
    return where(x > 0, x, (exp(minimum(x, 0.0)) - 1.0) * alpha)


def logsumexp(x: Tensor, axis: int | Sequence[int] | None = None,
              keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis`` (all axes by default), stably: the maximum is
    subtracted first and added back (as a constant of the gradient, like jax.nn). A
    non-finite maximum is replaced by 0, as jax.nn does, so an all ``-inf`` slice gives
    ``-inf`` (not ``-inf - -inf = NaN``) and a ``+inf`` entry gives ``+inf``."""
    peak = x.max(axis=axis, keepdims=True)
    peak = stop_gradient(where(abs(peak) < np.inf, peak, 0.0))
    out = log(exp(x - peak).sum(axis=axis, keepdims=True)) + peak
    if keepdims:
        return out
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    dropped = {a % x.ndim for a in axes}
    return out.reshape(tuple(d for i, d in enumerate(out.shape) if i not in dropped))


def one_hot(ids: Tensor, num_classes: int, dtype: str = "f32") -> Tensor:
    """``[..., num_classes]``: 1 at each id's class, 0 elsewhere (and for ids outside
    ``[0, num_classes)``), as jax.nn.one_hot."""
    from rlx_mlir.builder import _dtype_name
    from rlx_mlir.dialects.base import NUMPY_DTYPES

    name = _dtype_name(dtype)  # rlx or numpy names: "f32", "float32", np.float32
    if name not in REAL_FLOAT_DTYPES:
        raise RlxError(f"one_hot: dtype must be one of {', '.join(REAL_FLOAT_DTYPES)} (or "
                       f"their numpy names); got {dtype!r}", loc=loc_from_attr(_user_location()))
    dtype = name
    classes = np.arange(num_classes, dtype=np.int32 if ids.dtype == "i32" else np.int64)
    hit = ids.reshape((*ids.shape, 1)) == classes
    one = np.ones((), NUMPY_DTYPES[dtype])
    return where(hit, one, one * 0)


def softmax(x: Tensor, axis: int | None = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (None: over every element, as JAX's)."""
    return _over_axis(x, axis, lambda x, a: _b(x).softmax(x, axis=a))


def log_softmax(x: Tensor, axis: int | None = -1) -> Tensor:
    """``x - logsumexp(x)`` along ``axis`` (None: over every element, as JAX's)."""
    return _over_axis(x, axis, lambda x, a: _b(x).log_softmax(x, axis=a))


def _over_axis(x: Tensor, axis: int | None, op: Callable[[Tensor, int], Tensor]) -> Tensor:
    if axis is None:
        return op(x.reshape(-1), 0).reshape(x.shape)
    if isinstance(axis, (tuple, list)) or isinstance(axis, bool):
        raise RlxError(f"axis must be an int or None, got {axis!r}",
                       loc=loc_from_attr(_user_location()))
    return op(x, axis)


def _pair(x: Tensor | float, y: Tensor | float, like: Tensor | None = None,
          ) -> tuple[Tensor, Tensor]:
    """``x`` and ``y`` as tensors of one dtype: numbers and numpy arrays become constants
    of the other operand's dtype (``like``'s when both are numbers), with numpy's
    integer/float promotion. Constants go into the tensor operand's builder; an op on the
    pair picks the innermost builder (``_b``)."""
    if isinstance(x, Tensor):
        x, other = x._promoted(y)
        return x, x._lift(other)
    if isinstance(y, Tensor):
        y, other = y._promoted(x)
        return y._lift(other), y
    if like is None:
        raise RlxError("expected at least one traced tensor operand",
                       loc=loc_from_attr(_user_location()))
    from rlx_mlir.frontend.tracing import _as_array  # Python numbers are f32 / i32

    base = like.builder.constant(_as_array(x))
    return _pair(base, y)


def where(cond: Tensor | np.ndarray, x: Tensor | float, y: Tensor | float) -> Tensor:
    """``x`` where ``cond`` else ``y`` (each may be a number or a numpy array; with no
    traced tensor among them, the numpy result, as ``jnp.where`` of concrete values, with
    Python floats as f32 and ints as i32)."""
    if not isinstance(cond, Tensor):
        like = next((v for v in (x, y) if isinstance(v, Tensor)), None)
        if like is None:
            from rlx_mlir.frontend.tracing import _as_array

            return np.where(np.asarray(cond, dtype=bool), _as_array(x), _as_array(y))
        cond = like.builder.constant(np.asarray(cond, dtype=bool))
    if cond.dtype in ("c64", "c128"):
        cond = cond != 0  # numpy's truth of a complex number
    tx, ty = _pair(x, y, like=cond)
    return _b(cond, tx, ty).where(cond, tx, ty)


def argmax(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The i32 index of the first maximum along ``axis`` (of the flattened tensor when
    None), as ``jnp.argmax``: a NaN counts as the maximum. No gradient (an index).

    >>> # rlx.nn.argmax(logits, axis=-1)
    """
    return _first_index(x, axis, keepdims, "max")


def argmin(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The i32 index of the first minimum along ``axis`` (see :func:`argmax`)."""
    return _first_index(x, axis, keepdims, "min")


def _first_index(x: Tensor, axis: int | None, keepdims: bool, kind: str) -> Tensor:
    """The first index along ``axis`` where ``x`` equals its extreme (or is NaN)."""
    if axis is None:
        flat = x.reshape(-1)
        found = _first_index(flat, 0, False, kind)
        return found.reshape([1] * x.ndim) if keepdims else found
    axis = _axis(axis, x.ndim, f"arg{kind}")
    n = x.shape[axis]
    hit = (x == getattr(x, kind)(axis=axis, keepdims=True)) | (x != x)
    iota = np.arange(n, dtype=np.int32).reshape([n if i == axis else 1 for i in range(x.ndim)])
    return where(hit, iota, n).min(axis=axis, keepdims=keepdims)


def top_k(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of the ``k`` largest entries along the last axis, largest
    first, as ``jax.lax.top_k``: ties go to the smaller index, NaN counts as the largest;
    indices are i32 (no gradient), values carry the gradient to the entries they pick.
    One pass over each row (``rlx.top_k``: a sorted buffer of the ``k`` best).

    >>> values, ids = rlx.nn.top_k(logits, 5)               # doctest: +SKIP
    """
    if not isinstance(x, Tensor) or x.ndim == 0 or x.dtype not in (*REAL_FLOAT_DTYPES, "i8", "i32", "i64"):
        what = f"{x.dtype}{list(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise RlxError(f"top_k takes a real or integer tensor of rank >= 1; got {what}",
                       loc=loc_from_attr(_user_location()))
    d = x.shape[-1]
    k = _integer(k)  # an eager call passes numpy scalars as 0-d arrays
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= d:
        raise RlxError(f"top_k: k must be an int in [1, {d}] (the last axis); got {k!r}",
                       loc=loc_from_attr(_user_location()))
    indices = _b(x).top_k(x, k=int(k))
    return take_along_axis(x, indices, axis=-1), indices


def _axis(axis: int, rank: int, caller: str) -> int:
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < max(rank, 1):
        raise RlxError(f"{caller}: axis {axis!r} is out of range for rank {rank}",
                       loc=loc_from_attr(_user_location()))
    return int(axis) % max(rank, 1)


def maximum(x: Tensor | float, y: Tensor | float) -> Tensor:
    tx, ty = _pair(x, y)
    return _b(tx, ty).max(tx, ty)


def minimum(x: Tensor | float, y: Tensor | float) -> Tensor:
    tx, ty = _pair(x, y)
    return _b(tx, ty).min(tx, ty)


def concat(xs: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Concatenate along ``axis``. ``xs`` may be any iterable (a generator too); numpy
    arrays among the tensors become constants of the first tensor's dtype, as numpy
    operands of the operators do (a float array next to integer tensors keeps its dtype,
    and the dtype mismatch is an error, not a silent truncation)."""
    xs = list(xs)
    b = _b(*xs)
    dtypes = {x.dtype for x in xs if isinstance(x, Tensor)}
    inexact = dtypes & {*REAL_FLOAT_DTYPES, "c64", "c128"}
    if inexact and (len(inexact) > 1 or len(dtypes) > 1):
        # f32 with f64 is f64, real with complex complex, integers take the float: as the
        # operators (and JAX)
        common = _common_inexact(inexact)
        xs = [x.astype(common) if isinstance(x, Tensor) else x for x in xs]
    elif len(dtypes) > 1:  # integers and bools: the widest (i32 with i64 is i64, as JAX)
        from functools import reduce

        from rlx_mlir.builder import _wider_integer

        common = reduce(lambda a, c: _wider_integer(a, c) or a, sorted(dtypes))
        xs = [x.astype(common) if isinstance(x, Tensor) else x for x in xs]
    like = next(x for x in xs if isinstance(x, Tensor))

    def lifted(x):
        if not isinstance(x, np.ndarray):
            return x  # a Tensor, or anything else for the builder to reject
        floats_into_ints = x.dtype.kind in "fc" and like.dtype not in (
            *REAL_FLOAT_DTYPES, "c64", "c128")
        return x if floats_into_ints else like._lift(x)

    return b.concat(*(lifted(x) for x in xs), axis=axis)


def _common_inexact(dtypes: set[str]) -> str:
    """numpy's result of several float / complex dtypes (f32 + c64 is c64, f64 + c64 c128)."""
    from functools import reduce

    from rlx_mlir.builder import _complex_result, _float_result

    if dtypes & {"c64", "c128"}:
        return _complex_result(*dtypes)
    return reduce(_float_result, sorted(dtypes))


def stack(xs: Sequence[Tensor], axis: int = 0) -> Tensor:
    """``xs`` (tensors of one shape) stacked along a new ``axis`` (numpy's ``stack``)."""
    xs = list(xs)
    if not xs:
        raise RlxError("stack: expected at least one tensor",
                       loc=loc_from_attr(_user_location()))
    like = next((x for x in xs if isinstance(x, Tensor)), None)
    ndim = (like.ndim if like is not None else np.ndim(xs[0])) + 1
    if not -ndim <= axis < ndim:
        raise RlxError(f"stack: axis {axis} is out of range for {ndim - 1}-d tensors",
                       loc=loc_from_attr(_user_location()))
    axis %= ndim
    return concat([_with_unit_axis(x, axis) for x in xs], axis=axis)


def _with_unit_axis(x, axis: int):
    shape = list(np.shape(x) if not isinstance(x, Tensor) else x.shape)
    shape.insert(axis, 1)
    return x.reshape(shape) if isinstance(x, Tensor) else np.reshape(x, shape)


def flip(x: Tensor, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` reversed along ``axis`` (every axis when None), as ``np.flip``."""
    axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    index = [slice(None)] * x.ndim
    for a in axes:
        index[_axis(a, x.ndim, "flip")] = slice(None, None, -1)
    return x[tuple(index)]


def pad(x: Tensor, pad_width, constant_values: float = 0) -> Tensor:
    """``np.pad(x, pad_width, constant_values=...)`` (constant mode): ``pad_width`` is
    an int, a ``(before, after)`` pair, or one pair per axis (integers, as numpy's)."""
    widths = _pad_widths(pad_width, np.ndim(x) if not isinstance(x, Tensor) else x.ndim)
    if not isinstance(x, Tensor):  # numpy data inside a trace: numpy's pad
        return np.pad(np.asarray(x), widths.tolist(), constant_values=constant_values)
    for a, (before, after) in enumerate(widths.tolist()):
        parts = []
        for width in (before, after):
            shape = list(x.shape)
            shape[a] = width
            parts.append(np.full(shape, constant_values, _NUMPY_OF[x.dtype]) if width else None)
        x = concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=a)
    return x


def _pad_widths(pad_width: object, rank: int) -> np.ndarray:
    """``pad_width`` as ``[rank, 2]`` non-negative ints, or a located error."""
    where = loc_from_attr(_user_location())
    given = None if isinstance(pad_width, Tensor) else np.asarray(pad_width)
    if given is None or given.dtype.kind not in "iu":
        raise RlxError(f"pad: pad_width must be integers (an int, a (before, after) pair "
                       f"or one pair per axis), got {pad_width!r}", loc=where)
    try:
        widths = np.broadcast_to(given.astype(np.int64), (rank, 2))
    except ValueError:
        raise RlxError(f"pad: pad_width {pad_width!r} is not an int, a (before, after) pair "
                       f"or one pair per axis of a rank-{rank} tensor", loc=where) from None
    if (widths < 0).any():
        raise RlxError(f"pad: widths must be >= 0, got {pad_width!r}", loc=where)
    return widths


def cumsum(x: Tensor, axis: int | None = None, exclusive: bool = False) -> Tensor:
    """numpy's ``cumsum`` (``axis=None``: of the flattened tensor); ``exclusive`` sums
    the elements before each position only (``y[0] = 0``)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    if x.dtype == "i1":
        x = x.astype("i32")  # a running count, as JAX's
    return _b(x).cumsum(x, axis=_axis(axis, x.ndim, "cumsum"), exclusive=exclusive)


def group_norm(x: Tensor, num_groups: int, gamma: Tensor | None = None,
               beta: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.group_norm``: ``x [N, C, ...]``'s ``num_groups`` groups of channels
    normalised per sample, then ``* gamma + beta`` per channel (ones and zeros when
    None; numpy ones take x's dtype)."""
    x = _traced_among(x, gamma, beta)
    channels = x.shape[1] if x.ndim > 1 else 0
    dtype = _NUMPY_OF[x.dtype] if isinstance(x, Tensor) else np.asarray(x).dtype
    gamma = np.ones(channels, dtype) if gamma is None else gamma
    beta = np.zeros(channels, dtype) if beta is None else beta
    gamma, beta = _like(x, gamma, beta)
    x, gamma, beta = _same_float(x, gamma, beta)
    shape = x.shape
    if isinstance(x, Tensor) and (x.ndim == 2 or x.ndim > 4):  # [N, C] or [N, C, D, H, W]
        x = x.reshape((*shape[:2], -1))
    y = _b(x, gamma, beta).group_norm(x, gamma, beta, num_groups=num_groups, eps=eps)
    return y.reshape(shape) if y.shape != shape else y


def batch_norm(x: Tensor, running_mean: Tensor | np.ndarray | None = None,
               running_var: Tensor | np.ndarray | None = None,
               weight: Tensor | np.ndarray | None = None, bias: Tensor | np.ndarray | None = None,
               training: bool = True, momentum: float = 0.1, eps: float = 1e-5
               ) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """PyTorch's ``F.batch_norm`` on ``x [N, C, ...]``, functional: in training, each
    channel normalised by its batch mean and (biased) variance over every axis but 1,
    and, when running statistics are given, ``(y, new_running_mean, new_running_var)``
    returned with torch's update (``(1 - momentum) * old + momentum * batch``, the
    variance unbiased); otherwise ``y`` from the running statistics. Then ``* weight +
    bias`` per channel.

    >>> y, mean, var = rlx.nn.batch_norm(x, mean, var, w, b)   # doctest: +SKIP
    """
    where = loc_from_attr(_user_location())
    x = _traced_among(x, running_mean, running_var, weight, bias)
    if np.ndim(x) < 2 or np.shape(x)[1] == 0:
        raise RlxError(f"batch_norm: x must be [N, C, ...] with C >= 1; got shape "
                       f"{np.shape(x)}", loc=where)
    if (running_mean is None) != (running_var is None):
        raise RlxError("batch_norm: running_mean and running_var must both be given or "
                       "both be None (as torch's)", loc=where)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)):
        raise RlxError(f"batch_norm: momentum must be a number, got {momentum!r} (the "
                       f"cumulative average of torch's momentum=None is not supported)",
                       loc=where)
    axes = tuple(a for a in range(x.ndim) if a != 1)
    per_channel = (1, x.shape[1], *(1,) * (x.ndim - 2))
    for name, stat in (("running_mean", running_mean), ("running_var", running_var),
                       ("weight", weight), ("bias", bias)):
        if stat is not None and np.shape(stat) != (x.shape[1],):
            raise RlxError(f"batch_norm: {name} must have shape [{x.shape[1]}] (one per "
                           f"channel), got {list(np.shape(stat))}", loc=where)
    stats = _like(x, running_mean, running_var, weight, bias)
    running_mean, running_var, weight, bias = (
        None if t is None else t.reshape(per_channel) for t in stats)
    if not training:
        if running_mean is None or running_var is None:
            raise RlxError("batch_norm: training=False needs running_mean and running_var",
                           loc=loc_from_attr(_user_location()))
        return _scaled((x - running_mean) * rsqrt(running_var + eps), weight, bias)
    if x.size // x.shape[1] < 2:
        raise RlxError(f"batch_norm: training needs more than one value per channel; got "
                       f"shape {x.shape}", loc=loc_from_attr(_user_location()))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = _scaled((x - mean) * rsqrt(var + eps), weight, bias)
    if running_mean is None or running_var is None:
        return y
    count = x.size // x.shape[1]
    unbiased = var * (count / max(count - 1, 1))
    return (y, ((1 - momentum) * running_mean + momentum * mean).reshape(x.shape[1]),
            ((1 - momentum) * running_var + momentum * unbiased).reshape(x.shape[1]))


def _scaled(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def solve(a: Tensor, b: Tensor) -> Tensor:
    """``x`` with ``a @ x = b`` (``jnp.linalg.solve``, numpy 2's rule): ``a [..., N, N]``,
    ``b [N]`` (one right-hand side for every matrix) or ``[..., N, K]``, the batch dims
    broadcast; integer and bool operands solve in f32. An ``a`` whose elimination meets
    an all-zero pivot column gives NaN; rounding can leave a tiny pivot in a matrix that
    is singular in exact arithmetic instead, which gives huge values (as ``jnp``)."""
    a, b = _pair(a, b)
    if not {a.dtype, b.dtype} & {*FLOAT_DTYPES, *COMPLEX_DTYPES}:
        a, b = a.astype("f32"), b.astype("f32")
    where = loc_from_attr(_user_location())
    if a.ndim < 2 or b.ndim < 1:
        raise RlxError(f"solve: a must be [..., N, N] and b [N] or [..., N, K], got "
                       f"{list(a.shape)} and {list(b.shape)}", loc=where)
    vector = b.ndim == 1  # numpy 2 / JAX: b is a matrix unless it is 1-d
    try:
        batch = np.broadcast_shapes(a.shape[:-2], () if vector else b.shape[:-2])
    except ValueError:
        raise RlxError(f"solve: the batch dims of a {list(a.shape)} and b {list(b.shape)} "
                       "do not broadcast", loc=where) from None
    n = a.shape[-1]
    if not batch:
        return _b(a, b).dense_solve(a, b)
    rows = int(np.prod(batch))
    a3 = broadcast_to(a, (*batch, n, n)).reshape((rows, n, n))
    tail = (n,) if vector else b.shape[-2:]
    b3 = broadcast_to(b, (*batch, *tail)).reshape((rows, *tail))
    return _b(a3, b3).batched_dense_solve(a3, b3).reshape((*batch, *tail))


def dropout(x: Tensor, rate: float, key: Tensor | int, training: bool = True) -> Tensor:
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 -
    rate)`` (PyTorch's ``F.dropout``, Flax's ``Dropout``); the mask comes from ``key``
    (:mod:`rlx_mlir.random`: pass a new key each step). ``training=False``: ``x``.

    >>> h = rlx.nn.dropout(h, 0.1, key)                     # doctest: +SKIP
    """
    from rlx_mlir import random

    if isinstance(rate, Tensor) or isinstance(training, Tensor):
        raise RlxError("dropout: rate and training must be Python values (they choose the "
                       "program), not traced ones: pass them to rlx.jit as static arguments "
                       "(rlx.jit(f, static_argnames=('training',)))",
                       loc=loc_from_attr(_user_location()))
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating, np.integer)) \
            or not isinstance(training, (bool, np.bool_, int, np.integer)):
        raise RlxError(f"dropout: rate must be a number and training a bool, got rate="
                       f"{rate!r}, training={training!r}", loc=loc_from_attr(_user_location()))
    if not 0.0 <= rate <= 1.0:
        raise RlxError(f"dropout: rate must be in [0, 1], got {rate}",
                       loc=loc_from_attr(_user_location()))
    if not training or rate == 0.0:
        return x
    if rate == 1.0:
        return x * 0
    keep = random.bernoulli(key, 1.0 - rate, x.shape)
    return where(keep, x / (1.0 - rate), 0.0)


def stop_gradient(x: Tensor) -> Tensor:
    return _b(x).stop_gradient(x)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    """Normalised over the last axis, then ``* gamma + beta`` (numpy ones take x's dtype)."""
    gamma, beta = _like(x, gamma, beta)
    x, gamma, beta = _same_float(x, gamma, beta)
    return _b(x, gamma, beta).layer_norm(x, gamma, beta, eps=eps)


def rms_norm(x: Tensor, gamma: Tensor, beta: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """``x / rms(x) * gamma (+ beta)`` over the last axis (numpy ones take x's dtype)."""
    gamma, beta = _like(x, gamma, beta)
    x, gamma, beta = _same_float(x, gamma, beta)
    return _b(x, gamma, beta).rms_norm(x, gamma, beta, eps=eps)


def attention(q: Tensor, k: Tensor, v: Tensor, num_heads: int, mask: Tensor | None = None,
              mask_kind: str = "none", num_kv_heads: int | None = None, window: int | None = None,
              score_scale: float | None = None, softcap: float | None = None) -> Tensor:
    """Multi-head attention on ``[B, S, H*D]`` (see ``rlx.attention``). A ``mask`` given
    with ``mask_kind="none"`` takes its kind from its rank: ``[B, S_kv]`` a key-padding
    mask (``"custom"``), ``[B, Hq, S, S_kv]`` an additive bias (``"bias"``)."""
    _check_attention_sizes(q, k, num_heads)
    if mask is not None and mask_kind == "none":
        mask_kind = _mask_kind_of(mask)
    if mask is not None and mask_kind == "causal":
        mask_kind = "causal_padding"  # one op: causal row blocks, keys dropped per example
    if mask_kind in ("custom", "causal_padding"):
        _check_keep_mask(mask)
        mask = _keep_mask_for(q, mask)
    if mask is not None and mask_kind == "bias":
        scores = (q.shape[0], num_heads, q.shape[1], k.shape[1])
        mask = _full_bias(q, mask, scores)
    return _b(q, k, v, mask).attention(
        q, k, v, mask, num_heads=num_heads, num_kv_heads=num_kv_heads,
        head_dim=q.shape[-1] // num_heads, mask_kind=mask_kind, window=window,
        score_scale=score_scale, softcap=softcap)


def _check_attention_sizes(q: Tensor, k: Tensor, num_heads: object) -> None:
    """Positive ``num_heads`` and non-empty sequences, before the head width is computed."""
    where = loc_from_attr(_user_location())
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) or \
            num_heads < 1:
        raise RlxError(f"attention: num_heads must be a positive int, got {num_heads!r}",
                       loc=where)
    if np.ndim(q) >= 2 and np.ndim(k) >= 2 and 0 in (np.shape(q)[-2], np.shape(k)[-2]):
        raise RlxError(f"attention: empty sequences are not supported (q {list(np.shape(q))}, "
                       f"k {list(np.shape(k))})", loc=where)


def _full_bias(q: Tensor, mask: Tensor | np.ndarray,
               scores: tuple[int, int, int, int]) -> Tensor:
    """The additive ``[B, Hq, S, S_kv]`` bias of ``mask``: a ``bias`` broadcastable to the
    scores (``[S, S_kv]``, ``[B, 1, 1, S_kv]``, ...) expanded to them. A boolean mask
    keeps the keys where it is True (0, else -inf), as ``F.scaled_dot_product_attention``'s
    ``attn_mask``."""
    is_bool = (mask.dtype == "i1") if isinstance(mask, Tensor) else \
        np.asarray(mask).dtype == np.bool_
    if is_bool:
        mask = where(mask, 0.0, -np.inf)
    (mask,) = _like(q, mask)
    try:
        shape = np.broadcast_shapes(mask.shape, scores)
    except ValueError:
        shape = None
    if shape != scores:
        raise RlxError(f"attention: a bias mask must broadcast to the scores [B, Hq, S, "
                       f"S_kv] = {list(scores)}; got {list(mask.shape)}",
                       loc=loc_from_attr(_user_location()))
    if mask.ndim < 4:
        mask = mask.reshape((1,) * (4 - mask.ndim) + tuple(mask.shape))
    return mask if mask.shape == scores else _b(mask).expand(mask, list(scores))


def _keep_mask_for(q: Tensor, mask: Tensor | np.ndarray | None) -> Tensor | np.ndarray | None:
    """A float key-padding mask of another float dtype than ``q``'s as the bool ``mask >=
    0.5`` it stands for (the op takes bool or q's dtype)."""
    if mask is None or not isinstance(q, Tensor):
        return mask
    names = {np.dtype(v): k for k, v in _NUMPY_OF.items()}
    dtype = mask.dtype if isinstance(mask, Tensor) else names.get(np.asarray(mask).dtype)
    if dtype in REAL_FLOAT_DTYPES and dtype != q.dtype:
        return mask >= 0.5 if isinstance(mask, Tensor) else np.asarray(mask) >= 0.5
    return mask


def _check_keep_mask(mask: Tensor | np.ndarray | None) -> None:
    """A key-padding mask known at trace time with negative or infinite entries is an
    additive one (PyTorch's 0 / -inf float mask), which read as keep-where->=-0.5 would
    silently drop every key: an error saying so."""
    if mask is None or isinstance(mask, Tensor):
        return
    values = np.asarray(mask)
    if values.dtype.kind == "f" and (not np.isfinite(values).all() or (values < 0).any()):
        raise RlxError("attention: a key-padding mask keeps the keys where it is true or "
                       ">= 0.5; this one has negative, infinite or NaN entries, as an additive "
                       "mask (0 / -inf) has: pass it as a [B, 1, 1, S_kv] bias "
                       "(mask_kind='bias'), or a bool mask",
                       loc=loc_from_attr(_user_location()))


def _mask_kind_of(mask: Tensor | np.ndarray) -> str:
    rank = np.ndim(mask) if not isinstance(mask, Tensor) else mask.ndim
    if rank not in (2, 4):
        raise RlxError(f"attention: a mask of rank {rank} needs a mask_kind: 'custom' takes "
                       "a [B, S_kv] key-padding mask, 'bias' an additive [B, Hq, S, S_kv]",
                       loc=loc_from_attr(_user_location()))
    return "custom" if rank == 2 else "bias"


def _hw(value: int | Sequence[int], what: str = "stride") -> list[int]:
    """A (height, width) pair; an int means both, as in PyTorch (``stride=2``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)] * 2
    pair = list(value) if isinstance(value, (list, tuple)) else None
    if pair is None or len(pair) != 2 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
        raise RlxError(f"{what} must be an int or a pair of ints, got {value!r}",
                       loc=loc_from_attr(_user_location()))
    return [int(v) for v in pair]


def conv2d(x: Tensor, w: Tensor, bias: Tensor | None = None, stride=(1, 1), padding=(0, 0),
           dilation=(1, 1), groups: int = 1) -> Tensor:
    """NCHW ``x`` correlated with OIHW ``w``; ``padding`` is per side (an int or a pair),
    or ``"valid"`` / ``"same"`` as in PyTorch and JAX (``"same"``: output ``ceil(H /
    stride)``; an odd total padding puts the extra row or column after, as both do, by
    padding ``x`` first)."""
    stride, dilation = _hw(stride, "conv2d: stride"), _hw(dilation, "conv2d: dilation")
    x = _traced_among(x, w, bias)
    for name, value in (("x", x), ("w", w)):
        if np.ndim(value) != 4:
            layout = "NCHW" if name == "x" else "OIHW"
            raise RlxError(f"conv2d: {name} must be {layout} (rank 4), got shape "
                           f"{list(np.shape(value))}", loc=loc_from_attr(_user_location()))
    sides = _conv_sides(padding, np.shape(x)[2:], np.shape(w)[2:], stride, dilation)
    padding = [before for before, _ in sides]
    if any(before != after for before, after in sides):
        x, padding = pad(x, [(0, 0), (0, 0), *sides]), [0, 0]
    w, bias = _like(x, w, bias)
    x, w, bias = _same_float(x, w, bias)
    return _b(x, w, bias).conv2d(x, w, bias, stride=stride, padding=padding,
                                 dilation=dilation, groups=groups)


def _conv_sides(padding: object, size: Sequence[int], kernel: Sequence[int],
                stride: Sequence[int], dilation: Sequence[int]) -> list[tuple[int, int]]:
    """``(before, after)`` per spatial dim from ``"valid"`` / ``"same"``, an int, a pair,
    or a pair of ``(before, after)`` pairs (JAX's ``lax.conv`` form)."""
    if isinstance(padding, str):
        return _named_padding(padding, size, kernel, stride, dilation)
    if isinstance(padding, (list, tuple)) and len(padding) == 2 and all(
            isinstance(p, (list, tuple)) for p in padding):
        sides = [tuple(_hw(p, "conv2d: padding")) for p in padding]
        if any(b < 0 or a < 0 for b, a in sides):
            raise RlxError(f"conv2d: padding must be >= 0, got {padding!r}",
                           loc=loc_from_attr(_user_location()))
        return sides
    return [(p, p) for p in _hw(padding, "conv2d: padding")]


def _named_padding(name: str, size: Sequence[int], kernel: Sequence[int],
                   stride: Sequence[int], dilation: Sequence[int]) -> list[tuple[int, int]]:
    """``"valid"`` (none) or ``"same"`` as ``(before, after)`` padding per spatial dim, the
    odd row or column after (PyTorch's and JAX's split)."""
    if name.lower() == "valid":
        return [(0, 0), (0, 0)]
    if name.lower() != "same":
        raise RlxError(f"conv2d: padding={name!r} must be 'valid', 'same', an int or a pair",
                       loc=loc_from_attr(_user_location()))
    sides = []
    for n, k, s, d in zip(size, kernel, stride, dilation, strict=True):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        sides.append((total // 2, total - total // 2))
    return sides


def max_pool2d(x: Tensor, kernel, stride=None, padding=(0, 0)) -> Tensor:
    """PyTorch's ``F.max_pool2d`` on NCHW ``x`` (``stride`` defaults to ``kernel``;
    padding never wins)."""
    return _b(x).max_pool2d(x, **_pool_attrs("max_pool2d", kernel, stride, padding))


def avg_pool2d(x: Tensor, kernel, stride=None, padding=(0, 0)) -> Tensor:
    """PyTorch's ``F.avg_pool2d`` on NCHW ``x`` (padding counts in the average, torch's
    default)."""
    return _b(x).avg_pool2d(x, **_pool_attrs("avg_pool2d", kernel, stride, padding))


def _pool_attrs(name: str, kernel: object, stride: object, padding: object) -> dict:
    return {"kernel": _hw(kernel, f"{name}: kernel"),
            "stride": _hw(kernel if stride is None else stride, f"{name}: stride"),
            "padding": _hw(padding, f"{name}: padding")}


def cross_entropy(logits: Tensor, labels: Tensor, reduction: str = "mean",
                  ignore_index: int | None = -100, weight: Tensor | np.ndarray | None = None,
                  label_smoothing: float = 0.0) -> Tensor:
    """PyTorch's ``F.cross_entropy``: softmax cross-entropy of ``[N, C]`` logits (or
    ``[N, C, d1, ...]``, the classes on axis 1) and integer labels ``[N]`` (``[N, d1,
    ...]``). Rows labelled ``ignore_index`` (-100 by default; None: none) give 0 and no
    gradient; ``weight [C]`` scales each row by its class's weight; ``label_smoothing``
    mixes in the mean of ``-log_softmax`` over the classes (weighted as well); ``"mean"``
    divides by the number (the total weight) of the rows kept, 0 when none is.

    >>> rlx.nn.cross_entropy(logits, y, weight=w, label_smoothing=0.1)   # doctest: +SKIP
    """
    if reduction not in ("none", "mean", "sum"):
        raise RlxError(f"cross_entropy: reduction={reduction!r} must be one of "
                       "none, mean, sum", loc=loc_from_attr(_user_location()))
    if not 0.0 <= label_smoothing <= 1.0:
        raise RlxError(f"cross_entropy: label_smoothing={label_smoothing!r} must be in "
                       "[0, 1]", loc=loc_from_attr(_user_location()))
    if np.ndim(logits) < 1:
        raise RlxError(f"cross_entropy: logits must be [N, C] or [N, C, d1, ...] (classes "
                       f"on axis 1; [C] for one row), got shape {list(np.shape(logits))}",
                       loc=loc_from_attr(_user_location()))
    b = _b(logits, labels)
    labels = _integer_labels(b, labels)
    out_shape = labels.shape
    if logits.ndim > 2:  # [N, C, d1, ...]: the classes last, one row per position
        logits = _classes_last(logits).reshape(-1, logits.shape[1])
        labels = labels.reshape(-1)
    classes = logits.shape[-1]
    (weight,) = _like(logits, weight)
    kept = None if ignore_index is None else labels != ignore_index
    row_weight = None if weight is None else _row_weights(weight, labels, classes)
    losses = [(1.0 - label_smoothing, b.softmax_cross_entropy(logits, labels))]
    if label_smoothing:
        log_p = log_softmax(logits, axis=-1)
        smooth = -((log_p * weight) if weight is not None else log_p).sum(axis=-1)
        losses.append((label_smoothing / classes, smooth))
    total = None
    for scale, loss in losses:
        if row_weight is not None and loss is losses[0][1]:
            loss = loss * row_weight
        if kept is not None:
            loss = where(kept, loss, 0.0)
        term = loss * scale if scale != 1.0 else loss
        total = term if total is None else total + term
    if reduction == "none":
        return total.reshape(out_shape)
    if reduction == "sum":
        return total.sum()
    return total.sum() / _kept_total(total, kept, row_weight)


def _classes_last(logits: Tensor) -> Tensor:
    """``[N, C, d1, ...]`` as ``[N, d1, ..., C]``."""
    return logits.transpose(0, *range(2, logits.ndim), 1)


def _row_weights(weight: Tensor, labels: Tensor, classes: int) -> Tensor:
    """``weight[labels]`` (an ignored or out-of-range label reads a clamped class; its
    row is masked anyway)."""
    if weight.shape != (classes,):
        raise RlxError(f"cross_entropy: weight must have one entry per class, shape "
                       f"({classes},); got {weight.shape}", loc=loc_from_attr(_user_location()))
    return weight[labels]


def _kept_total(losses: Tensor, kept: Tensor | None, row_weight: Tensor | None) -> Tensor:
    """The mean's denominator: the weight (or the number) of the rows kept, 1 when it is
    0 (every row ignored: the mean is 0, not 0 / 0)."""
    if row_weight is None and kept is None:
        return float(losses.shape[0])
    if row_weight is None:
        counted = kept.astype(losses.dtype)
    else:
        counted = row_weight if kept is None else where(kept, row_weight, 0.0)
    total = counted.sum()
    return where(total > 0.0, total, 1.0)


def _integer_labels(b: Builder, labels: Tensor | np.ndarray) -> Tensor:
    """``labels`` as an integer tensor of ``b`` (a numpy array becomes a constant); float
    labels are an error, as in PyTorch, not classes read off by truncation."""
    return _integer_indices(b, labels, "cross_entropy: labels", "class indices")


def _integer_indices(b: Builder, ids: Tensor | np.ndarray, what: str,
                     kind: str = "indices") -> Tensor:
    """``ids`` as an i32/i64 tensor of ``b`` (a numpy array or list becomes a constant);
    any other dtype (float, bool) is an ``RlxError`` naming ``what``."""
    if not isinstance(ids, Tensor):
        ids = np.asarray(ids)
        if ids.dtype.kind == "u" and ids.dtype.itemsize >= 4:  # past int32 / int64: clamp
            ids = b.constant(np.minimum(ids.astype(np.uint64), np.uint64(2**63 - 1)).astype(np.int64))
        elif ids.dtype.kind in "iu":
            ids = b.constant(ids.astype(np.int64 if ids.dtype.itemsize > 4 else np.int32))
    dtype = ids.dtype if isinstance(ids, Tensor) else str(ids.dtype)
    if dtype not in ("i32", "i64"):
        raise RlxError(f"{what} must be integer {kind}; got {dtype} "
                       "(cast with .astype('int32'))", loc=loc_from_attr(_user_location()))
    return ids


def rope(x: Tensor, cos: Tensor, sin: Tensor, head_dim: int, n_rot: int | None = None) -> Tensor:
    """Rotary embedding of each head of ``x`` (half-split pairs, NeoX style: dim i rotates
    with dim i + n_rot/2) by the ``cos`` / ``sin`` tables (numpy ones take x's dtype)."""
    cos, sin = _like(x, cos, sin)
    return _b(x, cos, sin).rope(x, cos, sin, head_dim=head_dim, n_rot=n_rot)


def embedding(table: Tensor, ids: Tensor) -> Tensor:
    """``table[ids]``: rows by id, negative ids counted from the end (as indexing). Float
    ids are an error (as ``table[ids]``, PyTorch and JAX), not rows read off by
    truncation."""
    from rlx_mlir.frontend.indexing import wrap_negative

    b = _b(table, ids)
    ids = _integer_indices(b, ids, "embedding: ids")
    return b.gather(table, wrap_negative(ids, table.shape[0]), axis=0)


def grouped_matmul(x: Tensor, w: Tensor, ids: Tensor, transpose_w: bool = False) -> Tensor:
    """Mixture-of-experts matmul: ``y[i] = x[i] @ w[ids[i]]`` for tokens ``x [M, K]``,
    expert weights ``w [E, K, N]`` (``[E, N, K]`` with ``transpose_w``, then ``x[i] @
    w[ids[i]].T``) and integer expert ids ``[M]``: negative ids count from the end and the
    others are clamped to ``[0, E)``, as ``embedding``'s. x and w promote as for ``@``.
    One matmul per expert over its tokens, in any token order (``jax.lax.ragged_dot``
    needs them sorted).

    >>> y = rlx.nn.grouped_matmul(x, w, top_k(router_logits, 1)[1][:, 0])  # doctest: +SKIP
    """
    from rlx_mlir.frontend.indexing import wrap_negative

    transpose_w = _bool_flag(transpose_w, "grouped_matmul: transpose_w")
    if isinstance(x, Tensor):
        x, w = x._operands(w)  # numpy w and mixed dtypes promote as x @ w does
    elif isinstance(w, Tensor):
        w, x = w._operands(x)
    else:
        raise RlxError("grouped_matmul: x or w must be a traced tensor (or call it on numpy "
                       "arrays outside any trace)", loc=loc_from_attr(_user_location()))
    x, w = _inexact(x), _inexact(w)
    b = _b(x, w, ids if isinstance(ids, Tensor) else None)
    ids = _integer_indices(b, ids, "grouped_matmul: ids", "expert ids")
    if w.ndim == 3:
        ids = wrap_negative(ids, w.shape[0])
    return b.grouped_matmul(x, w, ids, transpose_w=transpose_w or None)


def _bool_flag(value: object, what: str) -> bool:
    """A Python bool (a 0-d numpy bool too); anything else is a located error."""
    if isinstance(value, (np.ndarray, np.generic)) and np.shape(value) == () and \
            np.asarray(value).dtype == np.bool_:
        value = bool(value)
    if not isinstance(value, bool):
        raise RlxError(f"{what} must be a bool, got {value!r}"[:200],
                       loc=loc_from_attr(_user_location()))
    return value


def lora_matmul(x: Tensor, w: Tensor, a: Tensor, b: Tensor, scale: float = 1.0) -> Tensor:
    """A low-rank adapted linear map (SPEC 2.3.2 ``LoraMatMul``): ``x @ w + scale * (x @
    a) @ b`` for ``w [K, N]``, ``a [K, r]``, ``b [r, N]``; the rank-r product is taken
    first, so it costs ``r (K + N)`` per row, not a ``[K, N]`` update.

    >>> y = rlx.nn.lora_matmul(x, p["w"], p["lora_a"], p["lora_b"], scale=2.0)  # doctest: +SKIP
    """
    if isinstance(scale, (np.ndarray, np.generic)) and np.ndim(scale) == 0 and \
            np.asarray(scale).dtype.kind in "iuf":
        scale = np.asarray(scale).item()  # an eager call passes numbers as 0-d arrays
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise RlxError(f"lora_matmul: scale must be a number, got {scale!r}",
                       loc=loc_from_attr(_user_location()))
    return x @ w + ((x @ a) @ b) * float(scale)


def selective_scan(x: Tensor, delta: Tensor, a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """Mamba's selective state-space recurrence (SPEC 2.3.3 ``SelectiveScan``): for ``x``,
    ``delta [B, S, H]``, ``a [H, N]``, ``b``, ``c [B, S, N]`` and a state ``[B, H, N]``
    starting at 0, ``state = exp(delta a) state + delta b x`` and ``y = sum_n c state``
    at each step: ``y [B, S, H]``. An ``rlx.scan`` over the steps, so it differentiates
    (and checkpoints) like any scan.

    >>> y = rlx.nn.selective_scan(x, softplus(dt), -exp(a_log), b, c)  # doctest: +SKIP
    """
    from rlx_mlir.frontend.control import scan

    x, delta, a, b, c = _recurrence_operands("selective_scan", x, delta, a, b, c)
    _check_recurrence("selective_scan", {"x": (x, 3), "delta": (delta, 3), "a": (a, 2),
                                         "b": (b, 3), "c": (c, 3)})
    (batch, steps, heads), size = x.shape, a.shape[1]
    _same_shapes("selective_scan", {"x": x.shape, "delta": x.shape,
                                    "a": (heads, size), "b": (batch, steps, size),
                                    "c": (batch, steps, size)},
                 {"a": a.shape, "b": b.shape, "c": c.shape, "delta": delta.shape})

    def step(state, inputs):
        xt, dt, bt, ct = inputs  # [B, H], [B, H], [B, N], [B, N]
        decay = exp(dt.reshape((batch, heads, 1)) * a)
        state = decay * state + (dt * xt).reshape((batch, heads, 1)) * \
            bt.reshape((batch, 1, size))
        return state, (state * ct.reshape((batch, 1, size))).sum(axis=-1)

    time_major = [v.swapaxes(0, 1) for v in (x, delta, b, c)]
    init = x.builder.full((batch, heads, size), 0.0, x.dtype)
    _, ys = scan(step, init, tuple(time_major))
    return ys.swapaxes(0, 1)


def gated_delta_net(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                    state: Tensor | None = None, return_state: bool = False):
    """Gated delta-rule linear attention (SPEC 2.3.3 ``GatedDeltaNet``): for ``q``, ``k``,
    ``v [B, S, H, N]``, gates ``g``, ``beta [B, S, H]`` and a state ``[B, H, N, N]``
    (zeros, or ``state``): per step ``S = exp(g) S``, ``S = S + beta (v - S k) k^T``,
    ``o = S q / sqrt(N)``; returns ``o [B, S, H, N]`` (and the last state with
    ``return_state``). An ``rlx.scan`` over the steps.

    >>> o = rlx.nn.gated_delta_net(q, k, v, log_decay, beta)  # doctest: +SKIP
    """
    from rlx_mlir.builder import innermost
    from rlx_mlir.frontend.control import scan
    from rlx_mlir.frontend.einsum import einsum

    return_state = _bool_flag(return_state, "gated_delta_net: return_state")
    q, k, v, g, beta, *rest = _recurrence_operands("gated_delta_net", q, k, v, g, beta,
                                                   *([] if state is None else [state]))
    state = rest[0] if rest else None
    _check_recurrence("gated_delta_net", {"q": (q, 4), "k": (k, 4), "v": (v, 4),
                                          "g": (g, 3), "beta": (beta, 3)})
    batch, steps, heads, size = q.shape
    expected = {"q": q.shape, "k": q.shape, "v": q.shape, "g": q.shape[:3],
                "beta": q.shape[:3]}
    given = {"k": k.shape, "v": v.shape, "g": g.shape, "beta": beta.shape}
    if state is not None:
        _check_recurrence("gated_delta_net", {"state": (state, 4)})
        expected["state"], given["state"] = (batch, heads, size, size), state.shape
    _same_shapes("gated_delta_net", expected, given)
    scale = 1.0 / float(np.sqrt(size))

    def step(s, inputs):
        qt, kt, vt, gt, bt = inputs  # [B, H, N] x 3, [B, H] x 2
        s = s * exp(gt).reshape((batch, heads, 1, 1))
        error = vt - einsum("bhij,bhj->bhi", s, kt)
        s = s + einsum("bhi,bhj->bhij", error * bt.reshape((batch, heads, 1)), kt)
        return s, einsum("bhij,bhj->bhi", s, qt) * scale

    if state is None:
        state = innermost(q).full((batch, heads, size, size), 0.0, q.dtype)
    last, outs = scan(step, state, tuple(t.swapaxes(0, 1) for t in (q, k, v, g, beta)))
    out = outs.swapaxes(0, 1)
    return (out, last) if return_state else out


def _recurrence_operands(caller: str, *values: object) -> list:
    """The operands as tensors of one trace (numpy arrays become constants) in one float
    dtype, promoted as arithmetic promotes (any f64: f64; else any f32: f32)."""
    from rlx_mlir.frontend.tracing import _active

    traced = [v for v in values if isinstance(v, Tensor)]
    if not traced and not _active():
        raise RlxError(f"{caller}: expected traced tensors (or call it on numpy arrays "
                       "outside any trace)", loc=loc_from_attr(_user_location()))
    b = innermost(*traced) if traced else _active()[-1]
    tensors = [v if isinstance(v, Tensor) else b.constant(np.asarray(v)) if isinstance(
        v, (np.ndarray, np.generic, list, tuple, float, int)) else v for v in values]
    floats = {t.dtype for t in tensors if isinstance(t, Tensor)} & set(REAL_FLOAT_DTYPES)
    wide = "f64" if "f64" in floats else "f32" if "f32" in floats or len(floats) > 1 \
        else next(iter(floats), None)
    return [t.astype(wide) if isinstance(t, Tensor) and wide and t.dtype in floats else t
            for t in tensors]


def _check_recurrence(caller: str, operands: dict) -> None:
    for name, (value, rank) in operands.items():
        if not isinstance(value, Tensor) or value.ndim != rank or \
                value.dtype not in REAL_FLOAT_DTYPES:
            got = f"{value.dtype}{list(value.shape)}" if isinstance(value, Tensor) else \
                type(value).__name__
            raise RlxError(f"{caller}: {name} must be a float tensor of rank {rank}, got {got}",
                           loc=loc_from_attr(_user_location()))


def _same_shapes(caller: str, expected: dict, given: dict) -> None:
    for name, shape in given.items():
        if tuple(shape) != tuple(expected[name]):
            raise RlxError(f"{caller}: {name} must have shape {list(expected[name])}, got "
                           f"{list(shape)}", loc=loc_from_attr(_user_location()))


# ---------------------------------------------------------------- eager calls


def _eager(fn):
    """``fn`` that, called on numpy arrays or Python numbers only (no traced tensor), runs
    on them at once as JAX's eager ops do (inside a trace too: its result is a constant): traced alone and run by the reference
    interpreter (no compile). The first array is the traced argument; the other
    arguments (arrays too) enter as they would inside a trace, so ``layer_norm(x,
    np.ones(3), np.zeros(3))`` behaves the same eagerly and traced.

    >>> rlx.nn.softmax(np.array([1.0, 2.0], np.float32))  # doctest: +SKIP
    array([0.26894143, 0.7310586 ], dtype=float32)
    """
    scalars = (int, float, builtins.complex)  # a list is an error naming np.asarray

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _has_tensor((args, kwargs)):
            return fn(*args, **kwargs)  # inside a trace without one: constants, folded now
        if args and isinstance(args[0], scalars) and not isinstance(args[0], bool):
            from rlx_mlir.frontend.tracing import _as_array  # relu(3.0): f32, conj(1j): c64

            args = (_as_array(args[0]), *args[1:])
        arrays, rebuild = _array_slots((args, kwargs))
        if not arrays:
            return fn(*args, **kwargs)  # nothing to run on: fn's own error
        def first_traced(x):
            args, kwargs = rebuild([x, *arrays[1:]])
            return fn(*args, **kwargs)

        return _run_eagerly(first_traced, arrays[0])

    return call


def _has_tensor(tree) -> bool:
    if isinstance(tree, Tensor):
        return True
    if isinstance(tree, dict):
        return any(_has_tensor(v) for v in tree.values())
    return isinstance(tree, (list, tuple)) and any(_has_tensor(v) for v in tree)


def _array_slots(tree):
    """The numpy arrays in ``tree`` (nested lists, tuples, dicts) and a function putting
    replacements back in their places."""
    arrays: list[np.ndarray] = []

    def collect(node):
        if isinstance(node, (np.ndarray, np.generic)):
            arrays.append(np.asarray(node))
            return _Slot(len(arrays) - 1)
        if isinstance(node, dict):
            return {k: collect(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(collect(v) for v in node)
        return node

    shape = collect(tree)

    def fill(node, values):
        if isinstance(node, _Slot):
            return values[node.index]
        if isinstance(node, dict):
            return {k: fill(v, values) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(fill(v, values) for v in node)
        return node

    return arrays, lambda values: fill(shape, values)


class _Slot:
    def __init__(self, index: int):
        self.index = index


def _run_eagerly(fn, array: np.ndarray):
    from rlx_mlir.frontend.tracing import trace, unflatten
    from rlx_mlir.interpreter import interpret

    traced = trace(fn, [array], "eager")
    outs = interpret(traced.module, array, entry=traced.name)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return unflatten(traced.out_tree, outs)


# ---------------------------------------------------------------- half precision


def _tensors(tree: object) -> list[Tensor]:
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for v in tree.values() for t in _tensors(v)]
    if isinstance(tree, (list, tuple)):
        return [t for v in tree for t in _tensors(v)]
    return []


def _map_tensors(tree: object, fn: Callable[[Tensor], Tensor]) -> object:
    if isinstance(tree, Tensor):
        return fn(tree)
    if isinstance(tree, dict):
        return {k: _map_tensors(v, fn) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_map_tensors(v, fn) for v in tree)
    return tree


def _wide_arrays(tree: object) -> bool:
    """Whether ``tree`` holds an f32 or f64 numpy array (not a Python number: those are
    weakly typed, as in JAX)."""
    if isinstance(tree, np.ndarray):
        return tree.dtype in (np.float32, np.float64) and tree.ndim > 0
    if isinstance(tree, dict):
        return any(_wide_arrays(v) for v in tree.values())
    return isinstance(tree, (list, tuple)) and any(_wide_arrays(v) for v in tree)


def _half_in_f32(fn: Callable) -> Callable:
    """``fn`` computed in f32 when its float tensors are all of one half dtype, its f32
    results rounded back once (as PyTorch's fused kernels round once per call, not after
    each op of the function's formula)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        floats = {t.dtype for t in _tensors((args, kwargs))} - {"i1", "i8", "i32", "i64"}
        if _wide_arrays((args, kwargs)):  # an f32/f64 numpy operand promotes, as JAX's
            floats.add("f32")
        if len(floats) != 1 or next(iter(floats)) not in ("f16", "bf16"):
            return fn(*args, **kwargs)
        half = floats.pop()
        args, kwargs = _map_tensors((args, kwargs),
                                    lambda t: t.astype("f32") if t.dtype == half else t)
        return _map_tensors(fn(*args, **kwargs),
                            lambda t: t.astype(half) if t.dtype == "f32" else t)

    return call


from rlx_mlir.frontend.array_ops import (  # noqa: E402  (they use where, maximum, ...)
    broadcast_to,
    expand_dims,
    full_like,
    ones_like,
    outer,
    repeat,
    split,
    square,
    take_along_axis,
    tile,
    tril,
    triu,
    zeros_like,
)

_ARRAY_OPS = (broadcast_to, expand_dims, outer, repeat, split, square, take_along_axis, tile,
              tril, triu)
_CONSTRUCTORS = (full_like, ones_like, zeros_like)  # no arithmetic: their dtype as asked
for _name, _fn in list(globals().items()):
    if not _name.startswith("_") and inspect.isfunction(_fn) and (
            _fn.__module__ == __name__ or _fn in _ARRAY_OPS):
        globals()[_name] = _eager(_half_in_f32(_fn))
    elif _fn in _CONSTRUCTORS:
        globals()[_name] = _eager(_fn)
