"""sigmoid and silu keep full relative precision in the negative tail (compiled code and
the interpreter), where ``0.5 * (1 + tanh(x / 2))`` cancels to zero."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx

TAIL = [-80.0, -40.0, -30.0, -20.0, -17.0, -10.0, -1.0, 0.0, 1.0, 10.0, 40.0]


def _reference(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


@pytest.mark.parametrize("dtype,rtol,smallest", [(np.float32, 1e-6, 1e-37),
                                                 (np.float64, 1e-14, 1e-300)])
@pytest.mark.parametrize("how", ["compiled", "interpreted"])
def test_sigmoid_and_silu_tails(dtype, rtol, smallest, how):
    x = np.array(TAIL, dtype)
    want = _reference(x)
    keep = want > smallest  # below f32's normal range the compiled code may flush to 0

    def f(t):
        return rlx.nn.sigmoid(t), rlx.nn.silu(t), rlx.nn.log(rlx.nn.sigmoid(t))

    if how == "compiled":
        sig, silu, log_sig = rlx.jit(f)(x)
    else:
        module = rlx.jit(f).lower(x).module
        sig, silu, log_sig = rlx.interpret(module, x)
    np.testing.assert_allclose(sig[keep], want[keep], rtol=rtol)
    np.testing.assert_allclose(silu[keep], (x * want)[keep], rtol=rtol)
    tail = keep & (x <= 0)  # (log of a value near 1 has no relative precision to keep)
    np.testing.assert_allclose(log_sig[tail], np.log(want[tail]), rtol=rtol)


def test_sigmoid_gradient_in_the_tail():
    x = np.array(TAIL, np.float64)
    s = _reference(x)
    got = rlx.grad(lambda t: rlx.nn.sigmoid(t).sum())(x)
    np.testing.assert_allclose(got, s * (1 - s), rtol=1e-13)
