"""Complex tensors (c64, c128): native code against numpy and the interpreter, gradients
against PyTorch and finite differences, JVPs against JAX (SPEC 2.2.10, 5.3, 5.9).

rlx's cotangent of a complex value is ``dL/d conj(z)`` (SPEC 5.9), half of PyTorch's
``z.grad`` and the conjugate of half of ``jax.grad``'s; the tests compare on that basis.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.runtime.jit import compile as jit_compile
from rlx_mlir.testing import check_grads, check_jvp

C = {"c64": np.complex64, "c128": np.complex128}
TOL = {"c64": 2e-5, "c128": 1e-12}


def _complex(rng: np.random.Generator, shape, dtype="c64") -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(C[dtype])


def _native_and_interpreted(fn, *args):
    traced = rlx.jit(fn).lower(*args)
    (interpreted,) = rlx.interpret(traced.module, *args, entry=traced.name)
    return rlx.jit(fn)(*args), interpreted


# ---------------------------------------------------------------- SPEC's textbook values


TEXTBOOK = [
    ("mul", lambda a, b: a * b, [1 + 2j], [3 + 4j], [-5 + 10j]),
    ("div", lambda a, b: a / b, [1 + 2j], [3 + 4j], [0.44 + 0.08j]),
    ("div_by_self", lambda a, b: a / a, [1 + 2j, -3 + 0.5j], [0j, 0j], [1, 1]),
    ("mul_by_i_rotates", lambda a, b: a * 1j, [1 + 0j, 1j], [0j, 0j], [1j, -1]),
    ("exp_euler", lambda a, b: rlx.nn.exp(a * np.pi), [1j], [0j], [-1]),
    ("log_principal", lambda a, b: rlx.nn.log(a), [-1 + 0j], [0j], [np.pi * 1j]),
    ("neg", lambda a, b: -a, [1 - 2j], [0j], [-1 + 2j]),
    ("norm_sq", lambda a, b: rlx.nn.complex_norm_sq(a), [3 + 4j], [0j], [25]),
    ("modulus", lambda a, b: abs(a), [3 + 4j], [0j], [5]),
    ("sqrt_squared", lambda a, b: rlx.nn.sqrt(a) * rlx.nn.sqrt(a), [-3 + 4j, -2 - 1e-3j],
     [0j, 0j], [-3 + 4j, -2 - 1e-3j]),
    ("sqrt_branch", lambda a, b: rlx.nn.sqrt(a), [-4 + 0j, -4 - 0j], [0j, 0j], [2j, -2j]),
]


@pytest.mark.parametrize("dtype", ["c64", "c128"])
@pytest.mark.parametrize("name,fn,a,b,expected", TEXTBOOK, ids=[t[0] for t in TEXTBOOK])
def test_textbook_values(name, fn, a, b, expected, dtype):
    a, b = np.array(a, C[dtype]), np.array(b, C[dtype])
    if name == "sqrt_branch":  # -4 - 0j: the signed zero picks the lower branch
        a = np.array([complex(-4, 0.0), complex(-4, -0.0)], C[dtype])
    native, interpreted = _native_and_interpreted(fn, a, b)
    for got in (native, interpreted):
        np.testing.assert_allclose(got, np.array(expected), rtol=TOL[dtype], atol=TOL[dtype])


# ---------------------------------------------------------------- native code against numpy


def _model(z, w, x, nn):
    """Every complex op: arithmetic with broadcasting, activations, parts, shapes."""
    y = nn.exp(z * w) / (z + 2.0) - nn.log(w) + nn.sqrt(z) * x
    y = nn.where(nn.real(y) > 0, y, nn.conj(y)) + nn.complex(x, x * 2) * 0.5j
    stacked = nn.concat([y, y[::-1].T.T], axis=0).reshape(2, -1)
    return stacked.sum(axis=0) / stacked.mean() + nn.imag(y).reshape(-1) * y.reshape(-1)


class _Numpy:
    exp, log, sqrt, where, conj, real, imag = (np.exp, np.log, np.sqrt, np.where, np.conj,
                                               np.real, np.imag)
    concat = staticmethod(np.concatenate)

    @staticmethod
    def complex(re, im):
        return re + 1j * im


@pytest.mark.parametrize("dtype", ["c64", "c128"])
@pytest.mark.parametrize("rows", [4, 96])  # 96 x 512: big enough to be split over threads
def test_native_matches_numpy_and_interpreter(dtype, rows):
    rng = np.random.default_rng(rows)
    real = np.float32 if dtype == "c64" else np.float64
    z, w = _complex(rng, (rows, 512), dtype), _complex(rng, (512,), dtype)
    x = rng.standard_normal((rows, 512)).astype(real)
    native, interpreted = _native_and_interpreted(lambda *a: _model(*a, rlx.nn), z, w, x)
    with np.errstate(all="ignore"):
        expected = _model(z.astype(np.complex128), w.astype(np.complex128), x, _Numpy)
    assert native.dtype == C[dtype]
    np.testing.assert_allclose(native, expected, rtol=TOL[dtype] * 10, atol=TOL[dtype])
    np.testing.assert_allclose(interpreted, expected, rtol=TOL[dtype] * 10, atol=TOL[dtype])


def test_complex_result_and_mixed_operands():
    """A complex output; a real tensor or Python complex number with a complex one
    promotes as numpy (f32 with c64 is c64, f64 with c64 is c128)."""
    rng = np.random.default_rng(0)
    z, x = _complex(rng, (3, 5)), rng.standard_normal((3, 5)).astype(np.float32)
    out = rlx.jit(lambda z, x: (z * x + 2j * x, x.astype(np.float64) + z))(z, x)
    np.testing.assert_allclose(out[0], z * x + 2j * x, rtol=1e-6)
    assert out[1].dtype == np.complex128
    python_complex = rlx.jit(lambda z: z * z)(1 + 2j)  # a Python complex is c64, as JAX's
    assert python_complex.dtype == np.complex64 and python_complex == -3 + 4j
    np.testing.assert_allclose(out[1], x.astype(np.float64) + z, rtol=1e-6)


# ---------------------------------------------------------------- gradients


def _loss(z, w, x, nn):
    y = nn.exp(z * w) / (z + 2.0) - nn.log(w) + nn.sqrt(z) * x
    return (nn.complex_norm_sq(y).sum() + (nn.real(y) * x).sum() + nn.imag(nn.conj(y)).mean()
            + abs(y).sum())


class _Torch:
    exp, log, sqrt, real, imag, conj = (torch.exp, torch.log, torch.sqrt, torch.real,
                                        torch.imag, torch.conj)

    @staticmethod
    def complex_norm_sq(y):
        return y.abs() ** 2


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_grad_is_half_of_torch(dtype):
    rng = np.random.default_rng(1)
    real = np.float32 if dtype == "c64" else np.float64
    z, w = _complex(rng, (4, 3), dtype), _complex(rng, (3,), dtype)
    x = rng.standard_normal((4, 3)).astype(real)
    grads = rlx.grad(lambda *a: _loss(*a, rlx.nn), argnums=(0, 1, 2))(z, w, x)
    leaves = [torch.tensor(a, requires_grad=True) for a in (z, w, x)]
    _loss(*leaves, _Torch).backward()
    for got, leaf, factor in zip(grads, leaves, (0.5, 0.5, 1.0), strict=True):
        assert got.dtype == leaf.detach().numpy().dtype
        np.testing.assert_allclose(got, factor * leaf.grad.numpy(), rtol=TOL[dtype] * 10,
                                   atol=TOL[dtype])


def test_grad_and_hessian_vector_product_against_jax():
    """First and second order: rlx's gradient is ``conj(jax.grad) / 2``."""
    def loss(z, nn):
        y = nn.exp(z * 0.3) * z / (z + 3.0)
        return (nn.real(y) ** 2).sum() + (abs(nn.sqrt(y)) ** 2).sum()

    rng = np.random.default_rng(2)
    z, t = _complex(rng, (6,), "c128"), _complex(rng, (6,), "c128")
    grad = rlx.grad(lambda z: loss(z, rlx.nn))
    jax_grad = jax.grad(lambda z: loss(z, jnp))
    with jax.enable_x64(True):
        np.testing.assert_allclose(grad(z), 0.5 * np.conj(jax_grad(z)), rtol=1e-12)
        _, hvp = rlx.jvp(grad, (z,), (t,))
        _, jax_hvp = jax.jvp(jax_grad, (z,), (t,))
        np.testing.assert_allclose(hvp, 0.5 * np.conj(jax_hvp), rtol=1e-11)


