"""Discrete Fourier transforms, as ``jax.numpy.fft`` / ``numpy.fft`` (op: ``rlx.fft``,
in :mod:`rlx_mlir.dialects.fft`).

``fft`` / ``ifft`` (and ``fft2`` / ``fftn`` and their inverses, one axis after the
other) take any numeric tensor (real ones become c64, f64 ones c128),
``rfft`` a real one and ``irfft`` the half spectrum ``rfft`` returns; ``n`` crops or
zero-pads the transformed axis first, ``axis`` picks it, and ``norm`` is numpy's
(``None``/``"backward"``, ``"ortho"``, ``"forward"``). All are differentiable (the
complex cotangent convention of SPEC 5.9) and batch under ``vmap``::

    spectrum = rlx.fft.rfft(signal)                 # [..., n // 2 + 1], c64
    power = rlx.nn.complex_norm_sq(spectrum)         # a real loss surface
    smooth = rlx.fft.irfft(spectrum * low_pass, n=signal.shape[-1])

Called outside a trace on numpy arrays, they run at once (as ``rlx.nn`` functions do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.nn import _axis, _eager, _integer, concat

_NORMS = (None, "backward", "ortho", "forward")


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


MAX_LENGTH = 2**31 - 1


def _check(caller: str, x: Tensor, n: Any, norm: str | None) -> int | None:
    """Validate the arguments; ``n`` as an int (None: the axis as it is)."""
    if not isinstance(x, Tensor):
        raise _error(f"{caller}: expected a traced tensor (outside a trace, numpy arrays "
                     f"too), got {type(x).__name__}")
    if norm not in _NORMS:
        raise _error(f"{caller}: norm must be None, 'backward', 'ortho' or 'forward', "
                     f"got {norm!r}")
    n = _integer(n)
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                          or not 1 <= n <= MAX_LENGTH):
        raise _error(f"{caller}: n must be a positive int below 2^31, got {n!r}")
    if x.ndim == 0:
        raise _error(f"{caller}: expected an array of rank >= 1, got a 0-d one")
    return n


def _as_complex(x: Tensor) -> Tensor:
    if x.dtype in ("c64", "c128"):
        return x
    return x.astype("c128" if x.dtype == "f64" else "c64")


def _resized(x: Tensor, n: int) -> Tensor:
    """The last axis (of a complex ``x``) cropped or zero-padded to ``n`` (the zeros a
    broadcast scalar, not a constant of their size)."""
    length = x.shape[-1]
    if n < length:
        return x[..., :n]
    if n > length:
        b = x.builder
        zero = b.constant(np.zeros((1,) * x.ndim, np.float32)).astype(x.dtype)
        return concat([x, b.expand(zero, (*x.shape[:-1], n - length))], axis=-1)
    return x


def _last_axis(x: Tensor, axis: int, caller: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn`` applied with ``axis`` moved last (and moved back)."""
    a = _axis(_integer(axis), x.ndim, caller)
    if a == x.ndim - 1:
        return fn(x)
    return fn(x.swapaxes(a, -1)).swapaxes(a, -1)


def _transform(x: Tensor, inverse: bool, norm: str | None) -> Tensor:
    return x.builder.fft(x, inverse=inverse, norm=norm or "backward")


def fft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``y[k] = sum_m x[m] exp(-2 pi i k m / n)`` along ``axis`` (``jnp.fft.fft``).

    >>> rlx.fft.fft(np.array([1.0, 2.0, 3.0, 4.0], np.float32))  # doctest: +SKIP
    array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
    """
    n = _check("fft", x, n, norm)
    return _last_axis(x, axis, "fft", lambda v: _transform(
        _resized(_as_complex(v), n or v.shape[-1]), False, norm))


def ifft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft` (``jnp.fft.ifft``; scaled by ``1/n`` by default)."""
    n = _check("ifft", x, n, norm)
    return _last_axis(x, axis, "ifft", lambda v: _transform(
        _resized(_as_complex(v), n or v.shape[-1]), True, norm))


