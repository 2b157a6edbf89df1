"""Interpreter results of the shape family against PyTorch and numpy."""

import re

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError

DTYPES = {np.float32: "f32", np.float64: "f64", np.int64: "i64", np.int32: "i32",
          np.bool_: "i1"}
FLOATS = [np.float32, np.float64]


def sample(rng, shape, dtype):
    """Random values of ``dtype`` (integers in [-50, 50), booleans fair)."""
    if dtype == np.bool_:
        return np.asarray(rng.integers(0, 2, shape), bool)
    if np.dtype(dtype).kind == "i":
        return np.asarray(rng.integers(-50, 50, shape), dtype)
    return np.asarray(rng.standard_normal(shape), dtype)


def run(build, *arrays):
    """Build ``f(*arrays)`` with ``build(b, *inputs)`` and interpret it.

    Rank-0 arrays become constants (the argument binder currently turns a rank-0
    argument into shape (1,): np.ascontiguousarray in runtime/signature.py).
    """
    b = rlx.Builder("f")
    inputs = [b.input(f"a{i}", a.shape, DTYPES[a.dtype.type]) if a.ndim
              else b.constant(a, DTYPES[a.dtype.type]) for i, a in enumerate(arrays)]
    out = build(b, *inputs)
    b.ret(*(out if isinstance(out, tuple) else (out,)))
    return rlx.interpret(b.module, *[a for a in arrays if a.ndim])


def run1(build, *arrays):
    return run(build, *arrays)[0]


# ---------------------------------------------------------------- reshape / transpose / expand


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("src,dst", [((2, 6), (3, 4)), ((2, 3, 4), (4, -1)), ((6,), (1, 6, 1)),
                                     ((), (1, 1))])
def test_reshape(src, dst, dtype, rng):
    x = sample(rng, src, dtype)
    got = run1(lambda b, t: b.reshape(t, dst), x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, x.reshape(dst))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape,perm", [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)),
                                        ((2, 3, 4), (0, -1, -2)), ((2, 3, 4, 5), (-1, 1, 0, 2)),
                                        ((5,), (0,)), ((), ())])
def test_transpose_matches_torch(shape, perm, dtype, rng):
    x = sample(rng, shape, dtype)
    got = run1(lambda b, t: b.transpose(t, perm=perm), x)
    want = torch.from_numpy(x).permute(*perm).numpy() if shape else x
    assert got.shape == want.shape and got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 4), (5,), ()])
def test_tensor_T_reverses_axes_like_numpy(shape, rng):
    x = sample(rng, shape, np.float64)
    np.testing.assert_array_equal(run1(lambda b, t: t.T, x), np.asarray(x).T)


def test_tensor_mT_swaps_last_two_axes(rng):
    x = sample(rng, (2, 3, 4), np.float64)
    np.testing.assert_array_equal(run1(lambda b, t: t.mT, x), np.swapaxes(x, -1, -2))


def test_tensor_mT_of_a_vector_is_an_error():
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match=r"\.mT needs at least 2 dims, got shape \(5,\)"):
        _ = b.input("x", (5,)).mT


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("src,dst", [((3, 1), (2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)),
                                     ((1, 1), (1, 1)), ((2, 1, 3), (5, 2, 4, 3))])
def test_expand_matches_torch(src, dst, dtype, rng):
    x = sample(rng, src, dtype)
    got = run1(lambda b, t: b.expand(t, dst), x)
    np.testing.assert_array_equal(got, torch.from_numpy(np.array(x)).expand(*dst).numpy())