def test_check_grads_finite_differences_on_complex_arguments():
    """``--check-grads``' central differences take every real and imaginary direction of
    a complex argument (dL = 2 Re(conj(g) dz))."""
    text = """func.func @loss(%z: tensor<3xcomplex<f32>> {rlx.name = "z", rlx.param},
                          %w: tensor<3xcomplex<f32>> {rlx.name = "w", rlx.param},
                          %x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
      %c = rlx.complex %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xcomplex<f32>>
      %p = rlx.mul %z, %w : (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
      %q = rlx.div %p, %c : (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
      %e = rlx.sqrt %q : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
      %n = rlx.complex_norm_sq %e : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
      %r = rlx.imag %e : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
      %s = rlx.add %n, %r : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %t = rlx.reduce_sum %s {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
      func.return %t : tensor<f32>
    }"""
    report = check_grads(text)
    assert report.ok and [a.checks for a in report.args] == [6, 6, 3]
    assert check_jvp(text).ok


def test_jvp_matches_jax():
    rng = np.random.default_rng(3)
    z, w = _complex(rng, (4, 3)), _complex(rng, (3,))
    x = rng.standard_normal((4, 3)).astype(np.float32)
    tz, tw = _complex(rng, (4, 3)), _complex(rng, (3,))
    tx = rng.standard_normal((4, 3)).astype(np.float32)

    def f(z, w, x, nn, complex_):
        y = nn.exp(z * w) / (z + 2.0) - nn.log(w) + nn.sqrt(z) * x
        return nn.real(y) * x + nn.imag(nn.conj(y)) - abs(y) ** 2 + nn.real(complex_(x, x) * y)

    out, tangent = rlx.jvp(lambda *a: f(*a, rlx.nn, rlx.nn.complex), (z, w, x), (tz, tw, tx))
    j_out, j_tangent = jax.jvp(lambda *a: f(*a, jnp, jax.lax.complex), (z, w, x), (tz, tw, tx))
    np.testing.assert_allclose(out, j_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tangent, j_tangent, rtol=1e-5, atol=1e-5)


