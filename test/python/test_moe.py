"""rlx.nn.grouped_matmul (SPEC 2.3.2 GroupedMatMul, 5.14): native code against numpy and
the interpreter, gradients against PyTorch and finite differences (first and second
order), jvp, vmap over every operand, and clean errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.testing import check_grads, check_jvp


def _problem(m=37, k=24, n=40, e=5, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((e, k, n)).astype(dtype)
    ids = rng.integers(0, e, m).astype(np.int32)
    return x, w, ids


def _reference(x, w, ids, wrap=False):
    """numpy's result; ``wrap``: negative ids count from the end first (the frontend's
    rule, as embedding's; the op itself clamps)."""
    rows = np.trunc(ids).astype(np.int64)
    rows = np.where(rows < 0, rows + w.shape[0], rows) if wrap else rows
    rows = np.clip(rows, 0, w.shape[0] - 1)
    return np.einsum("mk,mkn->mn", x.astype(np.float64), w[rows].astype(np.float64))


def _native_and_interpreted(fn, *args, first=True):
    traced = rlx.jit(fn).lower(*args)
    outs = rlx.interpret(traced.module, *args, entry=traced.name)
    return rlx.jit(fn)(*args), outs[0] if first else outs


@pytest.mark.parametrize("m,k,n,e", [
    (37, 24, 40, 5),     # ragged sizes, a partial block per expert
    (3, 8, 16, 8),       # fewer tokens than experts and than a block's rows
    (64, 32, 512, 4),    # column tiles split over the threads
    (300, 256, 64, 2),   # several blocks per expert
    (20, 32, 512, 8),    # fewer tokens than a block per expert: weights read in place
    (1, 1, 1, 1),
])
def test_forward_matches_numpy(m, k, n, e):
    x, w, ids = _problem(m, k, n, e)
    native, interpreted = _native_and_interpreted(rlx.nn.grouped_matmul, x, w, ids)
    np.testing.assert_allclose(native, _reference(x, w, ids), rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(interpreted, _reference(x, w, ids), rtol=2e-4, atol=2e-4)


def test_unused_experts_skewed_routing_and_clamped_ids():
    """All tokens on one expert, some experts never chosen; negative ids count from the end
    (as rlx.nn.embedding's) and ids outside [0, E) are clamped, as rlx.gather clamps them;
    the op itself clamps and truncates f32-encoded ids."""
    x, w, _ = _problem(50, 16, 24, 6)
    for ids in (np.full(50, 4, np.int32), np.arange(50, dtype=np.int32) % 2,
                np.array([-3, 9, 5, 0] * 12 + [7, -1], np.int32)):
        np.testing.assert_allclose(rlx.jit(rlx.nn.grouped_matmul)(x, w, ids),
                                   _reference(x, w, ids, wrap=True), rtol=2e-4, atol=2e-4)
    huge = np.array([3_000_000_000] * 50, np.uint32)  # a constant id past int32: clamped
    np.testing.assert_allclose(rlx.jit(lambda x, w: rlx.nn.grouped_matmul(x, w, huge))(x, w),
                               _reference(x, w, np.full(50, 5)), rtol=2e-4, atol=2e-4)
    b = rlx.Builder("f")
    b.ret(b.grouped_matmul(b.input("x", (50, 16)), b.input("w", (6, 16, 24)),
                           b.input("ids", (50,), "f32")))
    ids = np.linspace(-2, 8.9, 50).astype(np.float32)
    (native,) = rlx.compile(b.module)(x, w, ids)
    np.testing.assert_allclose(native, _reference(x, w, ids), rtol=2e-4, atol=2e-4)


def test_transposed_weights_and_f64():
    x, w, ids = _problem(40, 24, 32, 3, dtype=np.float64)
    w_t = np.ascontiguousarray(w.transpose(0, 2, 1))
    y = rlx.jit(lambda x, w, ids: rlx.nn.grouped_matmul(x, w, ids, transpose_w=True))(x, w_t, ids)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, _reference(x, w, ids), rtol=1e-12)


def _torch_grads(x, w, ids, cot):
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    y = torch.einsum("mk,mkn->mn", xt, wt[torch.tensor(ids).long().clamp(0, w.shape[0] - 1)])
    (y * torch.tensor(cot, dtype=torch.float64)).sum().backward()
    return xt.grad.numpy(), wt.grad.numpy()


