"""The numpy peer: hand-written forward and backward passes (float32, BLAS matmuls).

Each ``*_step`` returns ``[loss, *grads]`` with the gradients in ``param_shapes`` order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from scipy.special import erf as _erf

    ERF_SOURCE = "scipy.special.erf"
except ImportError:  # pragma: no cover - scipy comes with jax (the bench extra)
    _erf = np.vectorize(math.erf, otypes=[np.float32])
    ERF_SOURCE = "math.erf (vectorized)"

F32 = np.float32


def prepare(workload: str, case: Any, inputs: dict[str, np.ndarray]) -> Callable[[], list]:
    """A zero-argument callable running one GEMM or one training step."""
    if workload == "gemm":
        a, b = inputs["a"], inputs["b"]
        return lambda: [a @ b]
    step = {"mlp": mlp_step, "transformer": transformer_step, "llama": llama_step}[workload]
    return lambda: step(inputs, case)


# ---------------------------------------------------------------- MLP


def mlp_step(p: dict[str, np.ndarray], dims: dict[str, Any]) -> list[np.ndarray]:
    """Mean softmax cross-entropy of a ReLU MLP and its parameter gradients."""
    layers = len(dims["sizes"]) - 1
    acts, h = [], p["x"]
    for i in range(layers):
        acts.append(h)
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        if i < layers - 1:
            h = np.maximum(h, 0)
    dz, loss = _cross_entropy(h, p["labels"])
    grads: list[np.ndarray] = []
    for i in reversed(range(layers)):
        grads[:0] = [acts[i].T @ dz, dz.sum(0)]
        if i:
            dz = (dz @ p[f"w{i}"].T) * (acts[i] > 0)
    return [np.asarray(loss, F32), *grads]


def _cross_entropy(logits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, float]:
    """(d loss / d logits, mean loss) of the softmax cross-entropy."""
    rows = np.arange(len(labels))
    shifted = logits - logits.max(1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0]) - shifted[rows, labels]))
    grad = exp / total
    grad[rows, labels] -= 1
    return grad / F32(len(labels)), loss


# ---------------------------------------------------------------- shared pieces


def _matmul_grads(x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dw) of ``y = x @ w`` for ``x [..., K]`` and ``w [K, N]``."""
    dw = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
    return dy @ w.T, dw