def test_vmap_matches_a_loop():
    rng = np.random.default_rng(4)
    zs, w = _complex(rng, (5, 4, 3)), _complex(rng, (3,))
    xs = rng.standard_normal((5, 4, 3)).astype(np.float32)
    batched = rlx.vmap(lambda z, w, x: _model(z, w, x, rlx.nn), in_axes=(0, None, 0))(zs, w, xs)
    one = rlx.jit(lambda z, w, x: _model(z, w, x, rlx.nn))
    np.testing.assert_allclose(batched, np.stack([one(z, w, x) for z, x in zip(zs, xs, strict=True)]),
                               rtol=1e-5, atol=1e-6)


def test_complex_gradient_of_a_real_parameter_through_complex_ops():
    """A real parameter that enters a complex computation gets a real gradient (torch)."""
    rng = np.random.default_rng(5)
    theta, z = rng.standard_normal(4).astype(np.float64), _complex(rng, (4,), "c128")

    def loss(theta, z, nn, complex_):
        rotation = nn.exp(complex_(theta * 0, theta))  # e^{i theta}
        return nn.real(rotation * z).sum() + (abs(rotation * z - 1) ** 2).sum()

    got = rlx.grad(lambda t, z: loss(t, z, rlx.nn, rlx.nn.complex))(theta, z)
    t = torch.tensor(theta, requires_grad=True)
    loss(t, torch.tensor(z), torch, torch.complex).backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("fn,message", [
    (lambda z: rlx.nn.relu(z), "'rlx.relu' op does not support element type c64"),
    (lambda z: rlx.nn.maximum(z, z), "'rlx.max' op does not support element type c64"),
    (lambda z: z ** 2.0, "'rlx.pow' op does not support element type c64"),
    (lambda z: z.astype(np.float32), "cannot cast a complex tensor to f32: take .real"),
    (lambda z: z // z, "// and % are not defined for complex tensors"),
    (lambda z: z < z, "complex numbers are not ordered: predicate 'lt' on c64 (only eq and ne)"),
])
def test_complex_misuse_is_a_clear_error(fn, message):
    with pytest.raises(RlxError, match=re.escape(message)):
        rlx.jit(fn)(np.ones(3, np.complex64))


def test_complex_parts_of_different_precision_are_an_error():
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match="'rlx.complex' op second operand must be f32, got f64"):
        b.complex(b.input("re", (2,), "f32"), b.input("im", (2,), "f64"))


