"""Interpreter results of rlx.attention against torch's scaled_dot_product_attention."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.dialects.attention import AttentionConfig, attention_mask, masked_softmax

D = 4
DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: {"rtol": 2e-5, "atol": 2e-6}, np.float64: {"rtol": 1e-11, "atol": 1e-12}}


def run_attention(q, k, v, mask=None, **attrs):
    """Build ``rlx.attention`` with the builder and run the interpreter."""
    b = rlx.Builder("f")
    args = [b.input(n, a.shape, _dtype(a)) for n, a in (("q", q), ("k", k), ("v", v))]
    arrays = [q, k, v]
    if mask is not None:
        args.append(b.input("mask", mask.shape, _dtype(mask)))
        arrays.append(mask)
    b.ret(b.attention(*args, **attrs))
    return rlx.interpret(b.module, *arrays)[0]


def _dtype(a):
    return "i1" if a.dtype == np.bool_ else DTYPES[a.dtype.type]


def heads(x, h):
    """[B, S, H*D] numpy -> [B, H, S, D] torch."""
    b, s, w = x.shape
    return torch.from_numpy(x).view(b, s, h, w // h).transpose(1, 2)


def torch_sdpa(q, k, v, hq, hkv, attn_mask=None, scale=None):
    out = F.scaled_dot_product_attention(
        heads(q, hq), heads(k, hkv), heads(v, hkv), attn_mask=attn_mask, scale=scale,
        enable_gqa=hq != hkv,
    )
    b, _, s, _ = out.shape
    return out.transpose(1, 2).reshape(b, s, -1).numpy()


def bottom_right_causal(s, skv, window=None):
    """Keep-matrix written with torch.tril, independent of the rlx helpers."""
    ones = torch.ones(s, skv, dtype=torch.bool)
    keep = ones.tril(diagonal=skv - s)
    if window is not None:
        keep &= ~ones.tril(diagonal=skv - s - window - 1)
    return keep


def inputs(rng, dtype, b, s, skv, hq, hkv):
    q = rng.standard_normal((b, s, hq * D)).astype(dtype)
    k = rng.standard_normal((b, skv, hkv * D)).astype(dtype)
    v = rng.standard_normal((b, skv, hkv * D)).astype(dtype)
    return q, k, v


def key_padding(rng, b, skv):
    keep = rng.random((b, skv)) < 0.6
    keep[:, -1] = True  # at least one key per row (the all-pad case has its own test)
    return keep


def case_none(rng, b, s, skv, hq, dtype):
    return {}, None, None


def case_causal(rng, b, s, skv, hq, dtype):
    return {"mask_kind": "causal"}, None, bottom_right_causal(s, skv)


def case_sliding_window(rng, b, s, skv, hq, dtype):
    return ({"mask_kind": "sliding_window", "window": 2}, None,
            bottom_right_causal(s, skv, window=2))


def case_custom_bool(rng, b, s, skv, hq, dtype):
    keep = key_padding(rng, b, skv)
    return {"mask_kind": "custom"}, keep, torch.from_numpy(keep)[:, None, None, :]


def case_custom_float(rng, b, s, skv, hq, dtype):
    keep = key_padding(rng, b, skv)
    values = np.where(keep, rng.uniform(0.5, 1.0, keep.shape), rng.uniform(0, 0.49, keep.shape))
    values[0, -1] = 0.5  # the threshold itself keeps
    return {"mask_kind": "custom"}, values.astype(dtype), torch.from_numpy(keep)[:, None, None, :]


def case_bias(rng, b, s, skv, hq, dtype):
    bias = rng.standard_normal((b, hq, s, skv)).astype(dtype)
    return {"mask_kind": "bias"}, bias, torch.from_numpy(bias)


CASES = {
    "none": case_none, "causal": case_causal, "sliding_window": case_sliding_window,
    "custom_bool": case_custom_bool, "custom_float": case_custom_float, "bias": case_bias,
}
LENGTHS = [(4, 4), (2, 6), (1, 5), (6, 3)]  # S == S_kv, S < S_kv, decode, S > S_kv
GROUPS = [(2, 2), (4, 2), (4, 1)]  # Hq/Hkv = 1, 2, 4


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda p: f"S{p[0]}_Skv{p[1]}")
@pytest.mark.parametrize("groups", GROUPS, ids=lambda p: f"Hq{p[0]}_Hkv{p[1]}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch_sdpa(case, lengths, groups, dtype, rng):
    (s, skv), (hq, hkv), b = lengths, groups, 2
    q, k, v = inputs(rng, dtype, b, s, skv, hq, hkv)
    attrs, mask, torch_mask = CASES[case](rng, b, s, skv, hq, dtype)
    got = run_attention(q, k, v, mask, num_heads=hq, num_kv_heads=hkv, head_dim=D, **attrs)
    assert got.dtype == dtype and got.shape == q.shape
    want = torch_sdpa(q, k, v, hq, hkv, attn_mask=torch_mask)
    np.testing.assert_allclose(got, want, **TOL[dtype])


def test_causal_equals_torch_is_causal_when_square(rng):
    q, k, v = inputs(rng, np.float64, 2, 5, 5, 2, 2)
    got = run_attention(q, k, v, num_heads=2, head_dim=D, mask_kind="causal")
    want = F.scaled_dot_product_attention(heads(q, 2), heads(k, 2), heads(v, 2), is_causal=True)
    np.testing.assert_allclose(got, want.transpose(1, 2).reshape(q.shape).numpy(), rtol=1e-11)


def test_gqa_equals_repeated_kv_heads(rng):
    """Query head h reads kv head h // (Hq/Hkv): same as repeat_interleave of k and v."""
    q, k, v = inputs(rng, np.float64, 1, 3, 4, 4, 2)
    got = run_attention(q, k, v, num_heads=4, num_kv_heads=2, head_dim=D)
    kk, vv = (heads(x, 2).repeat_interleave(2, dim=1) for x in (k, v))
    want = F.scaled_dot_product_attention(heads(q, 4), kk, vv)
    np.testing.assert_allclose(got, want.transpose(1, 2).reshape(q.shape).numpy(), rtol=1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_score_scale(dtype, scale, rng):
    q, k, v = inputs(rng, dtype, 2, 3, 5, 2, 1)
    got = run_attention(q, k, v, num_heads=2, num_kv_heads=1, head_dim=D, score_scale=scale,
                        mask_kind="causal")
    f32_scale = float(np.float32(scale))  # score_scale is an f32 attribute
    want = torch_sdpa(q, k, v, 2, 1, attn_mask=bottom_right_causal(3, 5), scale=f32_scale)
    np.testing.assert_allclose(got, want, **TOL[dtype])


def softcap_reference(q, k, v, hq, hkv, cap, scale, keep=None, bias=None):
    """Explicit torch formula: softmax(cap * tanh(scale Q K^T / cap) + bias, masked) V."""
    qh = heads(q, hq)
    kh, vh = (heads(x, hkv).repeat_interleave(hq // hkv, dim=1) for x in (k, v))
    s = scale * qh @ kh.transpose(-1, -2)
    s = cap * torch.tanh(s / cap)
    if bias is not None:
        s = s + torch.from_numpy(bias)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    out = torch.softmax(s, dim=-1) @ vh
    return out.transpose(1, 2).reshape(q.shape).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["none", "causal", "bias"])
def test_softcap_matches_explicit_formula(dtype, kind, rng):
    q, k, v = inputs(rng, dtype, 2, 4, 6, 4, 2)
    q *= 4  # large scores so the cap matters
    bias = rng.standard_normal((2, 4, 4, 6)).astype(dtype) if kind == "bias" else None
    got = run_attention(q, k, v, bias, num_heads=4, num_kv_heads=2, head_dim=D,
                        mask_kind=kind, softcap=1.5, score_scale=0.5)
    keep = bottom_right_causal(4, 6) if kind == "causal" else None
    want = softcap_reference(q, k, v, 4, 2, 1.5, 0.5, keep=keep, bias=bias)
    np.testing.assert_allclose(got, want, **TOL[dtype])
    uncapped = run_attention(q, k, v, bias, num_heads=4, num_kv_heads=2, head_dim=D,
                             mask_kind=kind, score_scale=0.5)
    assert not np.allclose(got, uncapped, atol=1e-3)  # the cap changed the result


@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda p: f"S{p[0]}_Skv{p[1]}")
def test_window_zero_attends_only_to_own_position(lengths, rng):
    s, skv = lengths
    q, k, v = inputs(rng, np.float64, 2, s, skv, 2, 2)
    got = run_attention(q, k, v, num_heads=2, head_dim=D, mask_kind="sliding_window", window=0)
    for qi in range(s):
        abs_q = skv - s + qi
        want = v[:, abs_q] if abs_q >= 0 else np.zeros_like(v[:, 0])
        np.testing.assert_allclose(got[:, qi], want, rtol=1e-12)


@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda p: f"S{p[0]}_Skv{p[1]}")
@pytest.mark.parametrize("extra", [0, 3])
def test_wide_window_equals_causal(lengths, extra, rng):
    s, skv = lengths
    q, k, v = inputs(rng, np.float64, 2, s, skv, 4, 2)
    kwargs = {"num_heads": 4, "num_kv_heads": 2, "head_dim": D}
    windowed = run_attention(q, k, v, mask_kind="sliding_window", window=skv + extra, **kwargs)
    causal = run_attention(q, k, v, mask_kind="causal", **kwargs)
    np.testing.assert_array_equal(windowed, causal)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows_are_zero(dtype, rng):
    """All keys padded in batch row 1; causal with S > S_kv masks whole early rows."""
    q, k, v = inputs(rng, dtype, 2, 3, 4, 2, 2)
    keep = np.array([[True, False, True, False], [False] * 4])
    got = run_attention(q, k, v, keep, num_heads=2, head_dim=D, mask_kind="custom")
    assert np.all(got[1] == 0) and np.all(np.isfinite(got))
    want = torch_sdpa(q, k, v, 2, 2, torch.from_numpy(keep)[:, None, None])
    np.testing.assert_allclose(got[0], want[0], **TOL[dtype])
    q, k, v = inputs(rng, dtype, 1, 5, 2, 2, 2)
    got = run_attention(q, k, v, num_heads=2, head_dim=D, mask_kind="causal")
    assert np.all(got[:, :3] == 0) and np.all(np.isfinite(got))
    np.testing.assert_allclose(got[:, 3], v[:, 0], **TOL[dtype])  # only key 0 visible