def rfft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The ``n // 2 + 1`` non-negative frequencies of a real signal's :func:`fft`."""
    n = _check("rfft", x, n, norm)
    if x.dtype in ("c64", "c128"):
        raise _error("rfft: expected a real array, got a complex one (use fft)")

    def half(v: Tensor) -> Tensor:
        size = n or v.shape[-1]
        return _transform(_resized(_as_complex(v), size), False, norm)[..., :size // 2 + 1]

    return _last_axis(x, axis, "rfft", half)


def irfft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The real signal of length ``n`` (default ``2 (m - 1)``) whose :func:`rfft` is the
    ``m`` frequencies ``x``: the spectrum is completed by Hermitian symmetry (the
    imaginary parts of the zero and Nyquist terms do not contribute, as in numpy)."""
    n = _check("irfft", x, n, norm)

    def signal(v: Tensor) -> Tensor:
        size = n or 2 * (v.shape[-1] - 1)
        if size < 1:
            raise _error(f"irfft: {v.shape[-1]} frequencies give an empty signal; pass n")
        half = _resized(_as_complex(v), size // 2 + 1)
        mirrored = np.arange(size - size // 2 - 1, 0, -1)  # conj(X[n - k]), k > n // 2
        full = concat([half, half[..., mirrored].conj()], axis=-1) if len(mirrored) else half
        return _transform(full, True, norm).real

    return _last_axis(x, axis, "irfft", signal)


def _axes(caller: str, x: Tensor, s: Any, axes: Any) -> tuple[list[int], list[int | None]]:
    """numpy's ``s``/``axes`` of the n-d transforms: the axes (default: the last
    ``len(s)``, or all) and a length per axis (None: as it is)."""
    if s is not None and not isinstance(s, (list, tuple, range, np.ndarray)):
        raise _error(f"{caller}: s must be a sequence of lengths (one per axis), got {s!r}")
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(x.ndim))
    if isinstance(_integer(axes), int):
        axes = [axes]
    if isinstance(axes, np.ndarray) and axes.ndim == 1 and axes.dtype.kind in "iu":
        axes = axes.tolist()  # numpy and JAX take an array of axes
    if not isinstance(axes, (list, tuple, range)):
        raise _error(f"{caller}: axes must be an int or a sequence of ints, got {axes!r}")
    axes = [_axis(_integer(a), x.ndim, caller) for a in axes]
    if len(set(axes)) != len(axes):
        raise _error(f"{caller}: repeated axes {axes}")
    sizes = [None] * len(axes) if s is None else [_integer(n) for n in s]
    if len(sizes) != len(axes):
        raise _error(f"{caller}: s has {len(sizes)} lengths for {len(axes)} axes")
    return axes, sizes


def fftn(x: Tensor, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """The n-d transform over ``axes`` (default all), one axis at a time (``jnp.fft.fftn``)."""
    _check("fftn", x, None, norm)
    axes, sizes = _axes("fftn", x, s, axes)
    for a, n in zip(axes, sizes, strict=True):
        x = fft(x, n=n, axis=a, norm=norm)
    return x


def ifftn(x: Tensor, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fftn` (``jnp.fft.ifftn``)."""
    _check("ifftn", x, None, norm)
    axes, sizes = _axes("ifftn", x, s, axes)
    for a, n in zip(axes, sizes, strict=True):
        x = ifft(x, n=n, axis=a, norm=norm)
    return x


def fft2(x: Tensor, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`fftn` over the last two axes (``jnp.fft.fft2``)."""
    return fftn(x, s, axes, norm)


def ifft2(x: Tensor, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ifftn` over the last two axes (``jnp.fft.ifft2``)."""
    return ifftn(x, s, axes, norm)


def fftshift(x: Tensor, axes: Any = None) -> Tensor:
    """The zero frequency moved to the centre (``jnp.fft.fftshift``): a roll by ``n // 2``."""
    return _rolled(x, axes, lambda n: n // 2, "fftshift")


def ifftshift(x: Tensor, axes: Any = None) -> Tensor:
    """The inverse of :func:`fftshift`: a roll by ``-(n // 2)``."""
    return _rolled(x, axes, lambda n: -(n // 2), "ifftshift")


def _rolled(x: Tensor, axes: Any, shift_of: Callable[[int], int], caller: str) -> Tensor:
    if isinstance(x, (np.ndarray, np.generic)):  # numpy data inside a trace: numpy's shift
        shifted = np.fft.fftshift if caller == "fftshift" else np.fft.ifftshift
        return shifted(np.asarray(x), axes=axes)
    if not isinstance(x, Tensor):
        raise _error(f"{caller}: expected a tensor or numpy array, got {type(x).__name__}")
    axes = range(x.ndim) if axes is None else [axes] if isinstance(_integer(axes), int) else axes
    if not isinstance(axes, (list, tuple, range)):
        raise _error(f"{caller}: axes must be an int or a sequence of ints, got {axes!r}")
    for a in (_axis(_integer(a), x.ndim, caller) for a in axes):
        n = x.shape[a]
        shift = shift_of(n) % n if n else 0
        if shift:
            index = [slice(None)] * x.ndim
            head, tail = list(index), list(index)
            head[a], tail[a] = slice(n - shift, None), slice(None, n - shift)
            x = concat([x[tuple(head)], x[tuple(tail)]], axis=a)
    return x


def _length(caller: str, n: Any) -> int:
    n = _integer(n)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise _error(f"{caller}: n must be a positive int, got {n!r}")
    return int(n)


def fftfreq(n: int, d: float = 1.0) -> np.ndarray:
    """The sample frequencies of an ``n``-point transform (numpy's values, as f32)."""
    return np.fft.fftfreq(_length("fftfreq", n), d).astype(np.float32)


def rfftfreq(n: int, d: float = 1.0) -> np.ndarray:
    """The non-negative frequencies :func:`rfft` returns (numpy's values, as f32)."""
    return np.fft.rfftfreq(_length("rfftfreq", n), d).astype(np.float32)


fft, ifft, rfft, irfft, fftn, ifftn, fft2, ifft2, fftshift, ifftshift = (
    _eager(f) for f in (fft, ifft, rfft, irfft, fftn, ifftn, fft2, ifft2, fftshift, ifftshift))