def test_eager_parts_of_a_numpy_array():
    z = np.array([1 + 2j, 3 - 4j], np.complex64)
    np.testing.assert_array_equal(rlx.nn.real(z), z.real)
    np.testing.assert_array_equal(rlx.nn.complex_norm_sq(z), np.float32([5, 25]))


def test_a_complex_module_compiles_to_llvm():
    b = rlx.Builder("f")
    z = b.input("z", (8,), "c64")
    b.ret(b.complex_norm_sq(b.exp(z)))
    assert jit_compile(b.module) is not None


def test_shape_ops_move_complex_elements():
    z = _complex(np.random.default_rng(6), (2, 3, 4))
    cases = {
        "transpose": (lambda z: z.transpose(1, 2, 0) * 1, lambda z: z.transpose(1, 2, 0)),
        "strided_slice": (lambda z: z[:, 1:, ::2], lambda z: z[:, 1:, ::2]),
        "gather": (lambda z: z[np.array([1, 0, 1])], lambda z: z[[1, 0, 1]]),
        "broadcast": (lambda z: rlx.nn.stack([z[0], z[1]]) + z[:1], lambda z: z + z[:1]),
        "equal": (lambda z: (z == z[:, :1], z != 1j), lambda z: (z == z[:, :1], z != 1j)),
    }
    z[0, 0, 1] = 1j
    for name, (fn, expected) in cases.items():
        np.testing.assert_array_equal(rlx.jit(fn)(z), expected(z), err_msg=name)


def test_matmul_values_gradients_and_tangents():
    """``@`` on complex tensors (2-D, a shared rhs, batched, broadcast batch): values vs
    numpy, gradients vs torch (the conjugate transposes of SPEC 5.9), tangents vs JAX."""
    rng = np.random.default_rng(7)
    a, b, c = (_complex(rng, s, "c128") for s in ((3, 4), (4, 5), (2, 3, 4)))
    d = _complex(rng, (1, 4, 5), "c128")
    for fn in (lambda a, b, c, d: a @ b, lambda a, b, c, d: c @ b,
               lambda a, b, c, d: c @ c.mT, lambda a, b, c, d: c @ d):
        np.testing.assert_allclose(rlx.jit(fn)(a, b, c, d), fn(a, b, c, d), rtol=1e-12)

    def loss(a, b, c, nn):
        y = (c @ b) @ nn.conj(b).mT @ a.mT
        return (abs(y) ** 2).sum() + nn.real(a @ b).sum()

    grads = rlx.grad(lambda *x: loss(*x, rlx.nn), argnums=(0, 1, 2))(a, b, c)
    leaves = [torch.tensor(x, requires_grad=True) for x in (a, b, c)]
    loss(*leaves, torch).backward()
    for got, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(got, 0.5 * leaf.grad.numpy(), rtol=1e-11)
    tangents = tuple(_complex(rng, x.shape, "c128") for x in (a, b, c))
    with jax.enable_x64(True):
        _, t = rlx.jvp(lambda *x: loss(*x, rlx.nn), (a, b, c), tangents)
        _, t_jax = jax.jvp(lambda *x: loss(*x, jnp), (a, b, c), tangents)
    np.testing.assert_allclose(t, t_jax, rtol=1e-11)


# ---------------------------------------------------------------- review findings


