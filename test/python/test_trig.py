"""f32 sin / cos: a vectorized f64 reduction and polynomial (``fastmath.sin_cos_f32``) while
``max |x|`` is within ``SIN_COS_RANGE``, libm beyond; every value within 1 ulp of the
correctly rounded result, for the ops and their first and second derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.lowering.fastmath import SIN_COS_RANGE


def _ulps(got: np.ndarray, want: np.ndarray) -> int:
    a, b = (np.asarray(v, np.float32).view(np.int32).astype(np.int64) for v in (got, want))
    return int(np.abs(a - b).max())


def _reference(fn, x):
    return fn(x.astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("scale", [1.0, 100.0, SIN_COS_RANGE / 4])
def test_within_one_ulp_of_correct_rounding(scale):
    x = (np.random.default_rng(0).standard_normal((64, 512)) * scale).astype(np.float32)
    x[0, :4] = [SIN_COS_RANGE, -SIN_COS_RANGE, np.pi / 2, np.float32(np.pi)]
    assert _ulps(rlx.jit(rlx.nn.sin)(x), _reference(np.sin, x)) <= 1
    assert _ulps(rlx.jit(rlx.nn.cos)(x), _reference(np.cos, x)) <= 1


def test_huge_arguments_take_the_exact_path():
    x = np.linspace(-10, 10, 4096, dtype=np.float32)
    x[7], x[99] = 1e30, -3.0e9  # beyond the fast range: libm for the whole tensor
    assert _ulps(rlx.jit(rlx.nn.sin)(x), _reference(np.sin, x)) <= 1
    assert _ulps(rlx.jit(rlx.nn.cos)(x), _reference(np.cos, x)) <= 1
    from rlx_mlir.lowering.to_linalg import lower_module

    module = rlx.jit(rlx.nn.sin).lower(x).module
    lower_module(module)
    text = str(module)  # the range check chooses between the two loops
    assert "scf.if" in text and "math.fma" in text and "math.sin" in text


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-45], np.float32)
    with np.errstate(invalid="ignore"):
        for ours, theirs in ((rlx.nn.sin, np.sin), (rlx.nn.cos, np.cos)):
            got, want = rlx.jit(ours)(x), theirs(x)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
            assert np.signbit(got[1]) == np.signbit(want[1])


def test_a_nan_does_not_hide_a_huge_argument():
    """NaNs are skipped by the range check, so a huge argument next to one still takes the
    exact path."""
    x = np.array([np.nan, 1e30, 0.5], np.float32)
    got = rlx.jit(rlx.nn.sin)(x)
    with np.errstate(invalid="ignore"):
        assert _ulps(got[1:], _reference(np.sin, x[1:])) <= 1


@pytest.mark.parametrize("fn,first,second", [
    (rlx.nn.sin, np.cos, lambda x: -np.sin(x)),
    (rlx.nn.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)),
])
def test_derivatives(fn, first, second):
    x = (np.random.default_rng(1).standard_normal((32, 64)) * 10).astype(np.float32)
    d1 = rlx.jit(rlx.grad(lambda x: fn(x).sum()))(x)
    d2 = rlx.jit(rlx.grad(lambda x: rlx.grad(lambda y: fn(y).sum())(x).sum()))(x)
    assert _ulps(d1, _reference(first, x)) <= 1
    assert _ulps(d2, _reference(second, x)) <= 1


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5, 7)])
def test_every_rank(shape):
    x = (np.random.default_rng(2).standard_normal(shape) * 30).astype(np.float32)
    assert _ulps(rlx.jit(rlx.nn.sin)(x), _reference(np.sin, x)) <= 1
    assert _ulps(rlx.jit(rlx.nn.cos)(x), _reference(np.cos, x)) <= 1


def test_rank0_huge_negative_arguments():
    """A rank-0 argument is checked by its magnitude too (-1e30 once skipped the exact
    path and gave -inf)."""
    for value in (-1e30, -1e20, 1e30):
        x = np.float32(value)
        assert _ulps(rlx.jit(rlx.nn.sin)(x), _reference(np.sin, np.asarray(x))) <= 1
        assert _ulps(rlx.jit(rlx.grad(rlx.nn.sin))(x), _reference(np.cos, np.asarray(x))) <= 1


def test_sin_keeps_the_sign_of_zero_in_range():
    got = rlx.jit(rlx.nn.sin)(np.array([-0.0, 0.0, 1.0], np.float32))
    assert np.signbit(got[0]) and not np.signbit(got[1])
