"""Discrete Fourier transforms, as ``jax.numpy.fft`` / ``numpy.fft`` (op: ``rlx.fft``,
in :mod:`rlx_mlir.dialects.fft`).

``fft`` / ``ifft`` take any numeric tensor (real ones become c64, f64 ones c128),
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

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.nn import _axis, _eager, concat

_NORMS = (None, "backward", "ortho", "forward")


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _check(caller: str, x: Tensor, n: int | None, norm: str | None) -> None:
    if not isinstance(x, Tensor):
        raise _error(f"{caller}: expected a tensor or numpy array, got {type(x).__name__}")
    if norm not in _NORMS:
        raise _error(f"{caller}: norm must be None, 'backward', 'ortho' or 'forward', "
                     f"got {norm!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                          or n < 1):
        raise _error(f"{caller}: n must be a positive int, got {n!r}")
    if x.ndim == 0:
        raise _error(f"{caller}: expected an array of rank >= 1, got a 0-d one")


def _as_complex(x: Tensor) -> Tensor:
    if x.dtype in ("c64", "c128"):
        return x
    return x.astype("c128" if x.dtype == "f64" else "c64")


def _resized(x: Tensor, n: int) -> Tensor:
    """The last axis cropped or zero-padded to ``n``."""
    length = x.shape[-1]
    if n < length:
        return x[..., :n]
    if n > length:
        zeros = np.zeros((*x.shape[:-1], n - length), np.complex64 if x.dtype == "c64"
                         else np.complex128 if x.dtype == "c128" else np.float32)
        return concat([x, zeros], axis=-1)
    return x


def _last_axis(x: Tensor, axis: int, caller: str, fn) -> Tensor:
    """``fn`` applied with ``axis`` moved last (and moved back)."""
    a = _axis(axis, x.ndim, caller)
    if a == x.ndim - 1:
        return fn(x)
    return fn(x.swapaxes(a, -1)).swapaxes(a, -1)


def _transform(x: Tensor, inverse: bool, norm: str | None) -> Tensor:
    return x.builder.fft(x, inverse=inverse, norm=norm or "backward")


def fft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``y[k] = sum_m x[m] exp(-2 pi i k m / n)`` along ``axis`` (``jnp.fft.fft``)."""
    _check("fft", x, n, norm)
    return _last_axis(x, axis, "fft", lambda v: _transform(
        _resized(_as_complex(v), n or v.shape[-1]), False, norm))


def ifft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft` (``jnp.fft.ifft``; scaled by ``1/n`` by default)."""
    _check("ifft", x, n, norm)
    return _last_axis(x, axis, "ifft", lambda v: _transform(
        _resized(_as_complex(v), n or v.shape[-1]), True, norm))


def rfft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The ``n // 2 + 1`` non-negative frequencies of a real signal's :func:`fft`."""
    _check("rfft", x, n, norm)
    if x.dtype in ("c64", "c128"):
        raise _error("rfft: expected a real array, got a complex one (use fft)")

    def half(v: Tensor) -> Tensor:
        size = n or v.shape[-1]
        return _transform(_as_complex(_resized(v, size)), False, norm)[..., :size // 2 + 1]

    return _last_axis(x, axis, "rfft", half)


def irfft(x: Tensor, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """The real signal of length ``n`` (default ``2 (m - 1)``) whose :func:`rfft` is the
    ``m`` frequencies ``x``: the spectrum is completed by Hermitian symmetry (the
    imaginary parts of the zero and Nyquist terms do not contribute, as in numpy)."""
    _check("irfft", x, n, norm)

    def signal(v: Tensor) -> Tensor:
        size = n or 2 * (v.shape[-1] - 1)
        if size < 1:
            raise _error(f"irfft: {v.shape[-1]} frequencies give an empty signal; pass n")
        half = _resized(_as_complex(v), size // 2 + 1)
        mirrored = np.arange(size - size // 2 - 1, 0, -1)  # conj(X[n - k]), k > n // 2
        full = concat([half, half[..., mirrored].conj()], axis=-1) if len(mirrored) else half
        return _transform(full, True, norm).real

    return _last_axis(x, axis, "irfft", signal)


fft, ifft, rfft, irfft = (_eager(f) for f in (fft, ifft, rfft, irfft))