def test_masked_keys_get_exactly_zero_probability(rng):
    """A masked key's V row, however large, does not leak into the output."""
    q, k, v = inputs(rng, np.float32, 1, 2, 3, 1, 1)
    keep = np.array([[True, True, False]])
    v_big = v.copy()
    v_big[0, 2] = 1e30
    got = run_attention(q, k, v_big, keep, num_heads=1, head_dim=D, mask_kind="custom")
    ref = run_attention(q, k, v, keep, num_heads=1, head_dim=D, mask_kind="custom")
    np.testing.assert_array_equal(got, ref)


def test_negative_infinite_bias_masks_like_torch(rng):
    q, k, v = inputs(rng, np.float64, 1, 3, 3, 1, 1)
    bias = np.zeros((1, 1, 3, 3))
    bias[0, 0, 0, 1:] = -np.inf
    got = run_attention(q, k, v, bias, num_heads=1, head_dim=D, mask_kind="bias")
    np.testing.assert_allclose(got, torch_sdpa(q, k, v, 1, 1, torch.from_numpy(bias)), rtol=1e-11)
    np.testing.assert_allclose(got[0, 0], v[0, 0], rtol=1e-12)


def test_default_scale_is_inverse_sqrt_head_dim():
    assert AttentionConfig.from_attrs({"num_heads": 2, "head_dim": 9}).scale == 1 / 3
    cfg = AttentionConfig.from_attrs({"num_heads": 4, "num_kv_heads": 2, "head_dim": 16})
    assert (cfg.group, cfg.mask_kind, cfg.softcap, cfg.window) == (2, "none", None, None)


