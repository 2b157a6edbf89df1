"""The tracing front end: jit, grad, value_and_grad, vmap, jvp, pytrees and errors."""

import inspect

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.models import mlp_loss

RNG = np.random.default_rng(0)


def mlp_params(sizes=(6, 8, 3)):
    return {f"w{i}": (0.3 * RNG.standard_normal((a, b))).astype(np.float32)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True))} | {
        f"b{i}": np.zeros(b, np.float32) for i, b in enumerate(sizes[1:])}


def mlp(params, x, labels):
    h = rlx.nn.relu(x @ params["w0"] + params["b0"])
    return rlx.nn.cross_entropy(h @ params["w1"] + params["b1"], labels)


def test_jit_runs_natively_and_caches_per_signature():
    calls = []

    @rlx.jit
    def f(x, w):
        calls.append(1)
        return rlx.nn.relu(x @ w).sum(axis=1)

    x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(f(x, w), [12.0, 12.0])
    f(2 * x, w)
    assert len(calls) == 1          # same signature: traced once
    f(np.ones((5, 3), np.float32), w)
    assert len(calls) == 2          # new shape: traced again


def test_value_and_grad_of_mlp_matches_builder_path_and_torch():
    params = mlp_params()
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    labels = np.array([0, 2, 1, 1, 0], np.int32)
    loss, grads = rlx.value_and_grad(mlp)(params, x, labels)

    module = mlp_loss(batch=5, sizes=(6, 8, 3))
    rlx.grad_with_loss(module, "mlp_loss")
    ref = rlx.interpret(module, entry="mlp_loss_grad", x=x, labels=labels, **params,
                        d_output=np.float32(1))
    np.testing.assert_allclose(loss, ref[0], rtol=1e-5)
    for name, want in zip(["w0", "b0", "w1", "b1"], ref[1:], strict=True):
        np.testing.assert_allclose(grads[name], want, rtol=1e-5, atol=1e-7)

    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    h = torch.relu(torch.tensor(x) @ t["w0"] + t["b0"])
    torch_loss = torch.nn.functional.cross_entropy(h @ t["w1"] + t["b1"],
                                                   torch.tensor(labels).long())
    torch_loss.backward()
    for name in params:
        np.testing.assert_allclose(grads[name], t[name].grad.numpy(), rtol=1e-5, atol=1e-6)


def test_grad_with_argnums_tuple_and_lists():
    def f(ws, x):
        return ((x @ ws[0]) * ws[1]).sum()

    ws = [RNG.standard_normal((3, 2)).astype(np.float32), np.float32(2.0) * np.ones(2, np.float32)]
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    g_ws, g_x = rlx.grad(f, argnums=(0, 1))(ws, x)
    assert isinstance(g_ws, list) and len(g_ws) == 2
    np.testing.assert_allclose(g_ws[0], x.T @ np.tile(ws[1], (4, 1)), rtol=1e-5)
    np.testing.assert_allclose(g_x, np.tile(ws[0] @ ws[1], (4, 1)), rtol=1e-5)


def test_jvp_of_python_function():
    out, tangent = rlx.jvp(lambda x: rlx.nn.tanh(x) * 2.0, (np.zeros(3, np.float32),),
                           (np.ones(3, np.float32),))
    np.testing.assert_allclose(out, 0.0)
    np.testing.assert_allclose(tangent, 2.0)


def test_vmap_of_python_function_matches_a_loop():
    def f(x, w):
        return rlx.nn.sigmoid(x * w + 1.0).max()

    x = RNG.standard_normal((4, 5)).astype(np.float32)
    w = RNG.standard_normal(5).astype(np.float32)
    got = rlx.vmap(f, in_axes=(0, None))(x, w)
    want = [(1 / (1 + np.exp(-(row * w + 1)))).max() for row in x]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_lower_returns_the_rlx_module():
    text = rlx.jit(mlp).lower(mlp_params(), np.ones((2, 6), np.float32),
                              np.zeros(2, np.int32)).as_text()
    assert "rlx.softmax_cross_entropy" in text and "rlx.relu" in text


def test_indexing_and_methods():
    @rlx.jit
    def f(x, idx):
        return x[1:3, ::1].T.reshape(-1), x[idx].mean(axis=0), x[..., 0][None], x.max()

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a, b, c, d = f(x, np.array([0, 3], np.int32))
    np.testing.assert_array_equal(a, x[1:3].T.reshape(-1))
    np.testing.assert_array_equal(b, x[[0, 3]].mean(0))
    np.testing.assert_array_equal(c, x[..., 0][None])
    assert d == 11


def this_line() -> int:
    return inspect.currentframe().f_back.f_lineno


def test_shape_errors_name_the_users_line():
    def bad(x, w):
        return x @ w

    line = inspect.getsourcelines(bad)[1] + 1
    with pytest.raises(rlx.RlxError, match=rf"test_frontend.py:{line}:1: error: .*contraction"):
        rlx.jit(bad)(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_data_dependent_control_flow_is_a_located_error():
    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    line = inspect.getsourcelines(branchy)[1] + 1
    with pytest.raises(rlx.RlxError, match=rf"test_frontend.py:{line}:1: error: data-dependent"):
        rlx.jit(branchy)(np.ones(3, np.float32))


def test_a_traced_flag_in_an_if_suggests_a_static_argument():
    def f(x, training):
        return x * 2 if training else x

    with pytest.raises(rlx.RlxError, match=r"static_argnames=\('training',\)"):
        rlx.jit(f)(np.ones(3, np.float32), True)
    np.testing.assert_array_equal(
        rlx.jit(f, static_argnames=("training",))(np.ones(3, np.float32), True), [2, 2, 2])


def test_unsupported_constructs_are_located_errors():
    def to_float(x):
        return float(x.sum())

    def iterate(x):
        return [v for v in x]

    with pytest.raises(rlx.RlxError, match="cannot convert a traced value to a Python number"):
        rlx.jit(to_float)(np.ones(3, np.float32))
    with pytest.raises(rlx.RlxError, match="cannot iterate over a traced value"):
        rlx.jit(iterate)(np.ones(3, np.float32))
