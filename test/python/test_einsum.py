"""rlx.einsum and rlx.tensordot: numpy's contractions on traced tensors (transposes,
reshapes and batched matmuls), against numpy, their gradients against PyTorch's, under
vmap and jvp, and their errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError


def _arrays(*shapes, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),                      # implicit output
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 4), (2, 6, 3, 4)]),  # attention scores
    ("bhqk,bkhd->bqhd", [(2, 3, 5, 6), (2, 6, 3, 4)]),
    ("ii->i", [(4, 4)]),                              # diagonal
    ("ii", [(4, 4)]),                                 # trace
    ("iij->ij", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),                        # outer product
    ("ij,ij->ij", [(2, 3), (2, 3)]),                  # elementwise
    ("i,i->", [(5,), (5,)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),      # broadcast batch
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (6, 4, 5)]),
    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("...", [(2, 3)]),
]


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy(subscripts, shapes):
    ops = _arrays(*shapes)
    want = np.einsum(subscripts, *ops)
    native = rlx.jit(lambda *o: rlx.einsum(subscripts, *o))(*ops)
    assert np.shape(native) == want.shape
    np.testing.assert_allclose(native, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rlx.einsum(subscripts, *ops), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("subscripts,shapes", CASES[:4] + CASES[15:17],
                         ids=[c[0] for c in CASES[:4] + CASES[15:17]])
def test_gradients_match_torch(subscripts, shapes):
    ops = _arrays(*shapes, seed=1)
    cot = np.random.default_rng(2).standard_normal(np.einsum(subscripts, *ops).shape)
    grads = rlx.jit(rlx.grad(lambda *o: (rlx.einsum(subscripts, *o) * cot.astype(np.float32)).sum(),
                             argnums=tuple(range(len(ops)))))(*ops)
    tops = [torch.tensor(o, dtype=torch.float64, requires_grad=True) for o in ops]
    (torch.einsum(subscripts, *tops) * torch.tensor(cot)).sum().backward()
    for mine, t in zip(grads, tops, strict=True):
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_one_matmul_per_pair_and_no_new_op():
    q, k = _arrays((2, 5, 3, 4), (2, 6, 3, 4))
    text = rlx.jit(lambda q, k: rlx.einsum("bqhd,bkhd->bhqk", q, k)).lower(q, k).as_text()
    assert text.count("rlx.matmul") == 1 and "einsum" not in text


def test_vmap_jvp_and_tensordot():
    a, b, ta = _arrays((4, 3, 5), (5, 2), (4, 3, 5), seed=3)
    batched = rlx.vmap(lambda a: rlx.einsum("ij,jk->ik", a, b))(a)
    np.testing.assert_allclose(batched, np.einsum("bij,jk->bik", a, b), rtol=1e-5)
    _, tangent = rlx.jvp(lambda a: rlx.einsum("bij,jk->bik", a, b), (a,), (ta,))
    np.testing.assert_allclose(tangent, np.einsum("bij,jk->bik", ta, b), rtol=1e-5)
    x, w = _arrays((2, 3, 4), (3, 4, 5), seed=4)
    for axes in (2, ([1, 2], [0, 1]), ([1], [0]), 0):
        np.testing.assert_allclose(rlx.jit(lambda x, w, axes=axes: rlx.tensordot(x, w, axes))(x, w),
                                   np.tensordot(x, w, axes), rtol=1e-4, atol=1e-5)


def test_dtypes_promote_and_halves_round_once():
    a, b = _arrays((3, 4), (4, 2), seed=5)
    assert rlx.jit(lambda a: rlx.einsum("ij,jk->ik", a, b.astype(np.float64)))(a).dtype == np.float64
    ints = rlx.einsum("ij,j->i", np.arange(6, dtype=np.int32).reshape(2, 3),
                      np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(ints, [8, 26])
    ta, tb = torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16()
    out = rlx.jit(lambda a, b: rlx.einsum("ij,jk->ik", a.astype("bf16"), b.astype("bf16")))(a, b)
    np.testing.assert_array_equal(out.astype(np.float32),
                                  torch.einsum("ij,jk->ik", ta, tb).float().numpy())


@pytest.mark.parametrize("call,message", [
    (lambda a, b: rlx.einsum("ij,jk->ik", a), "names 2 operands, got 1"),
    (lambda a, b: rlx.einsum("ijk,jk->ik", a, b), "has 3 labels for a tensor of rank 2"),
    (lambda a, b: rlx.einsum("ij,jk->iz", a, b), "output label 'z' is in no operand"),
    (lambda a, b: rlx.einsum("ij,ik->jk", a, b), "label 'i' has sizes 3 and 4"),
    (lambda a, b: rlx.einsum("i1,jk->ik", a, b), "invalid subscript '1'"),
    (lambda a, b: rlx.einsum("ij,jk->ii", a, b), "output 'ii' repeats a label"),
    (lambda a, b: rlx.einsum(3, a, b), "subscripts must be a str"),
    (lambda a, b: rlx.tensordot(a, b, axes=3), "axes=3 is out of range"),
    (lambda a, b: rlx.tensordot(a, b, axes=([0], [5])), "axis 5 is out of range"),
])
def test_errors_are_located(call, message):
    a, b = _arrays((3, 4), (4, 2))
    with pytest.raises(RlxError, match=message) as info:
        rlx.jit(call)(a, b)
    assert "test_einsum.py" in str(info.value)


@pytest.mark.parametrize("dimension_numbers,shapes", [
    ((((2,), (2,)), ((0,), (0,))), [(2, 5, 4), (2, 6, 4)]),     # batched q k^T
    ((((1, 2), (1, 0)), ((), ())), [(3, 4, 5), (5, 4, 2)]),     # two contracting axes
    ((((0,), (1,)), ((2,), (0,))), [(4, 3, 2), (2, 4, 5)]),     # batch axis not leading
])
def test_dot_general_matches_jax(dimension_numbers, shapes):
    import jax

    lhs, rhs = _arrays(*shapes, seed=6)
    want = np.asarray(jax.lax.dot_general(lhs, rhs, dimension_numbers))
    got = rlx.jit(lambda a, b: rlx.dot_general(a, b, dimension_numbers))(lhs, rhs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(RlxError, match="do not pair up"):
        rlx.jit(lambda a, b: rlx.dot_general(a, b, (((0,), ()), ((), ()))))(lhs, rhs)


def test_lora_matmul_is_the_low_rank_update():
    x, w, a, b = _arrays((4, 8), (8, 6), (8, 2), (2, 6), seed=7)
    y = rlx.jit(lambda x, a, b: rlx.nn.lora_matmul(x, w, a, b, scale=0.5))(x, a, b)
    np.testing.assert_allclose(y, x @ w + 0.5 * (x @ a) @ b, rtol=1e-5, atol=1e-5)
    ga, gb = rlx.grad(lambda a, b: rlx.nn.lora_matmul(x, w, a, b, scale=0.5).sum(),
                      argnums=(0, 1))(a, b)
    ones = np.ones((4, 6), np.float32)
    np.testing.assert_allclose(ga, 0.5 * x.T @ ones @ b.T, rtol=1e-5)
    np.testing.assert_allclose(gb, 0.5 * (x @ a).T @ ones, rtol=1e-5)
    with pytest.raises(RlxError, match="scale must be a number"):
        rlx.jit(lambda x: rlx.nn.lora_matmul(x, w, a, b, scale="2"))(x)


def test_review_fixes():
    """tensordot rejects duplicate and mismatched axes (numpy does); bool einsum is bool;
    numpy-only and bf16 numpy operands inside a trace become constants; optimize= is
    accepted; ellipsis labels print as '...'."""
    import ml_dtypes

    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    with pytest.raises(RlxError, match=r"duplicate axes \[0, 0\] of a"):
        rlx.jit(lambda a: rlx.tensordot(a, a, ([0, 0], [0, 1])))(a)
    with pytest.raises(RlxError, match=r"axis 1 of a \(size 1\) does not match axis 0 of b"):
        rlx.jit(lambda a: rlx.tensordot(a[:, :1], np.ones((4, 3), np.float32), ([1], [0])))(a)
    with pytest.raises(RlxError, match=r"lhs axis 0 \(size 1\) and rhs axis 0 \(size 2\)"):
        rlx.jit(lambda a: rlx.dot_general(a[:1], a[:2], (((0,), (0,)), ((), ()))))(a)
    m = np.array([[True, False], [False, False]])
    np.testing.assert_array_equal(rlx.einsum("ij->j", m), np.einsum("ij->j", m))
    np.testing.assert_array_equal(rlx.jit(lambda a: rlx.einsum("ij,jk", a, a) + 0 * a.sum())(a),
                                  a @ a)
    b16 = a.astype(ml_dtypes.bfloat16)
    assert rlx.einsum("ij,jk->ik", b16, b16).dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(rlx.jit(lambda a: rlx.einsum("ij,jk", a, np.eye(3),
                                                            optimize=True))(a), a, rtol=1e-6)
    with pytest.raises(RlxError, match="label '...' has sizes 2 and 3"):
        rlx.jit(lambda a: rlx.einsum("...i,...i", a[:2], a))(a)


def test_diagonal_ignores_infinite_off_diagonal_entries():
    m = np.array([[1.0, np.inf], [0.0, 2.0]], np.float32)
    np.testing.assert_array_equal(rlx.einsum("ii->i", m), [1.0, 2.0])
    np.testing.assert_array_equal(rlx.jit(lambda m: rlx.einsum("ii", m))(m), 3.0)
    with pytest.raises(RlxError, match="axes must be ints"):
        rlx.jit(lambda m: rlx.tensordot(m, m, axes=([0.0], [0])))(m)
