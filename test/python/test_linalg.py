"""Interpreter results of the linalg family (matmul, reductions, cumsum) against PyTorch."""

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.testing import check_grads

DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: dict(rtol=2e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def run(op, arrays, **attrs):
    """Build ``rlx.<op>`` on inputs shaped like ``arrays`` and interpret it."""
    b = rlx.Builder("f")
    args = [b.input(f"a{i}", a.shape, DTYPES[a.dtype.type]) for i, a in enumerate(arrays)]
    b.ret(getattr(b, op)(*args, **attrs))
    return rlx.interpret(b.module, *arrays)[0]


# ---------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((4, 8), (8, 3)),
    ((2, 5, 8), (8, 3)),  # activations @ weight
    ((8, 3), (2, 3, 5)),  # weight broadcast on the lhs
    ((2, 1, 4, 8), (6, 8, 3)),  # [B, 1, M, K] @ [H, K, N]
    ((3, 1, 4, 2), (1, 5, 2, 7)),  # both sides broadcast
    ((2, 3, 4, 5), (2, 3, 5, 6)),  # full batch on both
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_matches_torch(shapes, dtype, rng):
    a = rng.standard_normal(shapes[0]).astype(dtype)
    c = rng.standard_normal(shapes[1]).astype(dtype)
    got = run("matmul", [a, c])
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(c)).numpy()
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL[dtype])


def test_matmul_integers():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    c = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    b = rlx.Builder("f")
    b.ret(b.input("a", a.shape, "i64") @ b.input("c", c.shape, "i64"))
    got = rlx.interpret(b.module, a, c)[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a @ c)


@pytest.mark.parametrize("shapes,message", [
    (((4, 8), (7, 3)), "contraction dims differ: lhs [4, 8] has K=8, rhs [7, 3] has K=7"),
    (((2, 4, 8), (3, 8, 5)), "batch dims [2] of lhs and [3] of rhs do not broadcast"),
    (((8,), (8, 3)), "lhs must have rank >= 2"),
])
def test_matmul_errors(shapes, message):
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match=message.replace("[", r"\[")):
        b.matmul(b.input("a", shapes[0]), b.input("c", shapes[1]))


# ---------------------------------------------------------------- reductions

TORCH_REDUCE = {
    "sum": lambda t, axes, keep: torch.sum(t, dim=axes, keepdim=keep),
    "mean": lambda t, axes, keep: torch.mean(t, dim=axes, keepdim=keep),
    "max": lambda t, axes, keep: torch.amax(t, dim=axes, keepdim=keep),
    "min": lambda t, axes, keep: torch.amin(t, dim=axes, keepdim=keep),
    "prod": lambda t, axes, keep: _torch_prod(t, axes, keep),
}


def _torch_prod(t, axes, keep):
    """torch.prod takes one dim; apply it per axis, highest first."""
    for axis in sorted((a % t.ndim for a in axes), reverse=True):
        t = torch.prod(t, dim=axis, keepdim=keep)
    return t


AXIS_SETS = [(0,), (-1,), (1, 2), (0, 2), (0, 3), (1, -1), (-4, -2), (3, 0, 1), (0, 1, 2, 3)]


@pytest.mark.parametrize("kind", sorted(TORCH_REDUCE))
@pytest.mark.parametrize("axes", AXIS_SETS, ids=str)
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_matches_torch(kind, axes, keep, dtype, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
    if kind == "prod":
        x = (0.5 + rng.random(x.shape)).astype(dtype)
    got = run(f"reduce_{kind}", [x], axes=list(axes), keep_dims=keep)
    want = TORCH_REDUCE[kind](torch.from_numpy(x), list(axes), keep).numpy()
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL[dtype])


def test_reduce_shapes():
    """keep_dims keeps reduced axes as 1; without it they are removed (to rank 0 if all)."""
    x = np.zeros((2, 3, 4), np.float32)
    assert run("reduce_sum", [x], axes=[0, 2]).shape == (3,)
    assert run("reduce_sum", [x], axes=[0, 2], keep_dims=True).shape == (1, 3, 1)
    assert run("reduce_sum", [x], axes=[2, 1, 0]).shape == ()


def test_reduce_mean_divides_by_reduced_extents():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    got = run("reduce_mean", [x], axes=[0, 2])
    np.testing.assert_allclose(got, x.sum(axis=(0, 2)) / 8)


@pytest.mark.parametrize("kind,fn", [("sum", np.sum), ("max", np.max),
                                     ("min", np.min), ("prod", np.prod)])
@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_reduce_integers(kind, fn, dtype, rng):
    x = rng.integers(-3, 4, (3, 4, 2)).astype(np.int32 if dtype == "i32" else np.int64)
    b = rlx.Builder("f")
    b.ret(getattr(b, f"reduce_{kind}")(b.input("x", x.shape, dtype), axes=[0, -1]))
    got = rlx.interpret(b.module, x)[0]
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, fn(x, axis=(0, 2)))


