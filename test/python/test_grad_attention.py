"""Gradients of rlx.attention: finite differences (f64) through the autodiff pass, and
the rlx.attention_backward interpreter against torch.autograd of an explicit formula."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.testing import check_grads, promote_to_f64

DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: {"rtol": 1e-4, "atol": 1e-5}, np.float64: {"rtol": 1e-10, "atol": 1e-12}}


@dataclass(frozen=True)
class Case:
    """One attention configuration: sizes, attributes and the mask operand's kind (a key
    of MASKS, made by make_mask here and in test_jit_attention; test_transforms_attention
    makes its own mask values)."""

    id: str
    batch: int
    q_len: int
    kv_len: int
    heads: int
    kv_heads: int
    head_dim: int = 2
    attrs: dict[str, Any] = field(default_factory=dict)
    mask: str | None = None

    @property
    def all_attrs(self) -> dict[str, Any]:
        return {"num_heads": self.heads, "num_kv_heads": self.kv_heads,
                "head_dim": self.head_dim, **self.attrs}

    def shapes(self) -> dict[str, tuple[int, ...]]:
        kv = (self.batch, self.kv_len, self.kv_heads * self.head_dim)
        return {"q": (self.batch, self.q_len, self.heads * self.head_dim), "k": kv, "v": kv}

    def mask_type(self, dtype: str = "f64") -> tuple[tuple[int, ...], str]:
        """(shape, dtype) of the mask operand: a key mask is i1 or ``dtype``."""
        if self.mask == "bias":
            return (self.batch, self.heads, self.q_len, self.kv_len), dtype
        return (self.batch, self.kv_len), "i1" if self.mask in ("padding", "all_pad") else dtype

    @property
    def wrts(self) -> list[str]:
        return ["q", "k", "v"] + (["bias"] if self.mask == "bias" else [])


def _bias(case: Case, rng: np.random.Generator, dtype: type, neg_inf: bool = False,
          ) -> np.ndarray:
    """Random bias; ``neg_inf``: a few ``-inf`` entries and one all ``-inf`` (fully masked)
    row."""
    bias = rng.standard_normal((case.batch, case.heads, case.q_len, case.kv_len))
    if neg_inf:
        bias[rng.random(bias.shape) < 0.2] = -np.inf
        bias[0, -1, 0] = -np.inf
    return bias.astype(dtype)


def _padding(case: Case, rng: np.random.Generator, dtype: type) -> np.ndarray:
    keep = rng.random((case.batch, case.kv_len)) < 0.6
    keep[:, 0], keep[:, -1] = True, False
    return keep


def _all_pad_last_batch(case: Case, rng: np.random.Generator, dtype: type) -> np.ndarray:
    keep = _padding(case, rng, dtype)
    keep[-1] = False
    return keep


def _float_padding(case: Case, rng: np.random.Generator, dtype: type) -> np.ndarray:
    """Float key mask: >= 0.5 keeps (values at and near the threshold on both sides)."""
    values = np.array([0.9, 0.2, 0.5, 0.49, 1.0, 0.0, 0.7])
    return np.resize(values, (case.batch, case.kv_len)).astype(dtype)


MASKS = {"bias": _bias, "padding": _padding, "all_pad": _all_pad_last_batch,
         "float_padding": _float_padding}

CAUSAL = {"mask_kind": "causal"}
CUSTOM = {"mask_kind": "custom"}
BIAS = {"mask_kind": "bias"}

CASES = [
    Case("none_s_lt_skv", 2, 3, 5, 2, 2),
    Case("none_s_gt_skv_mqa", 1, 5, 3, 2, 1),
    Case("causal_s_lt_skv", 1, 3, 5, 2, 2, attrs=CAUSAL),
    Case("causal_s_gt_skv_masked_rows", 1, 5, 3, 2, 2, attrs=CAUSAL),
    Case("causal_gqa4", 1, 4, 4, 4, 1, attrs=CAUSAL),
    Case("causal_gqa2_scale_softcap", 1, 3, 4, 4, 2,
         attrs={**CAUSAL, "score_scale": 1.3, "softcap": 0.8}),
    Case("window0", 1, 4, 6, 2, 2, attrs={"mask_kind": "sliding_window", "window": 0}),
    Case("window1_s_gt_skv", 1, 5, 3, 2, 1, attrs={"mask_kind": "sliding_window", "window": 1}),
    Case("window_ge_skv", 1, 3, 5, 2, 2, attrs={"mask_kind": "sliding_window", "window": 7}),
    Case("window2_gqa2", 1, 5, 5, 4, 2, attrs={"mask_kind": "sliding_window", "window": 2}),
    Case("custom_padding_gqa2", 2, 3, 4, 2, 1, attrs=CUSTOM, mask="padding"),
    Case("custom_all_pad_batch", 2, 3, 4, 2, 2, attrs=CUSTOM, mask="all_pad"),
    Case("custom_float_mask", 2, 2, 5, 2, 2, attrs=CUSTOM, mask="float_padding"),
    Case("bias", 1, 3, 4, 2, 2, attrs=BIAS, mask="bias"),
    Case("bias_gqa2_s_gt_skv_softcap", 1, 4, 3, 2, 1, attrs={**BIAS, "softcap": 1.5},
         mask="bias"),
    Case("score_scale", 1, 3, 3, 2, 2, head_dim=3, attrs={"score_scale": 2.0}),
    Case("softcap", 2, 2, 3, 2, 2, attrs={"softcap": 0.5, "score_scale": 3.0}),
]


def make_mask(case: Case, rng: np.random.Generator, dtype: type, *,
              neg_inf_bias: bool = False) -> np.ndarray | None:
    """The mask operand of ``case`` (None without one); see _bias for ``neg_inf_bias``."""
    if case.mask == "bias":
        return _bias(case, rng, dtype, neg_inf=neg_inf_bias)
    return None if case.mask is None else MASKS[case.mask](case, rng, dtype)


def _dtype(a: np.ndarray) -> str:
    return "i1" if a.dtype == np.bool_ else DTYPES[a.dtype.type]


# ---------------------------------------------------------------- finite differences


def forward_module(case: Case, mask: np.ndarray | None) -> Any:
    """``@f(q, k, v[, mask]) = attention(...)``; q, k, v (and a bias) are parameters."""
    b = rlx.Builder("f")
    operands = [b.param(n, s) for n, s in case.shapes().items()]
    if mask is not None:
        declare = b.param if case.mask == "bias" else b.input
        operands.append(declare("mask", mask.shape, _dtype(mask)))
    b.ret(b.attention(*operands, **case.all_attrs))
    return b.module


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_check_grads(case: Case) -> None:
    mask = make_mask(case, np.random.default_rng(1), np.float32)
    given = {"mask": mask} if mask is not None and case.mask != "bias" else None
    report = check_grads(forward_module(case, mask), args=given)
    expected = ["q", "k", "v"] + (["mask"] if case.mask == "bias" else [])
    assert [a.name for a in report.args] == expected
    assert report.ok, str(report)


def grads_of(case: Case, mask: np.ndarray | None, rng: np.random.Generator,
             ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Run ``@f_grad`` on random f64 inputs: ``({name: gradient}, dy)``."""
    module = forward_module(case, mask)
    rlx.grad_with_loss(module, "f")
    arrays = {n: rng.standard_normal(s) for n, s in case.shapes().items()}
    dy = rng.standard_normal(arrays["q"].shape)
    f64 = promote_to_f64(module)
    extra = [] if mask is None else [mask]
    outs = rlx.interpret(f64, *arrays.values(), *extra, dy, entry="f_grad")
    return dict(zip(["q", "k", "v", "mask"], outs[1:], strict=False)), dy