def _split_heads(t: np.ndarray, heads: int) -> np.ndarray:
    b, s, w = t.shape
    return t.reshape(b, s, heads, w // heads).transpose(0, 2, 1, 3)


def _merge_heads(t: np.ndarray) -> np.ndarray:
    b, h, s, d = t.shape
    return t.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Causal attention on ``[B, Hkv, G, S, D]`` queries and ``[B, Hkv, 1, S, D]`` keys."""
    scale = F32(1.0 / math.sqrt(q.shape[-1]))
    scores = (q @ k.swapaxes(-1, -2)) * scale
    seq = scores.shape[-1]
    scores += np.triu(np.full((seq, seq), -np.inf, F32), 1)
    scores -= scores.max(-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(-1, keepdims=True)
    return probs @ v, probs


def _attention_backward(q, k, v, probs, do):
    """(dq, dk, dv) of ``_attention``; key/value gradients summed over the query groups."""
    scale = F32(1.0 / math.sqrt(q.shape[-1]))
    dv = (probs.swapaxes(-1, -2) @ do).sum(2, keepdims=True)
    dp = do @ v.swapaxes(-1, -2)
    ds = probs * (dp - (dp * probs).sum(-1, keepdims=True)) * scale
    dq = ds @ k
    dk = (ds.swapaxes(-1, -2) @ q).sum(2, keepdims=True)
    return dq, dk, dv


def _grouped(t: np.ndarray, kv_heads: int) -> np.ndarray:
    """``[B, H, S, D]`` -> ``[B, Hkv, H/Hkv, S, D]`` (query head h uses kv head h // G)."""
    b, h, s, d = t.shape
    return t.reshape(b, kv_heads, h // kv_heads, s, d)


def _ungrouped(t: np.ndarray) -> np.ndarray:
    b, kv, g, s, d = t.shape
    return t.reshape(b, kv * g, s, d)


def _attention_block(q2, k2, v2, heads, kv_heads):
    """Multi-head attention from ``[B, S, W]`` projections; returns output and a tape."""
    q = _grouped(_split_heads(q2, heads), kv_heads)
    k = _grouped(_split_heads(k2, kv_heads), kv_heads)
    v = _grouped(_split_heads(v2, kv_heads), kv_heads)
    out, probs = _attention(q, k, v)
    return _merge_heads(_ungrouped(out)), (q, k, v, probs, heads, kv_heads)


def _attention_block_backward(tape, d_attn):
    """(dq2, dk2, dv2) in ``[B, S, W]`` layout."""
    q, k, v, probs, heads, kv_heads = tape
    do = _grouped(_split_heads(d_attn, heads), kv_heads)
    dq, dk, dv = _attention_backward(q, k, v, probs, do)
    return _merge_heads(_ungrouped(dq)), _merge_heads(_ungrouped(dk)), _merge_heads(
        _ungrouped(dv))


# ---------------------------------------------------------------- transformer block


def _layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    inv = 1.0 / np.sqrt((centered * centered).mean(-1, keepdims=True) + F32(eps))
    xhat = centered * inv
    return xhat * g + b, (xhat, inv, g)


def _layer_norm_backward(tape, dy, need_dx=True):
    """(dx or None, dgamma, dbeta)."""
    xhat, inv, g = tape
    dg, db = _sum_rows(dy * xhat), _sum_rows(dy)
    if not need_dx:
        return None, dg, db
    dxhat = dy * g
    dx = inv * (dxhat - dxhat.mean(-1, keepdims=True)
                - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dg, db


def _sum_rows(t: np.ndarray) -> np.ndarray:
    return t.reshape(-1, t.shape[-1]).sum(0)


def _gelu(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact GELU and its derivative ``Phi(u) + u phi(u)``."""
    cdf = F32(0.5) * (F32(1) + _erf(u * F32(1 / math.sqrt(2))).astype(F32))
    pdf = np.exp(F32(-0.5) * u * u) * F32(1 / math.sqrt(2 * math.pi))
    return u * cdf, cdf + u * pdf


def transformer_step(p: dict[str, np.ndarray], dims: dict[str, Any]) -> list[np.ndarray]:
    """mean(block(x)^2) of the pre-norm GELU transformer block and its parameter grads."""
    heads, x = dims["heads"], p["x"]
    h1, ln1 = _layer_norm(x, p["ln1_g"], p["ln1_b"])
    attn, tape = _attention_block(h1 @ p["wq"], h1 @ p["wk"], h1 @ p["wv"], heads, heads)
    x1 = x + attn @ p["wo"]
    h2, ln2 = _layer_norm(x1, p["ln2_g"], p["ln2_b"])
    u = h2 @ p["w1"] + p["b1"]
    act, dact = _gelu(u)
    y = x1 + act @ p["w2"] + p["b2"]
    loss = np.mean(y * y, dtype=np.float64)
    dy = y * F32(2.0 / y.size)
    d_act, dw2 = _matmul_grads(act, p["w2"], dy)
    du = d_act * dact
    dh2, dw1 = _matmul_grads(h2, p["w1"], du)
    dx1_ln, dg2, db2_ln = _layer_norm_backward(ln2, dh2)
    dx1 = dy + dx1_ln
    d_attn, dwo = _matmul_grads(attn, p["wo"], dx1)
    dq, dk, dv = _attention_block_backward(tape, d_attn)
    dh1 = np.zeros_like(h1)
    grads_qkv = []
    for name, dproj in (("wq", dq), ("wk", dk), ("wv", dv)):
        dh, dw = _matmul_grads(h1, p[name], dproj)
        dh1 += dh
        grads_qkv.append(dw)
    _, dg1, db1_ln = _layer_norm_backward(ln1, dh1, need_dx=False)
    return [np.asarray(loss, F32), dg1, db1_ln, *grads_qkv, dwo, dg2, db2_ln, dw1,
            _sum_rows(du), dw2, _sum_rows(dy)]


# ---------------------------------------------------------------- LLaMA block


def _rms_norm(x, g, eps=1e-6):
    inv = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + F32(eps))
    return x * inv * g, (x, inv, g)


def _rms_norm_backward(tape, dy, need_dx=True):
    x, inv, g = tape
    dg = _sum_rows(dy * x * inv)
    if not need_dx:
        return None, dg
    dn = dy * g
    return inv * dn - x * (inv ** 3) * (dn * x).mean(-1, keepdims=True), dg


def _rope(t: np.ndarray, cos: np.ndarray, sin: np.ndarray, heads: int) -> np.ndarray:
    """Rotate-half RoPE on ``[B, S, heads*hd]``; ``sin -> -sin`` is its transpose."""
    b, s, w = t.shape
    th = t.reshape(b, s, heads, w // heads)
    half = th.shape[-1] // 2
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    x1, x2 = th[..., :half], th[..., half:]
    return np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], -1).reshape(b, s, w)


def llama_step(p: dict[str, np.ndarray], dims: dict[str, Any]) -> list[np.ndarray]:
    """mean(block(x)^2) of the LLaMA-style block and its parameter gradients."""
    heads, kv, x, cos, sin = dims["heads"], dims["kv_heads"], p["x"], p["cos"], p["sin"]
    h1, n1 = _rms_norm(x, p["norm1"])
    q = _rope(h1 @ p["wq"], cos, sin, heads)
    k = _rope(h1 @ p["wk"], cos, sin, kv)
    attn, tape = _attention_block(q, k, h1 @ p["wv"], heads, kv)
    x1 = x + attn @ p["wo"]
    h2, n2 = _rms_norm(x1, p["norm2"])
    gate, up = h2 @ p["w_gate"], h2 @ p["w_up"]
    sig = 1.0 / (1.0 + np.exp(-gate))
    silu = gate * sig
    gated = silu * up
    y = x1 + gated @ p["w_down"]
    loss = np.mean(y * y, dtype=np.float64)
    dy = y * F32(2.0 / y.size)
    d_gated, dw_down = _matmul_grads(gated, p["w_down"], dy)
    d_gate = d_gated * up * sig * (1.0 + gate * (1.0 - sig))
    dh2, dw_gate = _matmul_grads(h2, p["w_gate"], d_gate)
    dh2_up, dw_up = _matmul_grads(h2, p["w_up"], d_gated * silu)
    dx1_n, dnorm2 = _rms_norm_backward(n2, dh2 + dh2_up)
    dx1 = dy + dx1_n
    d_attn, dwo = _matmul_grads(attn, p["wo"], dx1)
    dq, dk, dv = _attention_block_backward(tape, d_attn)
    dq, dk = _rope(dq, cos, -sin, heads), _rope(dk, cos, -sin, kv)
    dh1 = np.zeros_like(h1)
    grads_qkv = []
    for name, dproj in (("wq", dq), ("wk", dk), ("wv", dv)):
        dh, dw = _matmul_grads(h1, p[name], dproj)
        dh1 += dh
        grads_qkv.append(dw)
    _, dnorm1 = _rms_norm_backward(n1, dh1, need_dx=False)
    return [np.asarray(loss, F32), dnorm1, *grads_qkv, dwo, dnorm2, dw_gate, dw_up, dw_down]


def to_numpy(outputs: list) -> list[np.ndarray]:
    return outputs


def library_info() -> dict[str, Any]:
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return {"numpy": np.__version__, "blas": f"{blas.get('name')} {blas.get('version')}",
            "erf": ERF_SOURCE}