@pytest.mark.parametrize("transpose_w", [False, True])
def test_gradients_match_torch(transpose_w):
    x, w, ids = _problem(70, 32, 48, 4, seed=1)
    ids[:5] = 3  # expert 3 has more tokens; expert 0 is dropped below
    ids[ids == 0] = 1
    cot = np.random.default_rng(2).standard_normal((70, 48)).astype(np.float32)
    w_in = np.ascontiguousarray(w.transpose(0, 2, 1)) if transpose_w else w

    def loss(x, w, ids):
        return (rlx.nn.grouped_matmul(x, w, ids, transpose_w=transpose_w) * cot).sum()

    dx, dw = rlx.jit(rlx.grad(loss, argnums=(0, 1)))(x, w_in, ids)
    tdx, tdw = _torch_grads(x, w, ids, cot)
    np.testing.assert_allclose(dx, tdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, tdw.transpose(0, 2, 1) if transpose_w else tdw,
                               rtol=1e-4, atol=1e-4)
    assert not dw[0].any()  # an expert without tokens gets zeros


def _traced(fn, *args):
    traced = rlx.jit(fn).lower(*args)
    return traced.module, traced.name


def test_finite_differences_first_and_second_order():
    x, w, ids = _problem(9, 4, 5, 3, seed=3)

    def f(x, w, ids):
        return (rlx.nn.grouped_matmul(x, w, ids) ** 2).sum()

    module, name = _traced(f, x, w, ids)
    assert check_grads(module, name, wrt=["x", "w"], args={"ids": ids}).ok
    assert check_jvp(module, name, wrt=["x", "w"], args={"ids": ids}).ok
    # second order runs through rlx.grouped_matmul_backward_weight's own rules
    module, name = _traced(rlx.grad(f, argnums=1), x, w, ids)
    assert any(op.name == "rlx.grouped_matmul_backward_weight" for op in module.walk())

    def g(x, w, ids):
        return (rlx.grad(f, argnums=1)(x, w, ids) ** 2).sum()

    module, name = _traced(g, x, w, ids)
    assert check_grads(module, name, wrt=["x", "w"], args={"ids": ids}).ok
    native_grads, interpreted = _native_and_interpreted(rlx.grad(g, argnums=(0, 1)), x, w, ids,
                                                       first=False)
    for native, ref in zip(native_grads, interpreted, strict=True):
        np.testing.assert_allclose(native, ref, rtol=1e-4, atol=1e-4)