def test_fully_masked_rows_get_zero_gradient(rng: np.random.Generator) -> None:
    """Causal with S > S_kv: queries 0, 1 see no key, query 2 sees key 0 only.

    Neither kind of row moves its query (a one-key softmax is constant); the dy of the
    fully masked rows reaches no value, the dy of query 2 reaches value 0 in full.
    """
    case = Case("rows", 1, 5, 3, 2, 2, attrs=CAUSAL)
    grads, dy = grads_of(case, None, rng)
    assert np.all(grads["q"][:, :3] == 0)
    assert np.all(np.abs(grads["q"][:, 3:]) > 0)
    dy_tail = dy.copy()
    dy_tail[:, :2] = 0
    np.testing.assert_allclose(grads["v"].sum(axis=1), dy_tail.sum(axis=1), rtol=1e-12)


def test_all_padding_batch_gets_zero_gradient(rng: np.random.Generator) -> None:
    case = Case("pad", 2, 3, 4, 2, 1, attrs=CUSTOM, mask="all_pad")
    mask = make_mask(case, rng, np.float64)
    grads, _ = grads_of(case, mask, rng)
    for name in "qkv":
        assert np.all(grads[name][-1] == 0), name
    dropped = ~mask[0]
    assert np.all(grads["k"][0, dropped] == 0) and np.all(grads["v"][0, dropped] == 0)
    assert np.all(np.abs(grads["v"][0, ~dropped]) > 0)


def test_window0_attends_one_key(rng: np.random.Generator) -> None:
    """Window 0: P is one-hot, so dq = dk = 0 and dv is dy at the attended key."""
    case = Case("w0", 1, 4, 6, 2, 2, attrs={"mask_kind": "sliding_window", "window": 0})
    grads, dy = grads_of(case, None, rng)
    assert np.all(grads["q"] == 0) and np.all(grads["k"] == 0)
    np.testing.assert_allclose(grads["v"][:, 2:], dy, rtol=1e-15)
    assert np.all(grads["v"][:, :2] == 0)


