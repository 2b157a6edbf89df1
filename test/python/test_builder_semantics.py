"""Builder and call semantics a numpy/JAX user relies on: scalar promotion, attribute
names, function names, argument errors, empty tensors, verification order."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError

INTS = np.array([7, -7, 5, 1], np.int32)


@pytest.mark.parametrize("fn,want", [
    (lambda x: x * 0.5, INTS * 0.5),
    (lambda x: 0.5 * x, 0.5 * INTS),
    (lambda x: x / 2, INTS / 2),
    (lambda x: 3 / x, 3 / INTS),
    (lambda x: x + 2.25, INTS + 2.25),
    (lambda x: x - np.float32(0.5), INTS - 0.5),
])
def test_a_float_scalar_promotes_an_integer_tensor_to_f32(fn, want):
    got = rlx.jit(fn)(INTS)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)


def test_an_integer_scalar_keeps_the_integer_dtype():
    got = rlx.jit(lambda x: x * 3 + 1)(INTS)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, INTS * 3 + 1)


def test_comparing_an_integer_tensor_with_a_float_promotes():
    np.testing.assert_array_equal(rlx.jit(lambda x: x < 1.5)(INTS), INTS < 1.5)


def test_an_integer_constant_that_does_not_fit_is_an_error():
    with pytest.raises(RlxError, match=r"the integer 1099511627776 does not fit this "
                                       r"tensor's dtype i32"):
        rlx.jit(lambda x: x + 2**40)(INTS)


def test_a_scalar_argument_that_does_not_fit_is_an_argument_error():
    b = rlx.Builder("f")
    x = b.input("x", (2,), "i32")
    b.ret(x + 1)
    run = rlx.compile(b.module, "f")
    np.testing.assert_array_equal(run([1, 2])[0], [2, 3])
    for bad in ([2**40, 1], [1.5, 2.0]):
        with pytest.raises(rlx.RlxError, match=r"argument 'x' of @f: .* does not fit dtype"):
            run(bad)


@pytest.mark.parametrize("call,match", [
    (lambda run: run(np.ones((5, 3), np.float32)), r"expected shape \(4, 3\), got \(5, 3\)"),
    (lambda run: run(np.ones((4, 3), np.float64)), r"expected dtype float32"),
    (lambda run: run(), r"missing argument\(s\) x"),
    (lambda run: run(np.ones((4, 3), np.float32), 1), r"takes 1 arguments, got 2"),
    (lambda run: run(y=np.ones((4, 3), np.float32)), r"has no argument 'y'"),
])
def test_argument_errors_are_rlx_errors_and_value_errors(call, match):
    b = rlx.Builder("f")
    b.ret(b.relu(b.input("x", (4, 3))))
    run = rlx.compile(b.module, "f")
    with pytest.raises(RlxError, match=match) as info:
        call(run)
    assert isinstance(info.value, ValueError)


def test_a_misspelled_attribute_is_a_located_error():
    b = rlx.Builder("h")
    x = b.input("x", (4, 3))
    with pytest.raises(RlxError, match=r"test_builder_semantics.py:\d+:1: error: 'rlx.softmax'"
                                       r" op unknown attribute 'axs' \(allowed: axis\)"):
        b.softmax(x, axs=0)


def test_a_second_function_of_the_same_name_is_an_error():
    b = rlx.Builder("f")
    b.ret(b.relu(b.input("x", (3,))))
    with pytest.raises(RlxError, match=r"already has a function @f"):
        rlx.Builder("f", module=b.module)
    other = rlx.Builder("g", module=b.module)
    other.ret(other.neg(other.input("y", (3,))))
    assert [f.sym_name.data for f in b.module.ops] == ["f", "g"]


@pytest.mark.parametrize("a_shape,b_shape", [((0, 3), (3, 2)), ((4, 0), (0, 2)),
                                             ((4, 3), (3, 0))])
def test_matmul_with_an_empty_dim_compiles(a_shape, b_shape):
    a, w = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    got = rlx.jit(lambda x, y: x @ y)(a, w)
    assert got.shape == (a @ w).shape
    np.testing.assert_array_equal(got, a @ w)


def test_verify_reports_the_first_error_in_the_file():
    text = """
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = rlx.softmax %x {axis = 5 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
func.func @k(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = rlx.softmax %x {axis = 7 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
"""
    with pytest.raises(RlxError, match=r"m.mlir:3:3: error: .*axis 5 is out of range"):
        rlx.verify(rlx.parse(text, "m.mlir"))


@pytest.mark.parametrize("pipeline", ["fast", "naive"])
def test_upstream_elementwise_ops_on_tensors_compile(pipeline, monkeypatch):
    monkeypatch.setenv("RLX_PIPELINE", pipeline)
    text = """
func.func @f(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = arith.addf %x, %y : tensor<4x3xf32>
  %1 = math.exp %0 : tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}
"""
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    y = np.full((4, 3), 0.25, np.float32)
    got = rlx.compile(rlx.parse(text, "m.mlir"), "f")(x, y)[0]
    np.testing.assert_allclose(got, np.exp(x + y), rtol=1e-6)


def test_a_python_int_argument_that_does_not_fit_int32_is_an_error():
    with pytest.raises(RlxError, match=r"the Python int 1099511627776 does not fit int32"):
        rlx.jit(lambda x, n: x + n)(INTS, 2**40)
    wide = rlx.jit(lambda x, n: x + n)(INTS.astype(np.int64), np.int64(2**40))
    np.testing.assert_array_equal(wide, INTS.astype(np.int64) + 2**40)


@pytest.mark.parametrize("call,match", [
    (lambda: rlx.Builder("f").relu(), r"'rlx.relu' op takes operands \(x\), got 0"),
    (lambda: rlx.Builder("f").input("x", (2,), "u8"), r"argument 'x': unknown dtype 'u8'"),
    (lambda: rlx.jit(lambda z, y: rlx.nn.cross_entropy(z, y, reduction="avg"))(
        np.ones((4, 3), np.float32), np.zeros(4, np.int32)),
     r"cross_entropy: reduction='avg' must be one of none, mean, sum"),
    (lambda: rlx.view(rlx.jit(lambda a: a * 2.0).lower(np.ones(3, np.float32)),
                      "/nonexistent/dir/g.svg"),
     r"cannot draw to '/nonexistent/dir/g.svg': No such file or directory"),
])
def test_api_misuse_is_an_rlx_error(call, match):
    with pytest.raises(RlxError, match=match):
        call()


A = np.array([1.0, 2.0, 3.0], np.float32)
B = np.array([1.0, 0.0, 3.0], np.float32)


def test_eq_and_ne_are_elementwise():
    eq, ne = rlx.jit(lambda x, y: (x == y, x != y))(A, B)
    np.testing.assert_array_equal(eq, A == B)
    np.testing.assert_array_equal(ne, A != B)
    got = rlx.jit(lambda x, y: rlx.nn.where(x == y, x, y * 2.0))(A, B)
    np.testing.assert_array_equal(got, np.where(A == B, A, B * 2))


@pytest.mark.parametrize("fn,want", [
    (lambda i, j, x: i / j, INTS / np.array([2, 4, 3, 1])),
    (lambda i, j, x: x * i, np.float32(0.5) * INTS),
    (lambda i, j, x: i + x, INTS + np.float32(0.5)),
    (lambda i, j, x: i < x, INTS < 0.5),
])
def test_integer_and_float_tensors_promote(fn, want):
    j = np.array([2, 4, 3, 1], np.int32)
    x = np.full(4, 0.5, np.float32)
    got = rlx.jit(fn)(INTS, j, x)
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-6)
    assert got.dtype == (np.bool_ if want.dtype == np.bool_ else np.float32)


def test_reducing_a_0d_tensor_returns_it():
    got = rlx.jit(lambda x: (x.sum().sum(), x.mean().mean(), x.max().max()))(A)
    np.testing.assert_allclose(got, [A.sum(), A.mean(), A.max()], rtol=1e-6)


def test_nn_helpers_take_numbers_and_numpy_on_either_side():
    c = np.array([0.0, 2.5, 1.0], np.float32)
    got = rlx.jit(lambda x: (rlx.nn.maximum(c, x), rlx.nn.minimum(0.0, x),
                             rlx.nn.where(x > 1.5, 1.0, 2.0), rlx.nn.where(x > 1.5, x, 0)))(A)
    np.testing.assert_array_equal(got[0], np.maximum(c, A))
    np.testing.assert_array_equal(got[1], np.minimum(0.0, A))
    np.testing.assert_array_equal(got[2], np.where(A > 1.5, 1.0, 2.0))
    np.testing.assert_array_equal(got[3], np.where(A > 1.5, A, 0))


def test_logical_operators_on_bool_tensors_match_numpy():
    """``& | ^ ~`` on bool tensors (and Python bools, numpy bool arrays), as in JAX."""
    x = np.array([-1.0, 0.5, 2.0, 3.0], np.float32)
    mask = np.array([True, False, True, True])
    got = rlx.jit(lambda x: ((x > 0) & (x < 2.5), (x > 0) | (x < -0.5), (x > 0) ^ (x > 1),
                             ~(x > 0), True & (x > 1), (x > 0) & mask))(x)
    want = ((x > 0) & (x < 2.5), (x > 0) | (x < -0.5), (x > 0) ^ (x > 1), ~(x > 0),
            True & (x > 1), (x > 0) & mask)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fn, message", [
    (lambda x: x & (x > 0), r"'&' takes bool tensors .*got f32"),
    (lambda x: (x > 0) | 1, r"'\|' takes bool tensors or Python bools, got int 1"),
    (lambda x: ~x, r"'~' takes bool tensors .*got f32"),
])
def test_logical_operators_on_non_bools_are_located_errors(fn, message):
    with pytest.raises(rlx.RlxError, match=message):
        rlx.jit(fn)(np.ones(3, np.float32))