def test_jvp_is_bilinear():
    x, w, ids = _problem(20, 8, 12, 3, seed=4)
    tx, tw, _ = _problem(20, 8, 12, 3, seed=5)
    y, ty = rlx.jvp(lambda x, w: rlx.nn.grouped_matmul(x, w, ids), (x, w), (tx, tw))
    expected = _reference(tx, w, ids) + _reference(x, tw, ids)
    np.testing.assert_allclose(ty, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, _reference(x, w, ids), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("in_axes", [(0, None, 0), (None, 0, None), (0, 0, 0), (None, None, 0)])
def test_vmap_folds_the_batch_into_one_op(in_axes):
    batch, (x, w, ids) = 3, _problem(10, 6, 7, 4, seed=6)
    xs = np.stack([x * (i + 1) for i in range(batch)])
    ws = np.stack([w - i for i in range(batch)])
    idss = np.stack([(ids + i) % 4 for i in range(batch)])
    args = [a if ax is None else b for a, b, ax in zip((x, w, ids), (xs, ws, idss), in_axes,
                                                      strict=True)]
    batched = rlx.vmap(rlx.nn.grouped_matmul, in_axes=in_axes)(*args)
    rows = [[a if ax is None else a[i] for a, ax in zip(args, in_axes, strict=True)]
            for i in range(batch)]
    np.testing.assert_allclose(batched, np.stack([_reference(*r) for r in rows]), rtol=1e-4)
    module, _ = _traced(rlx.vmap(rlx.nn.grouped_matmul, in_axes=in_axes), *args)
    assert sum(op.name == "rlx.grouped_matmul" for op in module.walk()) == 1


def test_vmap_of_the_weight_gradient_is_per_example():
    batch, (x, w, ids) = 3, _problem(10, 6, 7, 4, seed=7)
    xs = np.stack([x + i for i in range(batch)])
    idss = np.stack([(ids + i) % 4 for i in range(batch)])

    def dw(x, ids):
        return rlx.grad(lambda w: (rlx.nn.grouped_matmul(x, w, ids) ** 2).sum())(w)

    batched = rlx.jit(rlx.vmap(dw))(xs, idss)
    for i in range(batch):
        np.testing.assert_allclose(batched[i], dw(xs[i], idss[i]), rtol=1e-4, atol=1e-4)


def test_a_top_1_mixture_of_experts_layer_trains():
    """Router -> top-1 expert -> grouped matmul, gated by the router's probability."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    target = np.tanh(x @ rng.standard_normal((8, 4)).astype(np.float32))
    params = {"router": rng.standard_normal((8, 4)).astype(np.float32) * 0.1,
              "experts": rng.standard_normal((4, 8, 4)).astype(np.float32) * 0.1}

    def loss(p, x):
        probs = rlx.nn.softmax(x @ p["router"])
        gate, expert = rlx.nn.top_k(probs, 1)
        y = rlx.nn.grouped_matmul(x, p["experts"], expert[:, 0]) * gate
        return ((y - target) ** 2).mean()

    step = rlx.jit(rlx.value_and_grad(loss))
    first, _ = step(params, x)
    for _ in range(60):
        value, grads = step(params, x)
        params = {k: v - 0.5 * grads[k] for k, v in params.items()}
    assert value < 0.5 * first


@pytest.mark.parametrize("call,message", [
    (lambda x, w, ids: rlx.nn.grouped_matmul(x, w, ids.astype(np.float32)),
     "grouped_matmul: ids must be integer expert ids"),
    (lambda x, w, ids: rlx.nn.grouped_matmul(x, w[:, :3], ids), "w must be [E, K, N]"),
    (lambda x, w, ids: rlx.nn.grouped_matmul(x, w, ids[:4]), "expert ids must have shape [37]"),
    (lambda x, w, ids: rlx.nn.grouped_matmul(x[0], w, ids), "'rlx.grouped_matmul' op x must have rank 2"),
    (lambda x, w, ids: rlx.nn.grouped_matmul(x, w, ids, transpose_w=1), "transpose_w must be a bool"),
    (lambda x, w, ids: rlx.nn.grouped_matmul(x, w, ids, transpose_w=np.array([True, False])),
     "transpose_w must be a bool"),
])
def test_errors_are_located(call, message):
    x, w, ids = _problem()
    with pytest.raises(RlxError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        rlx.jit(call)(x, w, ids)
    assert "test_moe.py" in str(info.value)


def test_promotion_empty_products_and_one_token():
    """x and w promote as for @ (an integer x with float weights is float, not the
    weights rounded to integers); an empty contraction or output is zeros or empty, as x @
    w; one token and one expert differentiate (the routing's tensors have one shape)."""
    ids = np.array([0, 1], np.int32)
    w = np.full((2, 2, 3), 0.75, np.float32)
    x_int = np.array([[1, 2], [3, 4]], np.int32)
    want = _reference(x_int.astype(np.float32), w, ids)
    np.testing.assert_allclose(rlx.jit(lambda x, i: rlx.nn.grouped_matmul(x, w, i))(x_int, ids),
                               want)
    np.testing.assert_allclose(rlx.nn.grouped_matmul(x_int, w, ids), want)
    wide = rlx.jit(rlx.nn.grouped_matmul)(x_int.astype(np.float32), w.astype(np.float64), ids)
    assert wide.dtype == np.float64
    x0 = np.ones((6, 0), np.float32)
    np.testing.assert_array_equal(rlx.jit(rlx.nn.grouped_matmul)(
        x0, np.ones((2, 0, 5), np.float32), np.zeros(6, np.int32)), np.zeros((6, 5)))
    assert rlx.jit(rlx.nn.grouped_matmul)(np.ones((6, 4), np.float32),
                                          np.ones((2, 4, 0), np.float32),
                                          np.zeros(6, np.int32)).shape == (6, 0)
    x1, w1, ids1 = _problem(1, 2, 3, 1, seed=9)
    gx, gw = rlx.jit(rlx.grad(lambda x, w, i: rlx.nn.grouped_matmul(x, w, i).sum(),
                              argnums=(0, 1)))(x1, w1, ids1)
    np.testing.assert_allclose(gx, w1[0].sum(axis=1)[None], rtol=1e-6)
    np.testing.assert_allclose(gw, np.broadcast_to(x1[0][None, :, None], w1.shape), rtol=1e-6)