def test_reduce_empty_axis_initial_values():
    """SPEC 2.1.8 initial values over an extent-0 axis: sum 0, prod 1, max -inf, min +inf."""
    x = np.zeros((3, 0), np.float32)
    want = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
    for kind, value in want.items():
        np.testing.assert_array_equal(run(f"reduce_{kind}", [x], axes=[1]), [value] * 3)


@pytest.mark.parametrize("attrs,message", [
    (dict(axes=[]), "attribute 'axes' must not be empty"),
    (dict(axes=[0, -3]), r"duplicate axis in axes \[0, -3\] for rank 3"),
    (dict(axes=[3]), "axis 3 is out of range for rank 3"),
    (dict(axes=[-4]), "axis -4 is out of range for rank 3"),
    (dict(axes=[0], keep_dims=1), "attribute 'keep_dims' must be a bool"),
    (dict(), "missing required attribute 'axes'"),
])
def test_reduce_errors(attrs, message):
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match=message):
        b.reduce_sum(b.input("x", (2, 3, 4)), **attrs)


# ---------------------------------------------------------------- cumsum


def torch_cumsum(x, axis, exclusive):
    t = torch.from_numpy(x)
    y = torch.cumsum(t, dim=axis)
    return (y - t).numpy() if exclusive else y.numpy()


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum_matches_torch(axis, exclusive, dtype, rng):
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    got = run("cumsum", [x], axis=axis, exclusive=exclusive)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, torch_cumsum(x, axis, exclusive), **TOL[dtype])


def test_cumsum_default_axis_is_last():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run("cumsum", [x]), [[0, 1, 3], [3, 7, 12]])


def test_cumsum_exclusive_starts_at_zero_exactly():
    """Exclusive cumsum shifts the inclusive sum; it never subtracts (inf stays finite before)."""
    x = np.array([[1.0, np.inf, 2.0]], np.float64)
    np.testing.assert_array_equal(run("cumsum", [x], exclusive=True), [[0.0, 1.0, np.inf]])
    np.testing.assert_array_equal(run("cumsum", [x], axis=0, exclusive=True), [[0.0, 0.0, 0.0]])


def test_cumsum_integers():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    b = rlx.Builder("f")
    b.ret(b.cumsum(b.input("x", x.shape, "i32"), axis=0, exclusive=True))
    got = rlx.interpret(b.module, x)[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[0, 0, 0], [1, 2, 3]])


@pytest.mark.parametrize("shape,attrs,message", [
    ((2, 3), dict(axis=2), "axis 2 is out of range for rank 2"),
    ((2, 3), dict(axis=-3), "axis -3 is out of range for rank 2"),
    ((), dict(), "operand must have rank >= 1"),
    ((2, 3), dict(exclusive=1), "attribute 'exclusive' must be a bool"),
])
def test_cumsum_errors(shape, attrs, message):
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match=message):
        b.cumsum(b.input("x", shape), **attrs)


# ---------------------------------------------------------------- gradients (finite differences)

GRAD_CASES = {
    "matmul": ([(4, 3), (3, 5)], {}),
    "matmul_batch_broadcast": ([(2, 1, 4, 3), (6, 3, 5)], {}),
    "matmul_weight_shared": ([(2, 4, 3), (3, 5)], {}),
    "reduce_sum": ([(2, 3, 4)], dict(axes=[0, 2])),
    "reduce_mean": ([(2, 3, 4)], dict(axes=[-1, 0], keep_dims=True)),
    "reduce_max": ([(2, 3, 4)], dict(axes=[1])),
    "reduce_min": ([(2, 3, 4)], dict(axes=[0, 2], keep_dims=True)),
    "reduce_prod": ([(2, 3, 4)], dict(axes=[2, 0])),
    "cumsum": ([(3, 4)], dict(axis=0)),
    "cumsum_exclusive": ([(3, 4)], dict(axis=-1, exclusive=True)),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_vjp_matches_finite_differences(case):
    shapes, attrs = GRAD_CASES[case]
    op = case.removesuffix("_exclusive").removesuffix("_batch_broadcast").removesuffix(
        "_weight_shared")
    b = rlx.Builder("f")
    params = [b.param(f"p{i}", s) for i, s in enumerate(shapes)]
    b.ret(getattr(b, op)(*params, **attrs))
    report = check_grads(b.module)
    assert report.ok, str(report)


def test_reduce_max_ties_split_the_gradient():
    """Tied maxima each receive g / k (JAX's and torch's amax rule; SPEC 9.27 lets us
    change RLX's full g per tie consistently with the JVP)."""
    b = rlx.Builder("f")
    x = b.param("x", (4,), "f64")
    b.ret(b.reduce_max(x, axes=[0]))
    rlx.grad_with_loss(b.module)
    x0 = np.array([1.0, 3.0, 3.0, 2.0])
    _, dx = rlx.interpret(b.module, x0, np.float64(2.0), entry="f_grad")
    np.testing.assert_array_equal(dx, [0.0, 1.0, 1.0, 0.0])
