"""Interpreter results of the elementwise family against PyTorch and numpy."""

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.dialects.elementwise import ACTIVATIONS


def run_unary(kind, x):
    b = rlx.Builder("f")
    b.ret(getattr(b, kind)(b.input("x", x.shape, "f64" if x.dtype == np.float64 else "f32")))
    return rlx.interpret(b.module, x)[0]


TORCH_UNARY = {
    "relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu,
    "gelu_approx": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "neg": torch.neg, "abs": torch.abs, "sin": torch.sin, "cos": torch.cos,
    "tan": torch.tan, "atan": torch.atan,
}


@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_matches_torch(kind, dtype, rng):
    x = rng.standard_normal((5, 7)).astype(dtype)
    if kind in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    got = run_unary(kind, x)
    assert got.dtype == dtype
    if kind == "round":
        want = np.sign(x) * np.floor(np.abs(x) + 0.5)
    else:
        want = TORCH_UNARY[kind](torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float64 else 2e-6, atol=1e-6)


def test_round_half_away_from_zero():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(run_unary("round", x), [-3, -2, -1, 1, 2, 3])


@pytest.mark.parametrize("op,fn", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
    ("min", np.minimum), ("max", np.maximum), ("pow", np.power),
])
@pytest.mark.parametrize("shapes", [
    ((4, 8), (4, 8)), ((4, 8), (8,)), ((4, 1), (1, 6)), ((2, 3, 1, 5), (2, 3, 4, 5)), ((), (3,)),
])
def test_binary_broadcasting(op, fn, shapes, rng):
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    c = rng.standard_normal(shapes[1]).astype(np.float32)
    if op == "pow":
        a = np.abs(a) + 0.5
    b = rlx.Builder("f")
    b.ret(getattr(b, op)(b.input("a", a.shape), b.input("c", c.shape)))
    got = rlx.interpret(b.module, a, c)[0]
    np.testing.assert_allclose(got, fn(a, c), rtol=1e-6)


def test_integer_semantics():
    a = np.array([7, -7, 5, 3], np.int64)
    c = np.array([2, 2, 0, -1], np.int64)
    b = rlx.Builder("f")
    x, y = b.input("a", (4,), "i64"), b.input("c", (4,), "i64")
    b.ret(b.div(x, y), b.pow(x, y))
    q, p = rlx.interpret(b.module, a, c)
    np.testing.assert_array_equal(q, [3, -3, 0, -3])  # truncation, x/0 = 0
    np.testing.assert_array_equal(p, [49, 49, 1, 1])  # exponent clamped at 0


@pytest.mark.parametrize("pred,fn", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                     ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
def test_compare_where(pred, fn, rng):
    a = rng.integers(0, 3, (4, 5)).astype(np.float32)
    c = rng.integers(0, 3, (5,)).astype(np.float32)
    b = rlx.Builder("f")
    x, y = b.input("a", a.shape), b.input("c", c.shape)
    p = b.compare(x, y, predicate=pred)
    b.ret(p, b.where(p, x, y))
    got_p, got_w = rlx.interpret(b.module, a, c)
    np.testing.assert_array_equal(got_p, fn(a, c))
    np.testing.assert_array_equal(got_w, np.where(fn(a, c), a, c))


def test_cast_conversions():
    x = np.array([-1.5, -0.4, 0.5, 2.6], np.float32)
    b = rlx.Builder("f")
    t = b.input("x", (4,))
    i = b.cast(t, "i64")
    b.ret(i, b.cast(t, "i1"), b.cast(i, "f64"))
    i, p, d = rlx.interpret(b.module, x)
    np.testing.assert_array_equal(i, [-2, 0, 1, 3])
    np.testing.assert_array_equal(p, [True, True, True, True])
    assert d.dtype == np.float64


def test_constant_and_stop_gradient():
    b = rlx.Builder("f")
    x = b.input("x", (3,))
    b.ret(b.stop_gradient(x * np.array([1, 2, 3], np.float32)))
    np.testing.assert_array_equal(rlx.interpret(b.module, np.ones(3, np.float32))[0], [1, 2, 3])
