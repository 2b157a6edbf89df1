"""numpy's array helpers in rlx.nn (broadcast_to, expand_dims, split, repeat, tile, tril,
triu, take_along_axis, outer, square, *_like) and rlx.linalg.norm: values against numpy,
traced and eager, gradients, vmap, and located errors."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError

X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
IDX = np.array([[0], [3], [-1]], np.int32)
IDX0 = np.array([[2, 0, 1, 1], [0, 0, 2, 1]], np.int64)

CASES = {
    "broadcast_to row": (lambda x: rlx.nn.broadcast_to(x[0], (2, 4)),
                         lambda x: np.broadcast_to(x[0], (2, 4))),
    "broadcast_to rank": (lambda x: rlx.nn.broadcast_to(x, (2, 3, 4)),
                          lambda x: np.broadcast_to(x, (2, 3, 4))),
    "expand_dims": (lambda x: rlx.nn.expand_dims(x, (0, -1)), lambda x: np.expand_dims(x, (0, -1))),
    "repeat axis": (lambda x: rlx.nn.repeat(x, 3, axis=1), lambda x: np.repeat(x, 3, axis=1)),
    "repeat flat": (lambda x: rlx.nn.repeat(x, 2), lambda x: np.repeat(x, 2)),
    "tile": (lambda x: rlx.nn.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3))),
    "tile int": (lambda x: rlx.nn.tile(x, 2), lambda x: np.tile(x, 2)),
    "tril": (lambda x: rlx.nn.tril(x, -1), lambda x: np.tril(x, -1)),
    "triu": (lambda x: rlx.nn.triu(x, 1), lambda x: np.triu(x, 1)),
    "take_along_axis 1": (lambda x: rlx.nn.take_along_axis(x, IDX, 1),
                          lambda x: np.take_along_axis(x, IDX, 1)),
    "take_along_axis 0": (lambda x: rlx.nn.take_along_axis(x, IDX0, 0),
                          lambda x: np.take_along_axis(x, IDX0, 0)),
    "outer": (lambda x: rlx.nn.outer(x[0], x[1]), lambda x: np.outer(x[0], x[1])),
    "square": (lambda x: rlx.nn.square(x), lambda x: x * x),
    "ones_like": (lambda x: rlx.nn.ones_like(x) * 2 + x, lambda x: 2 + x),
    "full_like": (lambda x: rlx.nn.full_like(x, 7, dtype="i32"), lambda x: np.full(x.shape, 7)),
    "norm": (lambda x: rlx.linalg.norm(x), lambda x: np.linalg.norm(x)),
    "norm rows": (lambda x: rlx.linalg.norm(x, axis=1, keepdims=True),
                  lambda x: np.linalg.norm(x, axis=1, keepdims=True)),
}


@pytest.mark.parametrize("name", CASES)
def test_values_match_numpy_traced_and_eager(name):
    mine, numpy_fn = CASES[name]
    want = numpy_fn(X)
    for got in (rlx.jit(mine)(X), mine(X)):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_split_by_sections_and_indices():
    for spec in (2, [1, 3], [2]):
        parts = rlx.jit(lambda x, spec=spec: rlx.nn.split(x, spec, axis=1))(X)
        for got, want in zip(parts, np.split(X, spec, axis=1), strict=True):
            np.testing.assert_array_equal(got, want)


def test_gradients():
    g = rlx.grad(lambda x: (rlx.nn.take_along_axis(x, IDX, 1) ** 2).sum())(X)
    want = np.zeros_like(X)
    np.put_along_axis(want, IDX % 4, 2 * np.take_along_axis(X, IDX, 1), 1)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    g = rlx.grad(lambda x: (rlx.nn.tile(x, (2, 1))[3:] * rlx.nn.repeat(x, 2, axis=0)[::2]).sum())(X)
    np.testing.assert_allclose(g, 2 * X, rtol=1e-6)  # both factors are x
    np.testing.assert_array_equal(rlx.grad(lambda x: rlx.linalg.norm(x))(np.zeros(3, np.float32)),
                                  np.zeros(3))  # guarded at zero
    np.testing.assert_allclose(rlx.grad(lambda x: rlx.linalg.norm(x))(X), X / np.linalg.norm(X),
                               rtol=1e-5)


def test_vmap_and_integer_and_bool_masks():
    batched = rlx.vmap(lambda x: rlx.nn.tril(rlx.nn.outer(x, x)))(X)
    np.testing.assert_allclose(batched, np.stack([np.tril(np.outer(r, r)) for r in X]), rtol=1e-6)
    ints = np.arange(9, dtype=np.int32).reshape(3, 3)
    np.testing.assert_array_equal(rlx.nn.triu(ints), np.triu(ints))
    np.testing.assert_array_equal(rlx.jit(lambda x: rlx.nn.tril(x > 0))(X), np.tril(X > 0))


@pytest.mark.parametrize("call,message", [
    (lambda x: rlx.nn.broadcast_to(x, (4, 3)), r"cannot broadcast \[3, 4\] to \[4, 3\]"),
    (lambda x: rlx.nn.split(x, 3, axis=1), "do not split into 3 equal sections"),
    (lambda x: rlx.nn.split(x, [3, 1], axis=1), r"part 1 \(\[3:1\] of axis 1\) is empty"),
    (lambda x: rlx.nn.expand_dims(x, 5), "axis 5 is out of range for rank 3"),
    (lambda x: rlx.nn.repeat(x, 1.5), "repeat: repeats must be an int"),
    (lambda x: rlx.nn.tril(x[0]), "expected a tensor of rank >= 2"),
    (lambda x: rlx.nn.take_along_axis(x, IDX.astype(np.float32), 1),
     "take_along_axis: indices must be integer indices"),
    (lambda x: rlx.nn.take_along_axis(x, IDX[:, 0], 1), "indices must have x's rank 2"),
    (lambda x: rlx.linalg.norm(x, ord=1), "ord=1 is not supported"),
])
def test_errors_are_located(call, message):
    with pytest.raises(RlxError, match=message) as info:
        rlx.jit(call)(X)
    assert "test_array_ops.py" in str(info.value)


def test_review_fixes():
    """norm keeps NaN; split counts negative cuts from the end; full_like takes numpy dtype
    names and rejects values that do not fit; outer takes lists."""
    np.testing.assert_array_equal(rlx.linalg.norm(np.array([np.nan, 1.0], np.float32)), np.nan)
    parts = rlx.nn.split(np.arange(6, dtype=np.float32), [-2])
    assert [p.shape for p in parts] == [(4,), (2,)]
    assert rlx.jit(lambda x: rlx.nn.full_like(x, 1, dtype=np.float64))(X).dtype == np.float64
    with pytest.raises(RlxError, match="does not fit i32"):
        rlx.jit(lambda x: rlx.nn.full_like(x, 2**40))(X.astype(np.int32))
    with pytest.raises(RlxError, match="fill_value must be a number"):
        rlx.jit(lambda x: rlx.nn.full_like(x, "a"))(X)
    np.testing.assert_allclose(rlx.jit(lambda x: rlx.nn.outer(x[0], [1.0, 2.0]))(X),
                               np.outer(X[0], [1.0, 2.0]))


def test_like_constructors_keep_the_asked_dtype_and_norm_checks_its_arguments():
    x = np.ones(3, np.float32)
    out = rlx.jit(lambda x: rlx.nn.full_like(x.astype("bf16"), 1.0009765625, dtype="f32"))(x)
    assert out.dtype == np.float32 and out[0] == np.float32(1.0009765625)
    assert len(rlx.nn.split(x, np.array(3))) == 3
    with pytest.raises(RlxError, match="linalg.norm: axis must be an int"):
        rlx.jit(lambda x: rlx.linalg.norm(x, axis="a"))(x)