def test_mask_helper_and_softmax_helper():
    cfg = AttentionConfig(1, 1, 4, "sliding_window", window=1)
    assert attention_mask(cfg, 2, 4).astype(int).tolist() == [[0, 1, 1, 0], [0, 0, 1, 1]]
    probs = masked_softmax(np.zeros((2, 3)), np.array([[True, False, True], [False] * 3]))
    np.testing.assert_array_equal(probs, [[0.5, 0, 0.5], [0, 0, 0]])


def test_builder_rejects_bad_attributes():
    b = rlx.Builder("f")
    q, k = b.input("q", (1, 2, 8)), b.input("k", (1, 3, 8))
    with pytest.raises(rlx.RlxError, match="num_kv_heads 3 does not divide num_heads 2"):
        b.attention(q, k, k, num_heads=2, num_kv_heads=3, head_dim=4)
    with pytest.raises(rlx.RlxError, match="mask_kind 'bias' needs a mask operand"):
        b.attention(q, k, k, num_heads=2, head_dim=4, mask_kind="bias")
    assert math.isclose(
        b.attention(q, k, k, num_heads=2, head_dim=4, score_scale=0.5).value.owner.attr(
            "score_scale"), 0.5)


def test_causal_with_key_padding_is_one_op_with_row_blocks(monkeypatch):
    """mask_kind='causal' with a [B, S_kv] key-padding mask is the op's causal_padding
    kind (no dense [B, H, S, S_kv] bias): at S = 256 it is cut into causal row blocks;
    values and q/k/v gradients match torch's SDPA with the combined bool mask, and a query
    whose visible keys are all padding gives zeros (torch: NaN)."""
    import torch

    from rlx_mlir.dialects.attention import AttentionConfig, row_blocks

    B, S, H, D = 2, 256, 2, 16
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((B, S, H * D)).astype(np.float32) for _ in range(3))
    pad = np.ones((B, S), bool)
    pad[0, 200:], pad[1, :3] = False, False  # example 1: queries 0..2 see only padding
    monkeypatch.setenv("RLX_CAUSAL_BLOCKS", "2")
    assert len(row_blocks(AttentionConfig(H, H, D, "causal_padding"), S, S)) == 2

    def f(q, k, v):
        return rlx.nn.attention(q, k, v, H, mask=pad, mask_kind="causal")

    text = rlx.jit(f).lower(q, k, v).as_text()
    assert 'mask_kind = "causal_padding"' in text and "tensor<2x2x256x256" not in text
    keep = torch.tensor(np.tril(np.ones((S, S), bool)))[None, None] & \
        torch.tensor(pad)[:, None, None, :]
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))

    def heads(t):
        return t.reshape(B, S, H, D).transpose(1, 2)

    want = torch.nn.functional.scaled_dot_product_attention(
        heads(tq), heads(tk), heads(tv), attn_mask=keep).transpose(1, 2).reshape(B, S, H * D)
    want = torch.nan_to_num(want)
    got = rlx.jit(f)(q, k, v)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert not got[1, :3].any()
    cot = rng.standard_normal(got.shape).astype(np.float32)
    grads = rlx.jit(rlx.grad(lambda q, k, v: (f(q, k, v) * cot).sum(), argnums=(0, 1, 2)))(q, k, v)
    torch_grads = torch.autograd.grad((want * torch.tensor(cot)).sum(), (tq, tk, tv))
    for mine, theirs in zip(grads, torch_grads, strict=True):
        np.testing.assert_allclose(mine, np.nan_to_num(theirs.numpy()), rtol=1e-3, atol=1e-4)
    batched = rlx.vmap(f, in_axes=(0, None, None))(np.stack([q, q * 0.5]), k, v)
    np.testing.assert_allclose(batched[1], rlx.jit(f)(q * 0.5, k, v), rtol=1e-5, atol=1e-6)


def test_float_keep_mask_of_another_dtype_than_q():
    """An f32 key-padding mask with f64 q keeps the keys where it is >= 0.5, as one of q's
    dtype does (the op itself takes bool or q's dtype)."""
    q = np.random.default_rng(13).standard_normal((2, 3, 4))
    mask = np.array([[1, 0, 1], [1, 1, 0]], np.float32)
    for kind in ("custom", "causal"):
        got = rlx.jit(lambda q, kind=kind: rlx.nn.attention(q, q, q, 2, mask=mask,
                                                            mask_kind=kind))(q)
        want = rlx.jit(lambda q, kind=kind: rlx.nn.attention(q, q, q, 2, mask=mask > 0.5,
                                                             mask_kind=kind))(q)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)
