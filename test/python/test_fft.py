"""rlx.fft and rlx.fft.{fft, ifft, rfft, irfft}: values against numpy (radix-2, direct
and Bluestein lengths, every norm, both directions, native and interpreted), gradients
and tangents against JAX, vmap, and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rlx_mlir as rlx

jax.config.update("jax_enable_x64", True)

LENGTHS = [1, 2, 8, 256, 3, 12, 17, 100]  # radix-2, direct (<= 16), Bluestein


def _rel(got, expected) -> float:
    expected = np.asarray(expected)
    return float(np.abs(np.asarray(got) - expected).max() / max(np.abs(expected).max(), 1e-30))


def _signal(shape, dtype=np.complex64, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return z.astype(dtype)


def _op(inverse, norm):
    return lambda x: x.builder.fft(x, inverse=inverse, norm=norm)


def _numpy(x, inverse, norm):
    wide = x.astype(np.complex128)
    if norm == "none":
        return np.fft.ifft(wide, norm="forward") if inverse else np.fft.fft(wide)
    return np.fft.ifft(wide, norm=norm) if inverse else np.fft.fft(wide, norm=norm)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("inverse", [False, True])
def test_op_matches_numpy_natively_and_interpreted(n, inverse):
    for norm in ("backward", "ortho", "forward", "none"):
        x = _signal((3, 2, n))
        traced = rlx.jit(_op(inverse, norm)).lower(x)
        (interpreted,) = rlx.interpret(traced.module, x, entry=traced.name)
        native = rlx.jit(_op(inverse, norm))(x)
        expected = _numpy(x, inverse, norm)
        assert native.dtype == np.complex64
        assert _rel(native, expected) < 1e-6, (n, norm)
        assert _rel(interpreted, expected) < 1e-6, (n, norm)


@pytest.mark.parametrize("n", [64, 1000])
def test_c128_keeps_f64_precision(n):
    x = _signal((4, n), np.complex128)
    assert _rel(rlx.jit(_op(False, "backward"))(x), np.fft.fft(x)) < 1e-13
    assert _rel(rlx.jit(_op(True, "ortho"))(x), np.fft.ifft(x, norm="ortho")) < 1e-13


@pytest.mark.parametrize("shape", [(300, 256), (3, 100, 128), (200, 100)])
def test_batches_split_into_cache_blocks(shape):
    """Batches bigger than a cache block run block by block over the threads."""
    x = _signal(shape)
    assert _rel(rlx.jit(_op(False, "ortho"))(x), np.fft.fft(x, norm="ortho")) < 1e-6
    assert _rel(rlx.jit(_op(True, "backward"))(x), np.fft.ifft(x)) < 1e-6


def test_round_trip_of_a_long_odd_length():
    x = _signal((2, 1023))
    back = rlx.jit(lambda x: rlx.fft.ifft(rlx.fft.fft(x)))(x)
    assert _rel(back, x) < 2e-6


def test_frontend_functions_match_numpy():
    x = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    z = _signal((4, 12))
    cases = [
        (lambda x: rlx.fft.fft(x), x, np.fft.fft(x)),
        (lambda x: rlx.fft.fft(x, n=8, axis=0, norm="ortho"), x,
         np.fft.fft(x, n=8, axis=0, norm="ortho")),
        (lambda z: rlx.fft.ifft(z, n=20, norm="forward"), z, np.fft.ifft(z, n=20, norm="forward")),
        (lambda x: rlx.fft.rfft(x, axis=0), x, np.fft.rfft(x, axis=0)),
    ]
    spectrum = np.fft.rfft(x).astype(np.complex64)
    cases += [(lambda s, n=n: rlx.fft.irfft(s, n=n), spectrum, np.fft.irfft(spectrum, n=n))
              for n in (None, 16, 15, 7, 40)]
    for fn, arg, expected in cases:
        got = rlx.jit(fn)(arg)
        assert got.shape == expected.shape and _rel(got, expected) < 1e-6
    assert rlx.jit(lambda x: rlx.fft.fft(x))(x.astype(np.float64)).dtype == np.complex128
    assert _rel(rlx.fft.rfft(x), np.fft.rfft(x)) < 1e-6  # eager, on numpy


def test_nd_transforms_and_shifts_match_numpy():
    x = _signal((3, 8, 6))
    assert _rel(rlx.jit(lambda x: rlx.fft.fft2(x))(x), np.fft.fft2(x)) < 1e-6
    assert _rel(rlx.jit(lambda x: rlx.fft.fftn(x))(x), np.fft.fftn(x)) < 1e-6
    got = rlx.jit(lambda x: rlx.fft.ifftn(x, s=(4, 10), axes=(0, 2), norm="ortho"))(x)
    assert _rel(got, np.fft.ifftn(x, s=(4, 10), axes=(0, 2), norm="ortho")) < 1e-6
    np.testing.assert_array_equal(rlx.jit(lambda x: rlx.fft.fftshift(x))(x), np.fft.fftshift(x))
    np.testing.assert_array_equal(rlx.jit(lambda x: rlx.fft.ifftshift(x, axes=1))(x),
                                  np.fft.ifftshift(x, axes=1))
    odd = np.arange(7.0, dtype=np.float32)
    np.testing.assert_array_equal(rlx.fft.ifftshift(rlx.fft.fftshift(odd)), odd)
    np.testing.assert_array_equal(rlx.fft.rfftfreq(8, 0.5), np.fft.rfftfreq(8, 0.5))
    with pytest.raises(rlx.RlxError, match="repeated axes"):
        rlx.fft.fftn(x, axes=(1, -2))


def test_gradients_match_jax():
    """A real loss of fft/rfft/irfft outputs; rlx's gradient of a complex argument is the
    conjugate of half of jax.grad's (SPEC 5.9)."""
    x = np.random.default_rng(2).standard_normal((4, 16))
    weights = np.arange(9.0)

    def loss(fft, norm_sq, x):
        return norm_sq(fft.rfft(x) * weights).sum() + fft.irfft(fft.rfft(x * x), n=16).sum()

    got = rlx.grad(lambda x: loss(rlx.fft, rlx.nn.complex_norm_sq, x))(x)
    expected = jax.grad(lambda x: loss(jnp.fft, lambda z: jnp.abs(z) ** 2, x))(x)
    assert _rel(got, expected) < 1e-10
    z = _signal((3, 12), np.complex128)
    ramp = np.linspace(0, 1, 12)

    def complex_loss(fft, norm_sq, z):
        return norm_sq(fft.fft(z, norm="ortho") * ramp).sum() + fft.ifft(z, n=7).real.sum()

    got = rlx.grad(lambda z: complex_loss(rlx.fft, rlx.nn.complex_norm_sq, z))(z)
    expected = jax.grad(lambda z: complex_loss(jnp.fft, lambda w: jnp.abs(w) ** 2, z))(z)
    assert _rel(got, np.conj(expected) / 2) < 1e-10