def _torch_scan_loss(h0, xs):
    h, loss, ys = h0, 0, 0
    for x in xs:
        h = h * x + 0.1
        loss = loss + (h.abs() ** 2).sum()
        ys = ys + h.real.sum()
    return loss + ys


def test_scan_differentiates_complex_carries_xs_and_captures():
    """Complex xs and captured values got zero gradients (silently); a complex carry was
    an error; a complex carry next to real leaves could not be packed."""
    rng = np.random.default_rng(8)
    h0, xs, w = _complex(rng, (2,)), 0.5 * _complex(rng, (3, 2)), np.float32(2)

    def loss(h0, xs, w):
        def step(carry, x):
            h, total = carry
            h = h * x * w / 2 + 0.1
            return (h, total + rlx.nn.complex_norm_sq(h).sum()), rlx.nn.real(h)
        (_, total), ys = rlx.scan(step, (h0, np.float32(0)), xs)
        return total + ys.sum()

    value, grads = rlx.value_and_grad(loss, argnums=(0, 1, 2))(h0, xs, w)
    leaves = [torch.tensor(a, requires_grad=True) for a in (h0, xs, w)]
    expected = _torch_scan_loss(leaves[0], leaves[1] * leaves[2] / 2)
    expected.backward()
    np.testing.assert_allclose(value, expected.item(), rtol=1e-5)
    for got, leaf, factor in zip(grads, leaves, (0.5, 0.5, 1.0), strict=True):
        np.testing.assert_allclose(got, factor * leaf.grad.numpy(), rtol=1e-4, atol=1e-6)
    xs_only = rlx.grad(lambda xs: rlx.scan(lambda r, x: (r + rlx.nn.real(x), None),
                                           np.float32(0), xs)[0])(xs[:, 0])
    np.testing.assert_allclose(xs_only, np.full(3, 0.5))


def test_fori_loop_with_a_complex_state():
    z = np.array([0.3 + 0.2j], np.complex64)
    got = rlx.grad(lambda z: rlx.nn.real(
        rlx.fori_loop(0, 3, lambda i, z: z * z * 0.5 + 0.1j, z)).sum())(z)
    t = torch.tensor(z, requires_grad=True)
    w = t
    for _ in range(3):
        w = w * w * 0.5 + 0.1j
    w.real.sum().backward()
    np.testing.assert_allclose(got, 0.5 * t.grad.numpy(), rtol=1e-5)


def test_complex_constants_written_in_mlir_text():
    text = """func.func @f() -> (tensor<complex<f32>>, tensor<2xcomplex<f64>>) {
      %c = rlx.constant {value = dense<(1.0,2.0)> : tensor<complex<f32>>} : () -> tensor<complex<f32>>
      %d = rlx.constant {value = dense<[(1.0,2.0),(3.0,-4.5)]> : tensor<2xcomplex<f64>>} : () -> tensor<2xcomplex<f64>>
      %e = rlx.mul %d, %d : (tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>>
      func.return %c, %e : tensor<complex<f32>>, tensor<2xcomplex<f64>>
    }"""
    module = rlx.parse(text)
    d = np.array([1 + 2j, 3 - 4.5j])
    for c, e in (jit_compile(module)(), rlx.interpret(module)):
        assert c == 1 + 2j and c.dtype == np.complex64
        np.testing.assert_array_equal(e, d * d)


def test_modulus_sqrt_and_log_near_the_float_limits():
    """``abs`` scales by the larger part (``sqrt(re^2 + im^2)`` overflowed to inf and
    underflowed to 0); ``sqrt`` and ``log`` as numpy on the negative axis, at signed
    zeros and for parts near the float maximum."""
    z = np.array([1e20 + 1e20j, 1e25, 1e-25j, 1e-30, 3 + 4j, 0, np.inf + 1j], np.complex64)
    np.testing.assert_allclose(rlx.jit(lambda z: abs(z))(z), np.abs(z), rtol=1e-6)
    grad = rlx.grad(lambda z: abs(z).sum())(z[:5])
    np.testing.assert_allclose(grad, z[:5] / (2 * np.abs(z[:5])), rtol=1e-6)
    special = np.array([-4, complex(-4, -0.0), -1000 + 3j, 0, complex(0, -0.0), 3e38 + 3e38j,
                        1e-40j, np.inf + 1j, -np.inf + 1j, 2 + 3j, -2 - 3j], np.complex64)
    for fn, ref in ((rlx.nn.sqrt, np.sqrt), (rlx.nn.log, np.log)):
        with np.errstate(all="ignore"):
            got, want = rlx.jit(fn)(special), ref(special)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


