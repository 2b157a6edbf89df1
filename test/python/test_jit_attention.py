"""The JIT against the interpreter on rlx.attention and rlx.attention_backward (every wrt),
every mask kind, GQA ratios 1/2/4, S != S_kv both ways, window edges, score_scale,
softcap, fully masked rows; and the whole gradient module of an attention loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_grad_attention import BIAS, CAUSAL, CUSTOM, Case, make_mask

import rlx_mlir as rlx
from rlx_mlir.runtime.jit import compile as jit_compile

NP = {"f32": np.float32, "f64": np.float64}
RTOL = {"f32": 1e-5, "f64": 1e-12}


def window(w: int) -> dict[str, Any]:
    return {"mask_kind": "sliding_window", "window": w}


CASES = [
    Case("none_s_lt_skv", 2, 3, 5, 2, 2),
    Case("none_s_gt_skv_gqa2", 1, 5, 3, 2, 1),
    Case("causal_s_lt_skv_gqa4", 1, 3, 5, 4, 1, attrs=CAUSAL),
    Case("causal_s_gt_skv_masked_rows", 2, 5, 3, 2, 1, attrs=CAUSAL),
    Case("causal_square_gqa2_scale", 1, 4, 4, 4, 2, 3, {**CAUSAL, "score_scale": 0.3}),
    Case("window_0_diagonal", 1, 4, 4, 2, 2, attrs=window(0)),
    Case("window_2_s_lt_skv", 1, 3, 6, 2, 1, attrs=window(2)),
    Case("window_wide_s_gt_skv", 1, 4, 3, 2, 2, attrs=window(10)),
    Case("custom_i1_gqa2", 2, 3, 5, 4, 2, attrs=CUSTOM, mask="padding"),
    Case("custom_all_pad", 2, 4, 3, 2, 2, attrs=CUSTOM, mask="all_pad"),
    Case("custom_float", 2, 3, 7, 2, 1, attrs=CUSTOM, mask="float_padding"),
    Case("bias_neg_inf_gqa2", 2, 3, 4, 4, 2, attrs=BIAS, mask="bias"),
    Case("softcap_causal_gqa4", 1, 4, 5, 4, 1, 3, {**CAUSAL, "softcap": 1.5}),
    Case("softcap_bias_scale", 1, 3, 4, 2, 2, 2,
         {**BIAS, "softcap": 0.7, "score_scale": 1.3}, "bias"),
    Case("softcap_window_s_gt_skv", 2, 5, 3, 2, 1, 2, {**window(1), "softcap": 2.0}),
]


def build_module(case: Case, dtype: str, wrts: list[str]) -> rlx.Builder:
    """``@attention`` and one ``@d_<wrt>`` per gradient, in one module (compiled once)."""
    module = None
    for name in ["attention", *(f"d_{w}" for w in wrts)]:
        b = rlx.Builder(name, module)
        module = b.module
        q, k, v = (b.input(n, s, dtype) for n, s in case.shapes().items())
        dy = None if name == "attention" else b.input("dy", case.shapes()["q"], dtype)
        mask = [] if case.mask is None else [b.input("mask", *case.mask_type(dtype))]
        if dy is None:
            b.ret(b.attention(q, k, v, *mask, **case.all_attrs))
        else:
            b.ret(b.attention_backward(q, k, v, dy, *mask, **case.all_attrs,
                                       wrt=name.removeprefix("d_")))
    return module


def operands(case: Case, dtype: str, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = [rng.standard_normal(s).astype(NP[dtype]) for s in case.shapes().values()]
    if case.mask is not None:
        arrays.append(make_mask(case, rng, NP[dtype], neg_inf_bias=True))
    return arrays


def assert_jit_matches_interpreter(module, entry: str, arrays: list[np.ndarray], dtype: str):
    got = jit_compile(module, entry=entry)(*arrays)
    want = rlx.interpret(module, *arrays, entry=entry)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype], err_msg=entry)


def check_case(case: Case, dtype: str, wrts: list[str], rng: np.random.Generator) -> None:
    module = build_module(case, dtype, wrts)
    q, k, v, *mask = operands(case, dtype, rng)
    dy = rng.standard_normal(q.shape).astype(NP[dtype])
    assert_jit_matches_interpreter(module, "attention", [q, k, v, *mask], dtype)
    for wrt in wrts:
        assert_jit_matches_interpreter(module, f"d_{wrt}", [q, k, v, dy, *mask], dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_attention_and_every_gradient_jit_matches_interpreter(case, dtype, rng):
    check_case(case, dtype, case.wrts, rng)


def test_fully_masked_rows_are_zero_in_the_jit(rng):
    """Causal S > S_kv: the first S - S_kv queries see no key; output and dq are 0."""
    case = CASES[3]
    module = build_module(case, "f32", ["q"])
    q, k, v = operands(case, "f32", rng)
    out = jit_compile(module, entry="attention")(q, k, v)[0]
    dq = jit_compile(module, entry="d_q")(q, k, v, np.ones_like(q))[0]
    masked = case.q_len - case.kv_len
    assert not out[:, :masked].any() and out[:, masked:].all()
    assert not dq[:, :masked].any()


@st.composite
def random_case(draw) -> tuple[Case, str, int]:
    kv_heads, group = draw(st.integers(1, 2)), draw(st.sampled_from([1, 2, 4]))
    kind = draw(st.sampled_from(["none", "causal", "sliding_window", "custom", "bias"]))
    attrs: dict[str, Any] = {"mask_kind": kind}
    if kind == "sliding_window":
        attrs["window"] = draw(st.integers(0, 6))
    if draw(st.booleans()):
        attrs["softcap"] = draw(st.sampled_from([0.5, 3.0]))
    case = Case(f"random_{kind}", draw(st.integers(1, 2)), draw(st.integers(1, 5)),
                draw(st.integers(1, 5)), kv_heads * group, kv_heads, draw(st.integers(1, 4)),
                attrs, {"custom": "padding", "bias": "bias"}.get(kind))
    return case, draw(st.sampled_from(case.wrts)), draw(st.integers(0, 2**31))


@settings(max_examples=8, deadline=None)
@given(random_case())
def test_random_shapes_jit_matches_interpreter(drawn):
    case, wrt, seed = drawn
    check_case(case, "f64", [wrt], np.random.default_rng(seed))


LOSS_CASES = [
    (Case("loss_causal_gqa2", 2, 3, 4, 4, 2, 2, CAUSAL), "f32"),
    (Case("loss_bias_softcap", 1, 3, 5, 2, 1, 3, {**BIAS, "softcap": 1.0}, "bias"), "f64"),
    (Case("loss_custom_window", 2, 4, 4, 2, 2, 2, CUSTOM, "all_pad"), "f64"),
]


@pytest.mark.parametrize(("case", "dtype"), LOSS_CASES, ids=lambda c: getattr(c, "id", c))
def test_grad_of_attention_loss_jit_matches_interpreter(case, dtype, rng):
    """``rlx.grad_with_loss`` of ``sum(attention(q, k, v[, bias])^2)``: loss and gradients."""
    b = rlx.Builder("loss")
    q, k, v = (b.param(n, s, dtype) for n, s in case.shapes().items())
    arrays = operands(case, dtype, rng)
    mask = []
    if case.mask is not None:
        add = b.param if case.mask == "bias" else b.input
        mask = [add("mask", *case.mask_type(dtype))]
    out = b.attention(q, k, v, *mask, **case.all_attrs)
    b.ret(b.reduce_sum(out * out, axes=[0, 1, 2]))
    grad = rlx.grad_with_loss(b.module)
    seed = np.ones((), NP[dtype])
    assert_jit_matches_interpreter(b.module, grad.sym_name.data, [*arrays, seed], dtype)


BLOCKED_CASES = [  # causal heads of >= 64 rows are lowered in row blocks (attention.RowBlock)
    (Case("blocked_square_gqa2", 2, 64, 64, 4, 2, 4, CAUSAL), "f32"),
    (Case("blocked_uneven_softcap", 1, 72, 72, 2, 2, 3, {**CAUSAL, "softcap": 2.0}), "f64"),
    (Case("blocked_s_gt_skv", 1, 128, 40, 2, 1, 2, CAUSAL), "f64"),  # first blocks see no key
    (Case("blocked_s_lt_skv", 2, 64, 100, 1, 1, 4, CAUSAL), "f64"),
]


@pytest.fixture
def small_blocks(monkeypatch):
    """Row blocks from 32 rows and up to 4 of them (production: see attention.py)."""
    from rlx_mlir.dialects import attention

    monkeypatch.setenv("RLX_CAUSAL_BLOCKS", "4")
    monkeypatch.setattr(attention, "CAUSAL_BLOCK_MIN", 32)


@pytest.mark.parametrize(("case", "dtype"), BLOCKED_CASES, ids=lambda c: getattr(c, "id", c))
def test_causal_row_blocks_match_interpreter(case, dtype, rng, small_blocks):
    """Forward, every gradient alone, and the shared forward + gradients of a loss."""
    from rlx_mlir.dialects.attention import AttentionConfig, row_blocks

    cfg = AttentionConfig.from_attrs(case.all_attrs)
    assert len(row_blocks(cfg, case.q_len, case.kv_len)) > 1
    check_case(case, dtype, case.wrts, rng)
    test_grad_of_attention_loss_jit_matches_interpreter(case, dtype, rng)


def test_row_blocks_cover_rows_and_skip_unseen_keys(small_blocks):
    from rlx_mlir.dialects.attention import AttentionConfig, RowBlock, row_blocks

    causal = AttentionConfig(2, 2, 4, "causal")
    assert row_blocks(causal, 256, 256) == [RowBlock(0, 64, 64), RowBlock(64, 128, 128),
                                            RowBlock(128, 192, 192), RowBlock(192, 256, 256)]
    assert row_blocks(causal, 128, 40)[0] == RowBlock(0, 32, 0)  # rows 0..87 see no key
    assert row_blocks(causal, 40, 40) == [RowBlock(0, 40, 40)]
    assert row_blocks(AttentionConfig(2, 2, 4, "none"), 256, 256) == [RowBlock(0, 256, 256)]


def test_production_row_blocks(monkeypatch):
    """One block by default (a second one's code cost more compile time than it saved);
    ``RLX_CAUSAL_BLOCKS=2`` cuts heads of 256+ rows in two."""
    from rlx_mlir.dialects.attention import AttentionConfig, RowBlock, row_blocks

    causal = AttentionConfig(4, 4, 64, "causal")
    assert row_blocks(causal, 256, 256) == [RowBlock(0, 256, 256)]
    monkeypatch.setenv("RLX_CAUSAL_BLOCKS", "2")
    assert row_blocks(causal, 256, 256) == [RowBlock(0, 128, 128), RowBlock(128, 256, 256)]
    assert row_blocks(causal, 128, 128) == [RowBlock(0, 128, 128)]


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_per_head_loop_any_thread_count(threads, monkeypatch, rng):
    """The per-head loop single-threaded (a plain loop), chunked over 2 threads (batch 4),
    and as one task per head when the thread count does not divide the batch (3)."""
    monkeypatch.setenv("RLX_NUM_THREADS", threads)
    case = Case(f"threads_{threads}", 4, 6, 7, 4, 2, 3, CAUSAL)
    test_grad_of_attention_loss_jit_matches_interpreter(case, "f64", rng)
