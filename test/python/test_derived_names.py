"""Argument names of derived functions stay unique, so binding by name is never ambiguous
(the gradient of a gradient, a jvp of a jvp); a duplicated name is rejected, not guessed."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.ir import find_func
from rlx_mlir.runtime.signature import Arg, Signature


def cubic_module():
    b = rlx.Builder("f")
    x = b.param("x", (3,), "f64")
    b.ret(b.reduce_sum(x * x * x, axes=[0]))
    return b.module


def names(m, entry):
    return [a.name for a in Signature.of(find_func(m, entry)).args]


def test_grad_of_grad_seed_is_renamed():
    m = cubic_module()
    rlx.grad_with_loss(m, "f", with_loss=False)
    rlx.grad_with_loss(m, "f_grad", with_loss=False)
    assert names(m, "f_grad_grad") == ["x", "d_output", "d_output_1"]
    x, v = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.0, 2.0])
    (hv,) = rlx.interpret(m, x=x, d_output=np.float64(1.0), d_output_1=v, entry="f_grad_grad")
    np.testing.assert_allclose(hv, 6 * x * v)  # Hessian of sum(x^3) is diag(6x)


def test_jvp_of_jvp_tangents_are_renamed():
    m = cubic_module()
    rlx.jvp(m, "f", wrt=["x"])
    rlx.jvp(m, "f_jvp", wrt=["x", "tangent_x"])
    assert names(m, "f_jvp_jvp") == ["x", "tangent_x", "tangent_x_1", "tangent_tangent_x"]


def test_duplicate_argument_names_cannot_bind_by_name():
    arg = Arg("a", (), np.dtype(np.float64), "f64", False)
    sig = Signature("g", (arg, arg), ())
    with pytest.raises(ValueError, match="2 arguments named 'a': pass them by position"):
        sig.bind([], {"a": 1.0})
    assert [float(v) for v in sig.bind([1.0, 2.0], {})] == [1.0, 2.0]
