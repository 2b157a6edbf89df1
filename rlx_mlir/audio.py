"""Spectrograms for audio models (SPEC 2.3.5 ``LogMel``), written with ``rlx.gather``,
``rlx.fft`` and a matmul, so they differentiate and batch like everything else::

    spec = rlx.audio.stft(wave, n_fft=400, hop_length=160)         # [..., 201, frames] c64
    feats = rlx.audio.log_mel_spectrogram(wave, 16000, n_fft=400, hop_length=160, n_mels=80)

``stft`` follows ``torch.stft(..., return_complex=True)`` (one-sided, ``center`` with
reflect padding) with a periodic Hann window by default (torch's default is a rectangular
window: pass ``torch.hann_window`` there for the same numbers); ``mel_filterbank`` is
``torchaudio.functional.melscale_fbanks`` (HTK or Slaney mel scale, optional Slaney
area normalisation) as a numpy array. Called outside a trace on numpy arrays, the
functions run at once (as ``rlx.nn``'s do).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.nn import _eager, _integer


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _positive(caller: str, name: str, value: Any) -> int:
    value = _integer(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise _error(f"{caller}: {name} must be a positive int, got {value!r}")
    return int(value)


def hann_window(length: int) -> np.ndarray:
    """The periodic Hann window (``torch.hann_window(length)``), f32.

    >>> hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _hann(length).astype(np.float32)


def _hann(length: int) -> np.ndarray:
    if length == 1:
        return np.ones(1)  # torch.hann_window(1)
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)


def _frame_positions(samples: int, n_fft: int, hop: int, center: bool) -> np.ndarray:
    """``[frames, n_fft]`` sample indices of each frame; with ``center`` the signal is
    reflect-padded by ``n_fft // 2`` on both sides, the reflection folded into the
    indices (one gather frames and pads)."""
    pad = n_fft // 2 if center else 0
    if center and samples <= pad:
        raise _error(f"stft: reflect padding by {pad} needs more than {pad} samples, got "
                     f"{samples}")
    length = samples + 2 * pad
    if length < n_fft:
        raise _error(f"stft: {samples} samples are fewer than n_fft = {n_fft}")
    frames = 1 + (length - n_fft) // hop
    index = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :] - pad
    index = np.where(index < 0, -index, index)
    index = np.where(index >= samples, 2 * (samples - 1) - index, index)
    return index.astype(np.int32)


def stft(x: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Any = None, center: bool = True) -> Tensor:
    """The one-sided short-time Fourier transform of ``x [..., T]``: complex ``[...,
    n_fft // 2 + 1, frames]`` as ``torch.stft(x, n_fft, hop_length, win_length, window,
    center, pad_mode="reflect", return_complex=True)`` given the same window; the window
    defaults to a periodic Hann window of ``win_length`` (default ``n_fft``) samples (torch:
    a rectangular one), zero-padded to ``n_fft`` in the middle.

    >>> spec = rlx.audio.stft(wave, 400, 160)                    # doctest: +SKIP
    """
    from rlx_mlir import fft
    from rlx_mlir.nn import _bool_flag

    if not isinstance(x, Tensor) or x.ndim == 0:
        raise _error("stft: expected a traced signal of rank >= 1 (outside a trace, a numpy "
                     f"array), got {type(x).__name__ if not isinstance(x, Tensor) else 'a 0-d one'}")
    if x.dtype in ("c64", "c128"):
        raise _error(f"stft: x must be a real signal, got {x.dtype}")
    center = _bool_flag(center, "stft: center")
    n_fft = _positive("stft", "n_fft", n_fft)
    hop = _positive("stft", "hop_length", n_fft // 4 if hop_length is None else hop_length)
    width = _positive("stft", "win_length", n_fft if win_length is None else win_length)
    if width > n_fft:
        raise _error(f"stft: win_length {width} exceeds n_fft {n_fft}")
    taper = _hann(width) if window is None else np.asarray(window)
    if taper.dtype.kind not in "iuf":
        raise _error(f"stft: window must be a real array of win_length = {width} samples, "
                     f"got {window!r}"[:200])
    taper = taper.astype(np.float64)
    if taper.shape != (width,):
        raise _error(f"stft: window must have win_length = {width} samples, got "
                     f"{list(taper.shape)}")
    left = (n_fft - width) // 2
    taper = np.pad(taper, (left, n_fft - width - left))
    signal = x if x.dtype in ("f32", "f64") else x.astype("f32")
    positions = _frame_positions(signal.shape[-1], n_fft, hop, bool(center))
    frames = signal.builder.gather(signal, positions, axis=signal.ndim - 1)
    spectrum = fft.rfft(frames * taper.astype(np.float64 if signal.dtype == "f64" else np.float32))
    return spectrum.swapaxes(-1, -2)


def _hz_to_mel(f: np.ndarray, scale: str) -> np.ndarray:
    if scale == "htk":
        return 2595.0 * np.log10(1.0 + f / 700.0)
    linear = f / (200.0 / 3)
    logstep = np.log(6.4) / 27.0
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / logstep, linear)


