"""Differential tests against PyTorch: rlx.nn.attention with every mask kind, grouped-query
heads, softcap and score_scale, S != S_kv both ways, and sequence lengths around the
native lowering's causal row blocks (a causal head of S >= 256 rows is cut into row blocks,
dialects/attention.py ``row_blocks``); forward and gradients w.r.t. q, k, v (and a bias),
native and interpreter (helpers in test_differential_torch.py).

The reference is a manual float64 torch implementation of SPEC 2.1.14 / the dialect:
causal masks align the LAST query with the LAST key (``ki <= (S_kv - S) + qi``), where
``F.scaled_dot_product_attention(is_causal=True)`` aligns the first with the first
(they agree when S == S_kv, checked against SDPA below); a query row whose every key is
masked outputs zeros (SDPA gives NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_differential_torch import Diff, randn

import rlx_mlir as rlx


@dataclass(frozen=True)
class Att:
    b: int
    s: int
    skv: int
    hq: int
    hkv: int
    d: int
    kind: str = "none"
    window: int | None = None
    scale: float | None = None
    softcap: float | None = None
    mask: str | None = None          # "bool", "float" (custom) or "bias"
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        opt = "".join(f" {k}={v}" for k, v in [("w", self.window), ("scale", self.scale),
                                                ("cap", self.softcap), ("mask", self.mask)]
                      if v is not None)
        return (f"{self.kind} B{self.b} S{self.s} Skv{self.skv} H{self.hq}/{self.hkv} "
                f"D{self.d}{opt}")

    def arrays(self, rng) -> list[np.ndarray]:
        q = randn(rng, self.b, self.s, self.hq * self.d)
        k = randn(rng, self.b, self.skv, self.hkv * self.d)
        v = randn(rng, self.b, self.skv, self.hkv * self.d)
        if self.mask is None:
            return [q, k, v]
        if self.mask == "bias":
            bias = randn(rng, self.b, self.hq, self.s, self.skv)
            bias[rng.random(bias.shape) < 0.15] = -np.inf
            bias[..., 0] = 0.5          # no row fully -inf
            return [q, k, v, bias]
        keep = rng.random((self.b, self.skv)) < 0.6
        keep[:, 0] = True
        keep[-1, -1] = False
        if self.mask == "bool":
            return [q, k, v, keep]
        return [q, k, v, np.where(keep, rng.uniform(0.5, 2.0, keep.shape),
                                  rng.uniform(-1.0, 0.49, keep.shape)).astype(np.float32)]

    def rlx(self, q, k, v, mask=None):
        return rlx.nn.attention(q, k, v, self.hq, mask=mask, mask_kind=self.kind,
                                num_kv_heads=self.hkv, window=self.window,
                                score_scale=self.scale, softcap=self.softcap)

    def torch(self, q, k, v, mask=None):
        b, s, skv, hq, hkv, d = self.b, self.s, self.skv, self.hq, self.hkv, self.d
        qh = q.reshape(b, s, hq, d).transpose(1, 2)
        kh = k.reshape(b, skv, hkv, d).transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
        vh = v.reshape(b, skv, hkv, d).transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
        scores = (self.scale if self.scale is not None else 1 / math.sqrt(d)) * qh @ kh.mT
        if self.softcap is not None:
            scores = self.softcap * torch.tanh(scores / self.softcap)
        keep = torch.ones(b, hq, s, skv, dtype=torch.bool)
        qi = torch.arange(s)[:, None] + (skv - s)
        ki = torch.arange(skv)[None, :]
        if self.kind in ("causal", "sliding_window"):
            keep &= ki <= qi
        if self.kind == "sliding_window":
            keep &= ki >= qi - self.window
        if self.kind == "custom":
            keep &= (mask if mask.dtype == torch.bool else mask >= 0.5)[:, None, None, :]
        if self.kind == "bias":
            scores = scores + mask
        any_kept = keep.any(-1, keepdim=True)
        scores = torch.where(keep, scores, -torch.inf)
        scores = torch.where(any_kept, scores, 0.0)       # a fully masked row: zeros
        p = torch.softmax(scores, -1) * keep
        return (p @ vh).transpose(1, 2).reshape(b, s, hq * d)


def check_group(cases: list[Att], seed: int, interpret: bool = True) -> None:
    rng = np.random.default_rng(seed)
    arrays = [c.arrays(rng) for c in cases]
    counts = [len(a) for a in arrays]
    flat = [x for a in arrays for x in a]
    wrt = [i for i, x in enumerate(flat) if x.dtype == np.float32
           and not (i - sum(counts[:_case_of(counts, i)]) == 3
                    and cases[_case_of(counts, i)].mask != "bias")]

    def run(lib):
        def fn(*xs):
            outs, i = [], 0
            for c, n in zip(cases, counts, strict=True):
                outs.append(getattr(c, lib)(*xs[i:i + n]))
                i += n
            return tuple(outs)
        return fn

    Diff(run("rlx"), run("torch"), flat, wrt=wrt, names=[str(c) for c in cases],
         interpret=interpret, rtol=2e-4, atol=2e-5).check()


def _case_of(counts: list[int], i: int) -> int:
    total = 0
    for j, n in enumerate(counts):
        total += n
        if i < total:
            return j
    raise IndexError(i)


GROUPS = {
    "mask_kinds": [
        Att(2, 5, 7, 2, 2, 4),                                          # none, S < S_kv
        Att(1, 7, 3, 4, 2, 3),                                          # none, S > S_kv, GQA
        Att(2, 6, 6, 4, 1, 5, "causal"),                                # MQA
        Att(1, 3, 9, 2, 1, 4, "causal"),                                # cached decode rows
        Att(2, 6, 4, 2, 2, 3, "causal"),                                # first rows see nothing
        Att(1, 1, 13, 4, 2, 8, "causal"),                               # one-token decode
        Att(1, 7, 7, 2, 2, 4, "sliding_window", window=0),              # the diagonal only
        Att(2, 9, 9, 4, 2, 4, "sliding_window", window=3),
        Att(1, 5, 11, 2, 1, 4, "sliding_window", window=2),             # S < S_kv
    ],
    "masks_with_operands": [
        Att(2, 5, 9, 4, 2, 4, "custom", mask="bool"),
        Att(2, 6, 6, 2, 1, 3, "custom", mask="float"),
        Att(2, 4, 7, 4, 2, 4, "bias", mask="bias"),
        Att(1, 6, 6, 2, 2, 5, "causal", softcap=1.5),
        Att(1, 5, 8, 4, 1, 4, "bias", scale=0.7, softcap=2.5, mask="bias"),
        Att(2, 7, 7, 2, 2, 4, "sliding_window", window=2, softcap=0.8, scale=1.9),
        Att(1, 4, 6, 2, 2, 3, "none", scale=0.05),
    ],
    # S around 128 (one block) and >= 256 (causal row blocks), not multiples of 8 / 16
    "long_causal_a": [Att(1, s, s, 2, 1, 8, "causal") for s in (127, 128, 129, 200)],
    "long_causal_b": [Att(1, 255, 255, 2, 1, 8, "causal"), Att(1, 256, 256, 2, 2, 4, "causal"),
                      Att(1, 264, 264, 4, 2, 4, "causal")],
    "long_causal_c": [Att(1, 256, 300, 2, 1, 8, "causal"),      # S < S_kv, blocked
                      Att(1, 264, 200, 2, 1, 8, "causal"),      # S > S_kv: first rows see nothing
                      Att(1, 263, 263, 2, 2, 4, "causal", softcap=3.0, scale=0.3)],
    "long_other_masks": [Att(1, 264, 264, 2, 1, 8, "sliding_window", window=37),
                         Att(1, 257, 131, 2, 2, 4, "custom", mask="bool"),
                         Att(1, 200, 264, 2, 1, 8)],
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_attention_against_torch(group):
    check_group(GROUPS[group], seed=len(group))


def test_causal_square_matches_torch_sdpa():
    """S == S_kv causal and no-mask attention against F.scaled_dot_product_attention
    (GQA through ``enable_gqa``)."""
    rng = np.random.default_rng(40)
    b, s, hq, hkv, d = 2, 129, 4, 2, 8
    q, k, v = randn(rng, b, s, hq * d), randn(rng, b, s, hkv * d), randn(rng, b, s, hkv * d)

    def tf(q, k, v):
        heads = [t.reshape(b, s, -1, d).transpose(1, 2) for t in (q, k, v)]
        outs = [F.scaled_dot_product_attention(*heads, is_causal=causal, enable_gqa=True)
                for causal in (True, False)]
        return tuple(o.transpose(1, 2).reshape(b, s, hq * d) for o in outs)

    def rf(q, k, v):
        return tuple(rlx.nn.attention(q, k, v, hq, mask_kind=kind, num_kv_heads=hkv)
                     for kind in ("causal", "none"))

    Diff(rf, tf, [q, k, v], wrt=(0, 1, 2), rtol=2e-4, atol=2e-5, separate=True).check()


def test_fully_masked_rows_output_zero_and_get_no_gradient():
    """Causal with S > S_kv and a custom mask of all pads: such rows are 0 (SPEC), and
    the gradient through them is 0 (not NaN)."""
    check_group([Att(1, 5, 2, 2, 1, 4, "causal"), Att(2, 3, 4, 2, 2, 2, "custom", mask="bool")],
                seed=41)
    q, k, v = (np.ones((1, 3, 4), np.float32),) * 3
    pad = np.zeros((1, 3), bool)
    out = rlx.jit(lambda q, k, v, m: rlx.nn.attention(q, k, v, 2, m, "custom"))(q, k, v, pad)
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("kwargs,shapes", [
    ({"num_heads": 3}, ((1, 4, 8), (1, 4, 8), (1, 4, 8))),            # 3 does not divide 8
    ({"num_heads": 4, "num_kv_heads": 3}, ((1, 4, 8), (1, 4, 6), (1, 4, 6))),
    ({"num_heads": 2}, ((1, 4, 8), (1, 5, 8), (1, 4, 8))),             # k, v lengths differ
    ({"num_heads": 2, "mask_kind": "sliding_window"}, ((1, 4, 8),) * 3),   # no window
    ({"num_heads": 2, "mask_kind": "custom"}, ((1, 4, 8),) * 3),           # no mask operand
    ({"num_heads": 2, "mask_kind": "causal", "window": 2}, ((1, 4, 8),) * 3),
    ({"num_heads": 2, "softcap": -1.0}, ((1, 4, 8),) * 3),
    ({"num_heads": 2, "mask_kind": "diagonal"}, ((1, 4, 8),) * 3),
])
def test_invalid_attention_arguments_are_rlx_errors(kwargs, shapes):
    arrays = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(rlx.RlxError):
        rlx.jit(lambda q, k, v: rlx.nn.attention(q, k, v, **kwargs))(*arrays)


def test_wrong_mask_shape_is_an_rlx_error():
    q = np.ones((2, 4, 8), np.float32)
    for kind, mask in [("custom", np.ones((2, 5), bool)), ("bias", np.ones((2, 2, 4), np.float32))]:
        with pytest.raises(rlx.RlxError):
            rlx.jit(lambda q, k, v, m, kind=kind: rlx.nn.attention(q, k, v, 2, m, kind))(
                q, q, q, mask)
