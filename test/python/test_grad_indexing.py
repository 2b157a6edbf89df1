"""The indexing backward ops: interpreters vs torch.autograd (torch.cumsum, index_select,
embedding), the cumsum / gather VJPs through them (check_grads, f64), double backward."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import tensor
from rlx_mlir.ir import to_text
from rlx_mlir.testing import check_grads

DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def run_op(name, operands, result_type, **attrs):
    """Interpret ``rlx.<name>(*operands)`` with a caller-given result type."""
    b = rlx.Builder("f")
    args = [b.input(f"a{i}", x.shape, rlx_dtype(x)) for i, x in enumerate(operands)]
    b.ret(b.emit(name, *args, out=[result_type], **attrs))
    return rlx.interpret(b.module, *operands)[0]


def rlx_dtype(x: np.ndarray) -> str:
    return {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64"}[x.dtype.name]


# ---------------------------------------------------------------- cumsum_backward vs torch


def torch_cumsum_vjp(x, dy, axis, exclusive):
    t = torch.from_numpy(x).requires_grad_()
    y = torch.cumsum(t, dim=axis)
    if exclusive:
        y = y - t  # the exclusive running sum (its gradient is what matters here)
    y.backward(torch.from_numpy(dy))
    return t.grad.numpy()


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum_backward_matches_torch_autograd(axis, exclusive, dtype, rng):
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    dy = rng.standard_normal(x.shape).astype(dtype)
    got = run_op("cumsum_backward", [dy], tensor(x.shape, DTYPES[dtype]), axis=axis,
                 exclusive=exclusive)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, torch_cumsum_vjp(x, dy, axis, exclusive), **TOL[dtype])


def test_cumsum_backward_sums_from_the_end_without_cancellation():
    """Summed from the end, one add per element: exact where ``total - cumsum(g)`` (the
    old composition) cancels catastrophically (its total is 0 here, so dx_0 would be 0)."""
    dy = np.array([3.0, 1e-8, 1e8, -1e8], np.float32)
    inclusive = run_op("cumsum_backward", [dy], tensor((4,)))
    exclusive = run_op("cumsum_backward", [dy], tensor((4,)), exclusive=True)
    np.testing.assert_array_equal(inclusive, np.array([3.0, 1e-8, 0.0, -1e8], np.float32))
    np.testing.assert_array_equal(exclusive, np.array([1e-8, 0.0, -1e8, 0.0], np.float32))


def test_cumsum_backward_integers():
    dy = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    got = run_op("cumsum_backward", [dy], tensor((2, 3), "i32"), axis=0, exclusive=True)
    np.testing.assert_array_equal(got, [[4, 5, 6], [0, 0, 0]])


# ---------------------------------------------------------------- gather_backward vs torch


def torch_gather_vjp(table, ids, dy, axis):
    """torch.index_select's table gradient on the flattened (clamped) index positions."""
    t = torch.from_numpy(table).requires_grad_()
    flat = torch.from_numpy(ids).reshape(-1)
    out = torch.index_select(t, axis, flat)
    out.backward(torch.from_numpy(dy).reshape(out.shape))
    return t.grad.numpy()