def test_concat_promotes_and_bool_cast_and_complex_of_complex():
    z, x = np.complex64([1 + 1j]), np.float32([2])
    joined = rlx.jit(lambda z, x: rlx.nn.concat([z, x, x.astype(np.float64)]))(z, x)
    assert joined.dtype == np.complex128
    np.testing.assert_array_equal(joined, [1 + 1j, 2, 2])
    np.testing.assert_array_equal(rlx.jit(lambda z: z.astype(bool))(np.complex64([0, 1j])),
                                  [False, True])
    with pytest.raises(RlxError, match=re.escape("complex(re, im) takes real parts")):
        rlx.jit(lambda z: rlx.nn.complex(z, z))(z)


def test_modulus_of_subnormals_and_constant_literals():
    """Second review: |z| of a subnormal scaled by a complex division (1/subnormal
    overflowed to NaN); hex parts of complex literals were read as integers; malformed
    literals were a bare AssertionError; the interpreter dropped a -0.0 part."""
    z = np.array([1e-45, 1e-40, 1e-40 + 1e-40j], np.complex64)
    np.testing.assert_allclose(rlx.jit(lambda z: abs(z))(z), np.abs(z), rtol=1e-6)
    np.testing.assert_allclose(rlx.jit(lambda z: abs(z))(np.complex128([5e-324, 1e-310])),
                               [5e-324, 1e-310], rtol=1e-12)

    def constant(literal: str) -> str:
        return ("func.func @f() -> tensor<2xcomplex<f32>> {\n  %c = rlx.constant {value = "
                f"{literal} : tensor<2xcomplex<f32>>}} : () -> tensor<2xcomplex<f32>>\n"
                "  func.return %c : tensor<2xcomplex<f32>>\n}")

    with pytest.raises(RlxError, match="hex floats in complex constants are not supported"):
        rlx.parse(constant("dense<[(0x7F800000, 0x3F800000), (1.0, 2.0)]>"))
    with pytest.raises(RlxError, match="malformed attribute literal"):
        rlx.parse(constant("dense<[[1.0, 2.0], [3.0, 4.0]]>"))
    (value,) = rlx.interpret(rlx.parse(constant("dense<[(3.5, -0.0), (-0.0, 2.0)]>")))
    np.testing.assert_array_equal(np.signbit([value.real, value.imag]),
                                  [[False, True], [True, False]])


def test_cumsum_of_complex_values_gradients_and_tangents():
    rng = np.random.default_rng(9)
    z, w = _complex(rng, (4, 300), "c128"), _complex(rng, (300,), "c128")
    for axis, exclusive in ((0, False), (1, False), (1, True)):
        got = rlx.jit(lambda z: rlx.nn.cumsum(z, axis=axis, exclusive=exclusive))(z)
        expected = np.cumsum(z, axis=axis)
        if exclusive:
            expected = np.concatenate([np.zeros_like(expected[:, :1]), expected[:, :-1]], 1)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    grad = rlx.grad(lambda z: rlx.nn.complex_norm_sq(rlx.nn.cumsum(z * w, axis=1)).sum())(z)
    leaf = torch.tensor(z, requires_grad=True)
    (torch.cumsum(leaf * torch.tensor(w), 1).abs() ** 2).sum().backward()
    np.testing.assert_allclose(grad, 0.5 * leaf.grad.numpy(), rtol=1e-11)
    with jax.enable_x64(True):
        _, tangent = rlx.jvp(lambda z: rlx.nn.cumsum(z * w, axis=1), (z,), (w * z,))
        _, expected = jax.jvp(lambda z: jnp.cumsum(z * w, axis=1), (z,), (w * z,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-11)