def test_custom_mask_gets_no_gradient() -> None:
    case = Case("c", 1, 2, 3, 2, 2, attrs=CUSTOM)
    b = rlx.Builder("f")
    q, k, v = (b.param(n, s) for n, s in case.shapes().items())
    mask = b.param("mask", (1, 3))
    b.ret(b.attention(q, k, v, mask, **case.all_attrs))
    with pytest.raises(RlxError, match="no gradient reaches 'mask'"):
        rlx.grad_with_loss(b.module, "f", wrt=["q", "mask"])


# ---------------------------------------------------------------- torch reference


def torch_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, S, H*D] -> [B, H, S, D]."""
    b, s, w = x.shape
    return x.view(b, s, heads, w // heads).transpose(1, 2)


def torch_keep(case: Case, mask: np.ndarray | None) -> torch.Tensor:
    """Keep-matrix broadcastable to [B, H, S, S_kv], written with torch.tril."""
    kind = case.attrs.get("mask_kind", "none")
    s, skv = case.q_len, case.kv_len
    ones = torch.ones(s, skv, dtype=torch.bool)
    if kind == "custom":
        keys = torch.from_numpy(mask if mask.dtype == np.bool_ else mask >= 0.5)
        return keys[:, None, None, :]
    if kind == "causal":
        return ones.tril(diagonal=skv - s)
    if kind == "sliding_window":
        too_old = ones.tril(diagonal=skv - s - case.attrs["window"] - 1)
        return ones.tril(diagonal=skv - s) & ~too_old
    return ones


def f32_attr(value: float) -> float:
    """An f32 attribute's value as the interpreter reads it."""
    return float(np.float32(value))


def torch_attention(case: Case, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    mask: np.ndarray | None, bias: torch.Tensor | None) -> torch.Tensor:
    """Softmax attention spelled out; fully masked rows give zeros."""
    group = case.heads // case.kv_heads
    qh = torch_heads(q, case.heads)
    kh = torch_heads(k, case.kv_heads).repeat_interleave(group, dim=1)
    vh = torch_heads(v, case.kv_heads).repeat_interleave(group, dim=1)
    scale = (f32_attr(case.attrs["score_scale"]) if "score_scale" in case.attrs
             else 1 / math.sqrt(case.head_dim))
    s = (qh @ kh.transpose(-1, -2)) * scale
    if "softcap" in case.attrs:
        cap = f32_attr(case.attrs["softcap"])
        s = cap * torch.tanh(s / cap)
    if bias is not None:
        s = s + bias
    s = s.masked_fill(~torch_keep(case, mask), float("-inf"))
    row_max = s.amax(-1, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    w = torch.exp(s - row_max)
    total = w.sum(-1, keepdim=True)
    p = w / torch.where(total > 0, total, torch.ones_like(total))
    out = p @ vh
    return out.transpose(1, 2).reshape(q.shape)


def torch_grads(case: Case, arrays: dict[str, np.ndarray], mask: np.ndarray | None,
                dy: np.ndarray) -> dict[str, np.ndarray]:
    leaves = {n: torch.from_numpy(a.copy()).requires_grad_() for n, a in arrays.items()}
    bias = None
    if case.mask == "bias":
        bias = leaves["bias"] = torch.from_numpy(mask.copy()).requires_grad_()
    out = torch_attention(case, leaves["q"], leaves["k"], leaves["v"], mask, bias)
    out.backward(torch.from_numpy(dy))
    return {n: t.grad.numpy() for n, t in leaves.items()}


def run_backward_op(case: Case, wrt: str, arrays: dict[str, np.ndarray],
                    mask: np.ndarray | None, dy: np.ndarray) -> np.ndarray:
    """Build one ``rlx.attention_backward`` and run the interpreter."""
    b = rlx.Builder("f")
    named = {**arrays, "dy": dy} | ({} if mask is None else {"mask": mask})
    values = {n: b.input(n, a.shape, _dtype(a)) for n, a in named.items()}
    b.ret(b.attention_backward(*values.values(), **case.all_attrs, wrt=wrt))
    return rlx.interpret(b.module, *named.values())[0]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES.values()))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_backward_op_matches_torch(case: Case, dtype: type) -> None:
    rng = np.random.default_rng(2)
    arrays = {n: rng.standard_normal(s).astype(dtype) for n, s in case.shapes().items()}
    mask = make_mask(case, rng, dtype)
    dy = rng.standard_normal(arrays["q"].shape).astype(dtype)
    expected = torch_grads(case, arrays, mask, dy)
    for wrt, want in expected.items():
        got = run_backward_op(case, wrt, arrays, mask, dy)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, err_msg=f"d{wrt}", **TOL[dtype])
