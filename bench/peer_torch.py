"""The PyTorch peers: eager (``torch``) and ``torch.compile`` (inductor, default mode).

A training step is ``loss = f(...)`` then ``torch.autograd.grad(loss, params)`` (no
gradient accumulation, no optimizer); under torch.compile the forward is compiled and
AOTAutograd compiles the backward graph.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from common import param_shapes


def configure(threads: int) -> None:
    """Intra-op threads (env vars were set before import; this is the explicit knob)."""
    torch.set_num_threads(threads)


def prepare(workload: str, case: Any, inputs: dict[str, np.ndarray],
            compiled: bool) -> Callable[[], list]:
    """A zero-argument callable running one GEMM or one training step."""
    if workload == "gemm":
        a, b = (torch.from_numpy(inputs[n]) for n in ("a", "b"))
        fn = torch.compile(_matmul) if compiled else _matmul
        return lambda: [fn(a, b)]
    loss_fn = {"mlp": mlp_loss, "transformer": transformer_loss, "llama": llama_loss}[workload]
    if compiled:
        loss_fn = torch.compile(loss_fn)
    names = list(param_shapes(workload, case))
    data = {k: torch.from_numpy(v) for k, v in inputs.items() if k not in names}
    if "labels" in data:
        data["labels"] = data["labels"].long()
    params = {k: torch.from_numpy(inputs[k].copy()).requires_grad_() for k in names}
    ordered = [params[k] for k in names]

    def step() -> list:
        loss = loss_fn(data, params, case)
        return [loss.detach(), *torch.autograd.grad(loss, ordered)]

    return step


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def to_numpy(outputs: list) -> list[np.ndarray]:
    return [t.detach().numpy() for t in outputs]


def library_info() -> dict[str, Any]:
    return {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default")}


# ---------------------------------------------------------------- models


def mlp_loss(d: dict, p: dict, dims: dict) -> torch.Tensor:
    h, layers = d["x"], len(dims["sizes"]) - 1
    for i in range(layers):
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        if i < layers - 1:
            h = torch.relu(h)
    return F.cross_entropy(h, d["labels"])


def _heads(t: torch.Tensor, heads: int) -> torch.Tensor:
    b, s, w = t.shape
    return t.reshape(b, s, heads, w // heads).transpose(1, 2)


def _merge(t: torch.Tensor) -> torch.Tensor:
    b, h, s, d = t.shape
    return t.transpose(1, 2).reshape(b, s, h * d)


def transformer_loss(d: dict, p: dict, dims: dict) -> torch.Tensor:
    x, heads = d["x"], dims["heads"]
    width = x.shape[-1]
    h = F.layer_norm(x, (width,), p["ln1_g"], p["ln1_b"], eps=1e-5)
    q, k, v = (_heads(h @ p[f"w{n}"], heads) for n in "qkv")
    x = x + _merge(F.scaled_dot_product_attention(q, k, v, is_causal=True)) @ p["wo"]
    h = F.layer_norm(x, (width,), p["ln2_g"], p["ln2_b"], eps=1e-5)
    y = x + F.gelu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return (y * y).mean()


def _rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: int) -> torch.Tensor:
    b, s, w = t.shape
    th = t.reshape(b, s, heads, w // heads)
    half = th.shape[-1] // 2
    x1, x2 = th[..., :half], th[..., half:]
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], -1).reshape(b, s, w)


def _rms(t: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + 1e-6) * g


def llama_loss(d: dict, p: dict, dims: dict) -> torch.Tensor:
    x, cos, sin = d["x"], d["cos"], d["sin"]
    heads, kv = dims["heads"], dims["kv_heads"]
    h = _rms(x, p["norm1"])
    q = _heads(_rope(h @ p["wq"], cos, sin, heads), heads)
    k = _heads(_rope(h @ p["wk"], cos, sin, kv), kv)
    v = _heads(h @ p["wv"], kv)
    rep = heads // kv
    a = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1),
                                       v.repeat_interleave(rep, 1), is_causal=True)
    x = x + _merge(a) @ p["wo"]
    h = _rms(x, p["norm2"])
    y = x + (F.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
    return (y * y).mean()
