"""rlx.nn.selective_scan (Mamba) and rlx.nn.gated_delta_net (SPEC 2.3.3), both rlx.scan
recurrences: values against numpy loops, gradients against PyTorch autograd of the same
loops, a carried-in state, vmap, and located errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlx_mlir as rlx

B, S, H, N = 2, 6, 3, 4


def _mamba_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, S, H)), np.abs(rng.standard_normal((B, S, H))) * 0.5,
            -np.abs(rng.standard_normal((H, N))), rng.standard_normal((B, S, N)),
            rng.standard_normal((B, S, N)))


def _mamba(x, dt, a, b, c, lib=np):
    state, ys = lib.zeros((x.shape[0], *a.shape), dtype=x.dtype), []
    for t in range(x.shape[1]):
        state = lib.exp(dt[:, t, :, None] * a[None]) * state + \
            (dt[:, t] * x[:, t])[:, :, None] * b[:, t, None, :]
        ys.append((state * c[:, t, None, :]).sum(-1))
    return lib.stack(ys, 1)


def test_selective_scan_values_and_gradients():
    inputs = _mamba_inputs()
    got = rlx.jit(rlx.nn.selective_scan)(*inputs)
    np.testing.assert_allclose(got, _mamba(*inputs), rtol=1e-10)
    cot = np.random.default_rng(1).standard_normal((B, S, H))
    grads = rlx.jit(rlx.grad(lambda *a: (rlx.nn.selective_scan(*a) * cot).sum(),
                             argnums=(0, 1, 2, 3, 4)))(*inputs)
    tensors = [torch.tensor(v, requires_grad=True) for v in inputs]
    (_mamba(*tensors, lib=torch) * torch.tensor(cot)).sum().backward()
    for mine, t in zip(grads, tensors, strict=True):
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-8, atol=1e-10)
    batched = rlx.vmap(rlx.nn.selective_scan, in_axes=(0, 0, None, 0, 0))(
        *[np.stack([v, 2 * v]) if i != 2 else v for i, v in enumerate(inputs)])
    np.testing.assert_allclose(batched[0], got, rtol=1e-10)


def _gdn_inputs(seed=2):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((B, S, H, N)) for _ in range(3))
    return q, k, v, -np.abs(rng.standard_normal((B, S, H))), rng.uniform(0, 1, (B, S, H))


def _gdn(q, k, v, g, beta, state, lib=np):
    outs = []
    for t in range(q.shape[1]):
        state = state * lib.exp(g[:, t])[:, :, None, None]
        error = v[:, t] - lib.einsum("bhij,bhj->bhi", state, k[:, t])
        state = state + lib.einsum("bhi,bhj->bhij", error * beta[:, t, :, None], k[:, t])
        outs.append(lib.einsum("bhij,bhj->bhi", state, q[:, t]) / np.sqrt(N))
    return lib.stack(outs, 1), state


def test_gated_delta_net_values_state_and_gradients():
    inputs = _gdn_inputs()
    start = np.random.default_rng(3).standard_normal((B, H, N, N))
    out = rlx.jit(rlx.nn.gated_delta_net)(*inputs)
    np.testing.assert_allclose(out, _gdn(*inputs, np.zeros((B, H, N, N)))[0], rtol=1e-10)
    out, last = rlx.jit(lambda *a: rlx.nn.gated_delta_net(*a, return_state=True))(*inputs,
                                                                                   start)
    want_out, want_last = _gdn(*inputs, start)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(last, want_last, rtol=1e-10, atol=1e-12)
    grads = rlx.jit(rlx.grad(lambda *a: rlx.nn.gated_delta_net(*a).sum(),
                             argnums=(0, 1, 2, 3, 4)))(*inputs)
    tensors = [torch.tensor(v, requires_grad=True) for v in inputs]
    _gdn(*tensors, torch.zeros((B, H, N, N), dtype=torch.float64), lib=torch)[0].sum().backward()
    for mine, t in zip(grads, tensors, strict=True):
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("call,message", [
    (lambda x: rlx.nn.selective_scan(x, x, x[0], x, x), r"a must have shape \[3, 3\]"),
    (lambda x: rlx.nn.selective_scan(x[0], x, x, x, x), "x must be a float tensor of rank 3"),
    (lambda x: rlx.nn.gated_delta_net(x, x, x, x, x), "q must be a float tensor of rank 4"),
])
def test_errors_are_located(call, message):
    with pytest.raises(rlx.RlxError, match=message) as info:
        rlx.jit(call)(np.ones((B, S, H), np.float32))
    assert "test_recurrences.py" in str(info.value)


def test_one_step_mixed_dtypes_and_numpy_operands():
    """One-step sequences differentiate (a length-1 scan's gradient buffers once shared a
    CSE-merged tensor); mixed float dtypes promote; numpy operands in a trace are
    constants, whichever argument is traced."""
    x, dt, a, b, c = (v[:, :1] if v.ndim == 3 else v for v in _mamba_inputs(4))
    grads = rlx.jit(rlx.grad(lambda x, dt: rlx.nn.selective_scan(x, dt, a, b, c).sum(),
                             argnums=(0, 1)))(x, dt)
    tx, tdt = torch.tensor(x, requires_grad=True), torch.tensor(dt, requires_grad=True)
    _mamba(tx, tdt, *(torch.tensor(v) for v in (a, b, c)), lib=torch).sum().backward()
    np.testing.assert_allclose(grads[0], tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(grads[1], tdt.grad.numpy(), rtol=1e-10)
    y = rlx.jit(rlx.nn.selective_scan)(x.astype(np.float32), dt.astype(np.float32), a, b, c)
    assert y.dtype == np.float64
    ga = rlx.grad(lambda a: rlx.nn.selective_scan(x, dt, a, b, c).sum())(a)
    assert ga.shape == a.shape
    q, k, v, g, beta = (t[:, :1] for t in _gdn_inputs(5))
    dq = rlx.jit(rlx.grad(lambda q, k: rlx.nn.gated_delta_net(q, k, v, g, beta).sum(),
                          argnums=(0, 1)))(q, k)
    tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
    _gdn(tq, tk, *(torch.tensor(t) for t in (v, g, beta)),
         torch.zeros((B, H, N, N), dtype=torch.float64), lib=torch)[0].sum().backward()
    np.testing.assert_allclose(dq[0], tq.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dq[1], tk.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_scan_of_length_one_differentiates():
    x, y = np.ones(1, np.float32), np.full(1, 2.0, np.float32)
    f = lambda x, y: rlx.scan(lambda c, xy: (c, xy[0] * xy[1]), np.float32(0.0),  # noqa: E731
                              (x, y))[1].sum()
    gx, gy = rlx.jit(rlx.grad(f, argnums=(0, 1)))(x, y)
    np.testing.assert_array_equal(gx, [2.0])
    np.testing.assert_array_equal(gy, [1.0])
