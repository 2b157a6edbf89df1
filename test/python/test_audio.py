"""rlx.audio: the STFT against torch.stft, mel filters against torchaudio's formula
written out, the log-mel spectrogram against numpy, its gradient against finite
differences, vmap, and clean errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.testing import check_grads


def _wave(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _torch_stft(x, n_fft, hop, win_length=None, window=None, center=True):
    win_length = win_length or n_fft
    window = torch.hann_window(win_length, dtype=torch.float64) if window is None else \
        torch.tensor(window, dtype=torch.float64)
    return torch.stft(torch.tensor(x, dtype=torch.float64), n_fft, hop, win_length, window,
                      center=center, pad_mode="reflect", return_complex=True).numpy()


@pytest.mark.parametrize("n_fft,hop,win,center", [
    (400, 160, None, True), (400, 160, None, False), (512, 128, 400, True), (16, 5, 9, True),
])
def test_stft_matches_torch(n_fft, hop, win, center):
    x = _wave((2, 1600))
    got = rlx.jit(lambda x: rlx.audio.stft(x, n_fft, hop, win, center=center))(x)
    want = _torch_stft(x, n_fft, hop, win, center=center)
    assert got.shape == want.shape and got.dtype == np.complex64
    np.testing.assert_allclose(got, want, atol=3e-5 * np.abs(want).max())


def test_stft_custom_window_f64_and_eager():
    x = _wave(300, 1, np.float64)
    window = np.blackman(64)
    got = rlx.audio.stft(x, 64, 16, window=window)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, _torch_stft(x, 64, 16, window=window), atol=1e-10)


def _reference_filters(n_freqs, f_min, f_max, n_mels, sample_rate):
    """torchaudio.functional.melscale_fbanks (HTK scale, no norm), written as loops."""
    freqs = np.linspace(0, sample_rate // 2, n_freqs)
    to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    mels = np.linspace(to_mel(f_min), to_mel(f_max), n_mels + 2)
    points = 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    banks = np.zeros((n_freqs, n_mels))
    for i in range(n_mels):
        for j, f in enumerate(freqs):
            rise = (f - points[i]) / (points[i + 1] - points[i])
            fall = (points[i + 2] - f) / (points[i + 2] - points[i + 1])
            banks[j, i] = max(0.0, min(rise, fall))
    return banks


def test_mel_filterbank():
    got = rlx.audio.mel_filterbank(201, 0.0, 8000.0, 80, 16000)
    np.testing.assert_allclose(got, _reference_filters(201, 0.0, 8000.0, 80, 16000), atol=1e-6)
    # Slaney area norm: each filter times 2 / (its upper edge - its lower edge) in Hz
    normed = rlx.audio.mel_filterbank(201, 0.0, 8000.0, 80, 16000, norm="slaney")
    to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    edges = 700.0 * (10.0 ** (np.linspace(0.0, to_mel(8000.0), 82) / 2595.0) - 1.0)
    np.testing.assert_allclose(normed, _reference_filters(201, 0.0, 8000.0, 80, 16000) *
                               (2.0 / (edges[2:] - edges[:-2])), rtol=1e-5, atol=1e-9)
    # the Slaney mel scale: linear below 1 kHz (1 kHz is mel 15), logarithmic above
    from rlx_mlir.audio import _hz_to_mel, _mel_to_hz
    hz = np.array([0.0, 500.0, 1000.0, 4000.0])
    np.testing.assert_allclose(_hz_to_mel(hz, "slaney")[:3], [0.0, 7.5, 15.0])
    np.testing.assert_allclose(_mel_to_hz(_hz_to_mel(hz, "slaney"), "slaney"), hz)
    with pytest.raises(rlx.RlxError, match="mel_scale must be 'htk' or 'slaney'"):
        rlx.audio.mel_filterbank(201, 0.0, 8000.0, 80, 16000, mel_scale="mel")


def test_log_mel_spectrogram_matches_numpy_and_batches():
    x = _wave((3, 4000), 2)
    got = rlx.jit(lambda x: rlx.audio.log_mel_spectrogram(x, 16000, 400, 160, 40))(x)
    power = np.abs(_torch_stft(x, 400, 160)) ** 2
    want = np.log(np.maximum(_reference_filters(201, 0.0, 8000.0, 40, 16000).T @ power, 1e-10))
    assert got.shape == (3, 40, 26)
    np.testing.assert_allclose(got, want, atol=2e-3)
    batched = rlx.vmap(lambda w: rlx.audio.log_mel_spectrogram(w, 16000, 400, 160, 40))(x)
    np.testing.assert_allclose(batched, got, atol=1e-5)


def test_log_mel_gradient_matches_finite_differences():
    x = _wave(64, 3, np.float64)
    traced = rlx.jit(lambda x: rlx.audio.log_mel_spectrogram(
        x, 8000, 16, 8, 4, eps=1e-3).sum()).lower(x)
    assert check_grads(traced.module, traced.name).ok


@pytest.mark.parametrize("call,message", [
    (lambda x: rlx.audio.stft(x[:100], 400, 160), "reflect padding by 200 needs more than 200"),
    (lambda x: rlx.audio.stft(x, 400, 160, win_length=500), "win_length 500 exceeds n_fft 400"),
    (lambda x: rlx.audio.stft(x, 400, 160, window=np.ones(10)), "window must have win_length"),
    (lambda x: rlx.audio.stft(x, 0), "n_fft must be a positive int"),
    (lambda x: rlx.audio.stft(x[:100], 400, 160, center=False), "fewer than n_fft = 400"),
])
def test_errors_are_located(call, message):
    with pytest.raises(rlx.RlxError, match=message) as info:
        rlx.jit(call)(_wave(1600))
    assert "test_audio.py" in str(info.value)


def test_review_fixes():
    """torchaudio's MelSpectrogram defaults (hop n_fft // 2, f_max sample_rate // 2);
    power 1 has finite gradients over silence (|z| at 0, as torch's abs); a one-sample
    window is 1, as torch.hann_window(1); bad arguments are located errors."""
    x = _wave(2000, 4)
    assert rlx.audio.log_mel_spectrogram(x, 16000, 400, n_mels=40).shape == (40, 11)
    silent = np.concatenate([np.zeros(64), _wave(64, 5, np.float64)])
    g = rlx.grad(lambda s: rlx.audio.log_mel_spectrogram(s, 8000, 16, 8, 4, power=1.0,
                                                         eps=1e-3).sum())(silent)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(rlx.audio.stft(np.arange(4.0), 1, 1, center=False)[0],
                               np.arange(4.0))
    for call, message in (
            (lambda: rlx.audio.mel_filterbank(201, 0.0, 9000.0, 40, 16000),
             "f_max <= sample_rate / 2"),
            (lambda: rlx.audio.mel_filterbank(201, 0.0, 8000.0, -1, 16000),
             "n_mels must be a positive int"),
            (lambda: rlx.audio.stft(x, 8, window="hann"), "window must be a real array"),
            (lambda: rlx.audio.log_mel_spectrogram(x, 16000, power=None),
             "power must be a positive number")):
        with pytest.raises(rlx.RlxError, match=message):
            call()