def clamp_like_gather(ids, extent):
    if ids.dtype.kind == "f":
        ids = np.nan_to_num(np.trunc(ids), nan=0.0)
    return np.clip(ids, 0, extent - 1).astype(np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_backward_embedding_matches_torch(dtype, rng):
    weight = rng.standard_normal((10, 4)).astype(dtype)
    ids = rng.integers(0, 10, (3, 5))
    ids[0, :3] = 7  # duplicates accumulate
    dy = rng.standard_normal((3, 5, 4)).astype(dtype)
    w = torch.from_numpy(weight).requires_grad_()
    F.embedding(torch.from_numpy(ids), w).backward(torch.from_numpy(dy))
    got = run_op("gather_backward", [dy, ids], tensor((10, 4), DTYPES[dtype]))
    np.testing.assert_allclose(got, w.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("axis,table,index_shape", [
    (1, (3, 6, 2), (4,)), (1, (2, 5, 3), (2, 3)), (-1, (4, 5), (3, 2)), (0, (6,), ()),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_backward_any_axis_matches_index_select(axis, table, index_shape, dtype, rng):
    ax = axis % len(table)
    ids = rng.integers(0, table[ax], index_shape)
    dy = rng.standard_normal(table[:ax] + index_shape + table[ax + 1:]).astype(dtype)
    got = run_op("gather_backward", [dy, ids], tensor(table, DTYPES[dtype]), axis=axis)
    want = torch_gather_vjp(np.zeros(table, dtype), ids, dy, ax)
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.float32])
def test_gather_backward_clamps_exactly_like_gather(index_dtype, rng):
    """Out-of-range (and, for f32, fractional and NaN) indices land where gather read."""
    ids = np.array([[-5, 0, 3], [2, 99, 1]]).astype(index_dtype)
    if index_dtype == np.float32:
        ids = np.array([[-0.7, 0.9, 3.99], [np.nan, 99.5, -1e30]], np.float32)
    dy = rng.standard_normal((2, 2, 3)).astype(np.float64)
    got = run_op("gather_backward", [dy, ids], tensor((2, 4), "f64"), axis=1)
    want = torch_gather_vjp(np.zeros((2, 4)), clamp_like_gather(ids, 4), dy, 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- VJPs via the new ops


def grad_text(module) -> str:
    rlx.grad_with_loss(module)
    return to_text(module)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum_vjp_uses_cumsum_backward_and_checks(axis, exclusive):
    b = rlx.Builder("f")
    b.ret(b.cumsum(b.param("x", (3, 4, 2)), axis=axis, exclusive=exclusive))
    report = check_grads(b.module)
    assert report.ok, str(report)
    text = grad_text(b.module)
    assert f"rlx.cumsum_backward %d_output {{axis = {axis % 3} : i64" in text
    assert text.count("rlx.cumsum ") == 2 and "reduce_sum" not in text  # f and f_grad


GATHER_GRAD_CASES = {
    # name: (table, indices, axis)
    "embedding_2d_ids": ((6, 3), np.array([[0, 5, 2], [2, 2, 4]], np.int64), 0),
    "axis1": ((2, 5, 3), np.array([4, 0, 4, 1], np.int32), 1),
    "axis1_2d_ids": ((2, 5), np.array([[1, 3], [3, 0]], np.int64), 1),
    "f32_encoded_clamped": ((5, 2), np.array([[-2.5, 1.9], [7.0, 4.2]], np.float32), 0),
    "out_of_range_clamped": ((3, 4), np.array([-1, 3, 9, 0], np.int64), 1),
}


@pytest.mark.parametrize("case", sorted(GATHER_GRAD_CASES))
def test_gather_vjp_uses_gather_backward_and_checks(case):
    table, ids, axis = GATHER_GRAD_CASES[case]
    b = rlx.Builder("f")
    w = b.param("w", table)
    b.ret(b.gather(w, b.input("ids", ids.shape, rlx_dtype(ids)), axis=axis) * 1.5)
    report = check_grads(b.module, args={"ids": ids})
    assert report.ok, str(report)
    text = grad_text(b.module)
    assert "rlx.gather_backward" in text and f"-> tensor<{'x'.join(map(str, table))}xf32>" in text
    assert "scatter_add" not in text and "rlx.min" not in text


def test_gather_vjp_equals_clamped_scatter():
    """The emitted gradient itself: rows hit twice accumulate, clamped rows get their dy."""
    b = rlx.Builder("f")
    w = b.param("w", (3, 2), "f64")
    b.ret(b.gather(w, b.input("ids", (4,), "i64")))
    rlx.grad_with_loss(b.module)
    dy = np.arange(8.0).reshape(4, 2)
    _, dw = rlx.interpret(b.module, np.zeros((3, 2)), np.array([1, -4, 1, 8]), dy,
                          entry="f_grad")
    np.testing.assert_array_equal(dw, [[2.0, 3.0], [4.0 + 0.0, 6.0], [6.0, 7.0]])


# ---------------------------------------------------------------- double backward


def test_cumsum_backward_is_differentiable():
    b = rlx.Builder("f")
    dy = b.param("dy", (4, 3))
    b.ret(b.emit("cumsum_backward", dy, axis=0, exclusive=True, out=[dy.type]))
    report = check_grads(b.module)
    assert report.ok, str(report)
    assert "rlx.cumsum %d_output {axis = 0 : i64, exclusive = true}" in grad_text(b.module)


def test_gather_backward_is_differentiable():
    ids = np.array([[2, -1], [2, 9]], np.int64)
    b = rlx.Builder("f")
    dy = b.param("dy", (3, 2, 2))
    b.ret(b.emit("gather_backward", dy, b.input("ids", (2, 2), "i64"), axis=1,
                 out=[tensor((3, 4))]))
    report = check_grads(b.module, args={"ids": ids})
    assert report.ok, str(report)
    assert "rlx.gather %d_output, %ids {axis = 1 : i64}" in grad_text(b.module)


# ---------------------------------------------------------------- verifier


@pytest.mark.parametrize("build,message", [
    (lambda b, x: b.emit("cumsum_backward", x, out=[tensor((2, 3))]),
     "result type tensor<2x3xf32> must equal dy's type tensor<3x2xf32>"),
    (lambda b, x: b.emit("cumsum_backward", x, axis=2, out=[x.type]), "out of range"),
    (lambda b, x: b.emit("cumsum_backward", x), "needs its result type"),
    (lambda b, x: b.emit("gather_backward", x, b.input("i", (3,), "i64"), out=[tensor((5, 3))]),
     "dy must have gather's result shape [3, 3]"),
    (lambda b, x: b.emit("gather_backward", x, b.input("i", (3,), "i1"), out=[tensor((5, 2))]),
     "indices must be i32, i64 or f32-encoded integers"),
    (lambda b, x: b.emit("gather_backward", x, b.input("i", (3,), "i64"),
                         out=[tensor((5, 2), "f64")]), "dy and result"),
])
def test_backward_op_errors(build, message):
    b = rlx.Builder("f")
    x = b.input("x", (3, 2))
    with pytest.raises(RlxError, match=re.escape(message)):
        build(b, x)