# ---------------------------------------------------------------- concat / narrow


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shapes,axis", [
    (((2, 3), (2, 5)), 1), (((2, 3), (4, 3), (1, 3)), 0), (((2, 3, 4), (2, 1, 4)), -2),
    (((3, 2),), -1), (((2, 2), (2, 3)), -1),
])
def test_concat_matches_torch(shapes, axis, dtype, rng):
    xs = [sample(rng, s, dtype) for s in shapes]
    got = run1(lambda b, *ts: b.concat(*ts, axis=axis), *xs)
    want = torch.cat([torch.from_numpy(x) for x in xs], dim=axis).numpy()
    assert got.dtype == xs[0].dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape,axis,start,length", [
    ((4, 8), 1, 2, 3), ((4, 8), 0, 0, 4), ((4, 8), -1, 7, 1), ((2, 5, 3), -2, 1, 4),
    ((6,), 0, 5, 1),
])
def test_narrow_matches_torch(shape, axis, start, length, dtype, rng):
    x = sample(rng, shape, dtype)
    got = run1(lambda b, t: b.narrow(t, axis=axis, start=start, length=length), x)
    np.testing.assert_array_equal(got, torch.from_numpy(x).narrow(axis, start, length).numpy())


# ---------------------------------------------------------------- gather

INDEX_DTYPES = [np.int64, np.int32, np.float32]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", FLOATS + [np.int64])
def test_gather_embedding_2d_indices(dtype, index_dtype, rng):
    table = sample(rng, (10, 4), dtype)
    ids = rng.integers(0, 10, (2, 3)).astype(index_dtype)
    got = run1(lambda b, t, i: b.gather(t, i), table, ids)
    want = torch.nn.functional.embedding(torch.from_numpy(ids.astype(np.int64)),
                                         torch.from_numpy(table)).numpy()
    assert got.shape == (2, 3, 4) and got.dtype == table.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("axis", [1, -2])
def test_gather_axis_1_matches_index_select(axis, index_dtype, rng):
    table = sample(rng, (3, 6, 2), np.float64)
    ids = rng.integers(0, 6, (5,)).astype(index_dtype)
    got = run1(lambda b, t, i: b.gather(t, i, axis=axis), table, ids)
    want = torch.index_select(torch.from_numpy(table), 1, torch.from_numpy(ids.astype(np.int64)))
    assert got.shape == (3, 5, 2)
    np.testing.assert_array_equal(got, want.numpy())


def test_gather_last_axis_multidim_indices_is_np_take(rng):
    table = sample(rng, (3, 4, 5), np.float32)
    ids = rng.integers(0, 5, (2, 2)).astype(np.int64)
    got = run1(lambda b, t, i: b.gather(t, i, axis=-1), table, ids)
    assert got.shape == (3, 4, 2, 2)
    np.testing.assert_array_equal(got, np.take(table, ids, axis=2))


def test_gather_clamps_out_of_range():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([-5, -1, 0, 3, 4, 100], np.int64)
    got = run1(lambda b, t, i: b.gather(t, i), table, ids)
    np.testing.assert_array_equal(got, table[[0, 0, 0, 3, 3, 3]])


def test_gather_f32_indices_truncate_then_clamp():
    table = np.arange(5, dtype=np.float64) * 10
    ids = np.array([0.0, 1.9, 2.5, -0.7, -3.0, 4.99, 7.0, np.nan, 1e30], np.float32)
    got = run1(lambda b, t, i: b.gather(t, i), table, ids)
    np.testing.assert_array_equal(got, [0, 10, 20, 0, 0, 40, 40, 0, 40])


def test_gather_i1_table_and_scalar_index():
    table = np.array([True, False, True])
    got = run1(lambda b, t, i: b.gather(t, i), table, np.array(1, np.int32))
    assert got.shape == () and got.dtype == np.bool_ and not got