def _mel_to_hz(m: np.ndarray, scale: str) -> np.ndarray:
    if scale == "htk":
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), m * (200.0 / 3))


def mel_filterbank(n_freqs: int, f_min: float, f_max: float, n_mels: int, sample_rate: int,
                   norm: str | None = None, mel_scale: str = "htk") -> np.ndarray:
    """Triangular mel filters ``[n_freqs, n_mels]`` (f32) over the ``n_freqs`` bins of a
    one-sided spectrum, as ``torchaudio.functional.melscale_fbanks``: ``mel_scale`` "htk"
    or "slaney", ``norm`` None or "slaney" (each filter divided by its width in Hz / 2).

    >>> mel_filterbank(201, 0.0, 8000.0, 80, 16000).shape
    (201, 80)
    """
    if mel_scale not in ("htk", "slaney") or norm not in (None, "slaney"):
        raise _error(f"mel_filterbank: mel_scale must be 'htk' or 'slaney' and norm None or "
                     f"'slaney', got {mel_scale!r}, {norm!r}")
    n_freqs = _positive("mel_filterbank", "n_freqs", n_freqs)
    n_mels = _positive("mel_filterbank", "n_mels", n_mels)
    sample_rate = _positive("mel_filterbank", "sample_rate", sample_rate)
    numbers = all(isinstance(f, (int, float, np.integer, np.floating)) and
                  not isinstance(f, bool) and np.isfinite(f) for f in (f_min, f_max))
    if not numbers or not 0 <= f_min < f_max <= sample_rate / 2:
        raise _error(f"mel_filterbank: need 0 <= f_min < f_max <= sample_rate / 2 = "
                     f"{sample_rate / 2}, got f_min={f_min!r}, f_max={f_max!r}")
    freqs = np.linspace(0, sample_rate // 2, n_freqs)
    mels = np.linspace(_hz_to_mel(np.float64(f_min), mel_scale),
                       _hz_to_mel(np.float64(f_max), mel_scale), n_mels + 2)
    points = _mel_to_hz(mels, mel_scale)
    widths = np.diff(points)
    slopes = points[None, :] - freqs[:, None]
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    banks = np.maximum(0.0, np.minimum(down, up))
    if norm == "slaney":
        banks *= 2.0 / (points[2:n_mels + 2] - points[:n_mels])
    return banks.astype(np.float32)


def log_mel_spectrogram(x: Tensor, sample_rate: int, n_fft: int = 400,
                        hop_length: int | None = None, n_mels: int = 80, f_min: float = 0.0,
                        f_max: float | None = None, power: float = 2.0, eps: float = 1e-10,
                        center: bool = True, norm: str | None = None,
                        mel_scale: str = "htk") -> Tensor:
    """``log(max(|stft(x)|^power`` projected on the mel filters``, eps))``: ``[..., n_mels,
    frames]``, as ``torchaudio.transforms.MelSpectrogram`` (Hann window; ``hop_length``
    ``n_fft // 2`` and ``f_max`` ``sample_rate // 2`` by default, as there) followed by a
    natural log floored at ``eps``.

    >>> feats = rlx.audio.log_mel_spectrogram(wave, 16000, 400, 160, 80)  # doctest: +SKIP
    """
    from rlx_mlir.nn import complex_norm_sq, log, maximum, where

    sample_rate = _positive("log_mel_spectrogram", "sample_rate", sample_rate)
    power = _integer(power)
    if isinstance(power, bool) or not isinstance(power, (int, float, np.floating)) or \
            not 0 < power < np.inf:
        raise _error(f"log_mel_spectrogram: power must be a positive number, got {power!r}")
    n_fft = _positive("log_mel_spectrogram", "n_fft", n_fft)
    hop = n_fft // 2 if hop_length is None else hop_length  # torchaudio's MelSpectrogram
    filters = mel_filterbank(n_fft // 2 + 1, f_min,
                             float(sample_rate // 2) if f_max is None else f_max, n_mels,
                             sample_rate, norm, mel_scale)
    energy = complex_norm_sq(stft(x, n_fft, hop, center=center))
    if power != 2.0:  # |z|^p with the gradient 0 at z = 0, as torch's abs()
        silent = energy == 0
        energy = where(silent, 0.0, where(silent, 1.0, energy) ** (float(power) / 2.0))
    bank = filters.T.astype(np.float64 if energy.dtype == "f64" else np.float32)
    mel = energy.builder.constant(bank) @ energy
    return log(maximum(mel, eps))


stft, log_mel_spectrogram = (_eager(f) for f in (stft, log_mel_spectrogram))