def test_jvp_vmap_and_second_order():
    z = _signal((5, 32))
    primal, tangent = rlx.jvp(lambda z: rlx.fft.fft(z), (z,), (2 * z,))
    assert _rel(tangent, 2 * np.fft.fft(z)) < 1e-6
    assert _rel(rlx.vmap(lambda r: rlx.fft.ifft(r))(z), np.fft.ifft(z)) < 1e-6
    x = np.random.default_rng(3).standard_normal(8)

    def energy(x):  # sum |fft(x^2)|^2 = 8 sum x^4 (Parseval): Hessian diag 96 x^2
        return rlx.nn.complex_norm_sq(rlx.fft.fft(x * x)).sum()

    hessian = rlx.jit(rlx.hessian(energy))(x)
    np.testing.assert_allclose(hessian, np.diag(96 * x**2), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("call, message", [
    (lambda: rlx.fft.fft(np.ones(4, np.float32), norm="unitary"), "norm must be None"),
    (lambda: rlx.fft.fft(np.ones(4, np.float32), n=0), "n must be a positive int"),
    (lambda: rlx.fft.rfft(np.ones(4, np.complex64)), "rfft: expected a real array"),
    (lambda: rlx.fft.fft(np.ones(4, np.float32), axis=2), "axis 2 is out of range"),
    (lambda: rlx.fft.irfft(np.ones(1, np.complex64)), "give an empty signal; pass n"),
])
def test_errors_are_located(call, message):
    with pytest.raises(rlx.RlxError, match=message):
        call()


def test_review_edge_cases():
    ints = np.arange(5, dtype=np.int32)
    assert _rel(rlx.jit(lambda x: rlx.fft.rfft(x, n=8))(ints), np.fft.rfft(ints, n=8)) < 1e-6
    for shape in [(3, 0), (0, 8)]:
        assert rlx.jit(rlx.fft.fft)(np.zeros(shape, np.complex64)).shape == shape
    x = np.ones((2, 6), np.float32)
    assert rlx.fft.fft(x, n=np.int64(4)).shape == (2, 4)  # numpy integers, eagerly
    with pytest.raises(rlx.RlxError, match="below 2\\^31"):
        rlx.jit(lambda x: rlx.fft.fft(x, n=2**40))(x)
    # numpy data inside a trace is a constant, folded at trace time (as jnp's)
    got = rlx.jit(lambda w: rlx.fft.rfft(x).real.sum() * w)(np.float32(2))
    np.testing.assert_allclose(got, 2 * np.fft.rfft(x).real.sum(), rtol=1e-6)
    padded = rlx.jit(lambda x: rlx.fft.fft(x, n=4096)).lower(np.ones((8, 3), np.float32))
    assert len(padded.as_text()) < 4000  # the zero padding is not a 8x4093 constant


def test_check_grads_of_complex_transforms():
    """Directions with a zero derivative give finite differences of about 1e-9: noise."""
    from rlx_mlir.testing import check_grads

    def loss(z):
        y = rlx.fft.ifft(rlx.fft.fft(z, norm="ortho"), norm="forward")
        return (y.real * y.real).sum()

    traced = rlx.trace(loss, (_signal((3, 12)),))
    report = check_grads(traced.module, traced.name)
    assert report.ok and report.args[0].checks > 0 and report.args[0].unchecked is None
    wrong = rlx.parse("""
    func.func @f(%x: tensor<3xf32>) -> tensor<f32> {
      %0 = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
      func.return %1 : tensor<f32>
    }
    func.func @f_grad(%x: tensor<3xf32>, %d: tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
        attributes {rlx.grad_of = "f", rlx.wrt = ["x"]} {
      %0 = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
      func.return %1, %0 : tensor<f32>, tensor<3xf32>
    }""")
    assert not check_grads(wrong, "f", raise_on_error=False).ok  # x^2 is not d(x^2)/dx