# ---------------------------------------------------------------- scatter_add


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32])
def test_scatter_add_matches_torch_index_add(dtype, index_dtype, rng):
    updates = sample(rng, (6, 3), dtype)
    ids = np.array([1, 4, 1, 0, 4, 1], index_dtype)  # duplicates accumulate
    got = run1(lambda b, u, i: b.scatter_add(u, i, 5), updates, ids)
    want = torch.zeros(5, 3, dtype=torch.from_numpy(updates).dtype).index_add_(
        0, torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(updates))
    assert got.dtype == updates.dtype
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("axis", [1, -1])
def test_scatter_add_inner_axis(axis, rng):
    updates = sample(rng, (2, 4, 3), np.float64)
    ids = np.array([2, 0, 2, 2], np.int64)
    got = run1(lambda b, u, i: b.scatter_add(u, i, 3, axis=1 if axis == 1 else -2), updates, ids)
    want = np.zeros((2, 3, 3))
    np.add.at(want, (slice(None), ids), updates)
    assert got.shape == (2, 3, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_scatter_add_last_axis(rng):
    updates = sample(rng, (3, 4), np.float32)
    ids = np.array([0, 1, 0, 1], np.int32)
    got = run1(lambda b, u, i: b.scatter_add(u, i, 2, axis=-1), updates, ids)
    want = np.stack([updates[:, 0] + updates[:, 2], updates[:, 1] + updates[:, 3]], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_add_drops_out_of_range():
    updates = np.array([[1.0], [2.0], [4.0], [8.0], [16.0], [32.0], [64.0]], np.float32)
    ids = np.array([0, -1, 3, 2, 3, 100, 2.7], np.float32)
    got = run1(lambda b, u, i: b.scatter_add(u, i, 3), updates, ids)
    # -1, 3 and 100 are dropped; 2.7 truncates to 2.
    np.testing.assert_array_equal(got, [[1.0], [0.0], [8.0 + 64.0]])


def test_scatter_add_drops_nan_and_negative_i64():
    updates = np.array([1.0, 2.0, 4.0], np.float64)
    got = run1(lambda b, u, i: b.scatter_add(u, i, 2), updates,
               np.array([np.nan, 1.0, -0.5], np.float32))
    np.testing.assert_array_equal(got, [4.0, 2.0])  # NaN dropped, -0.5 truncates to 0
    got = run1(lambda b, u, i: b.scatter_add(u, i, 2), updates, np.array([-2, 1, 1], np.int64))
    np.testing.assert_array_equal(got, [0.0, 6.0])


def test_scatter_add_is_the_transpose_of_gather(rng):
    """<gather(t, i), g> == <t, scatter_add(g, i)>: the two ops are adjoint."""
    table = sample(rng, (7, 3), np.float64)
    ids = rng.integers(0, 7, (9,)).astype(np.int64)
    g = sample(rng, (9, 3), np.float64)
    gathered, scattered = run(
        lambda b, t, i, c: (b.gather(t, i), b.scatter_add(c, i, 7)), table, ids, g)
    np.testing.assert_allclose(np.sum(gathered * g), np.sum(table * scattered), rtol=1e-12)


# ---------------------------------------------------------------- builder errors


@pytest.mark.parametrize("build,message", [
    (lambda b, x: b.reshape(x, (5, 5)), "cannot reshape [2, 6] (12 elements) to (5, 5)"),
    (lambda b, x: b.reshape(x, (5, -1)), "cannot reshape [2, 6] (12 elements) to (5, -1)"),
    (lambda b, x: b.reshape(x, (-1, -1)), "to (-1, -1): only one dim may be -1"),
    (lambda b, x: b.transpose(x, perm=(0, 0)), "is not a permutation"),
    (lambda b, x: b.expand(x, (4, 6)), "cannot expand [2, 6] to [4, 6]: dim 0 is 2"),
    (lambda b, x: b.narrow(x, axis=1, start=4, length=3), "out of range for dim 1 of size 6"),
    (lambda b, x: b.concat(x, b.reshape(x, (6, 2)), axis=0), "incompatible with [2, 6]"),
    (lambda b, x: b.gather(x, b.cast(x, "i1")), "indices must be i32, i64 or f32-encoded integers"),
    (lambda b, x: b.scatter_add(x, b.constant(np.zeros(3, np.int64)), 4),
     "indices must have shape [2]"),
])
def test_builder_reports_shape_errors(build, message):
    b = rlx.Builder("f")
    x = b.input("x", (2, 6), "f64")
    with pytest.raises(RlxError, match=re.escape(message)):
        build(b, x)
