"""The JAX peer: ``jax.jit`` of the GEMM or of ``jax.value_and_grad`` of the loss (CPU, f32).

Every timed call ends with ``block_until_ready`` (JAX dispatches asynchronously).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from common import param_shapes


def prepare(workload: str, case: Any, inputs: dict[str, np.ndarray]) -> Callable[[], list]:
    """A zero-argument callable running one GEMM or one training step."""
    if workload == "gemm":
        a, b = jnp.asarray(inputs["a"]), jnp.asarray(inputs["b"])
        fn = jax.jit(jnp.matmul)
        return lambda: [fn(a, b).block_until_ready()]
    warm_up()
    loss_fn = {"mlp": mlp_loss, "transformer": transformer_loss, "llama": llama_loss}[workload]
    names = list(param_shapes(workload, case))
    data = {k: jnp.asarray(v) for k, v in inputs.items() if k not in names}
    params = {k: jnp.asarray(inputs[k]) for k in names}
    step = jax.jit(jax.value_and_grad(lambda p, d: loss_fn(d, p, case)))

    def run() -> list:
        loss, grads = jax.block_until_ready(step(params, data))
        return [loss, *(grads[k] for k in names)]

    return run


def warm_up() -> None:
    """Compile and run a tiny ``value_and_grad``: XLA's one-time start-up in this process
    falls here, not in the model's first call (whose extra time is its compile time;
    the rlx compile cell warms up the same way)."""
    x = jnp.ones((4, 8), jnp.float32)
    jax.block_until_ready(jax.jit(jax.value_and_grad(lambda w: jnp.sum(jnp.tanh(x @ w))))(
        jnp.ones((8, 2), jnp.float32)))


def to_numpy(outputs: list) -> list[np.ndarray]:
    return [np.asarray(t) for t in outputs]


def library_info() -> dict[str, Any]:
    return {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()]}


# ---------------------------------------------------------------- models


def mlp_loss(d: dict, p: dict, dims: dict) -> jax.Array:
    h, layers = d["x"], len(dims["sizes"]) - 1
    for i in range(layers):
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        if i < layers - 1:
            h = jax.nn.relu(h)
    logp = jax.nn.log_softmax(h, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, d["labels"][:, None], axis=1))


def _layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def _heads(t, heads):
    b, s, w = t.shape
    return t.reshape(b, s, heads, w // heads).transpose(0, 2, 1, 3)


def _merge(t):
    b, h, s, d = t.shape
    return t.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def _attention(q, k, v, kv_heads):
    """Causal GQA attention on ``[B, H, S, D]`` queries, ``[B, Hkv, S, D]`` keys/values."""
    b, h, s, d = q.shape
    qg = q.reshape(b, kv_heads, h // kv_heads, s, d)
    scores = jnp.einsum("bkgqd,bksd->bkgqs", qg, k) / math.sqrt(d)
    mask = jnp.tril(jnp.ones((s, s), bool))
    probs = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
    return jnp.einsum("bkgqs,bksd->bkgqd", probs, v).reshape(b, h, s, d)


def transformer_loss(d: dict, p: dict, dims: dict) -> jax.Array:
    x, heads = d["x"], dims["heads"]
    h = _layer_norm(x, p["ln1_g"], p["ln1_b"])
    q, k, v = (_heads(h @ p[f"w{n}"], heads) for n in "qkv")
    x = x + _merge(_attention(q, k, v, heads)) @ p["wo"]
    h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
    y = x + jax.nn.gelu(h @ p["w1"] + p["b1"], approximate=False) @ p["w2"] + p["b2"]
    return jnp.mean(y * y)


def _rope(t, cos, sin, heads):
    b, s, w = t.shape
    th = t.reshape(b, s, heads, w // heads)
    half = th.shape[-1] // 2
    x1, x2 = th[..., :half], th[..., half:]
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    return jnp.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], -1).reshape(b, s, w)


def _rms(t, g):
    return t * jax.lax.rsqrt((t * t).mean(-1, keepdims=True) + 1e-6) * g


def llama_loss(d: dict, p: dict, dims: dict) -> jax.Array:
    x, cos, sin = d["x"], d["cos"], d["sin"]
    heads, kv = dims["heads"], dims["kv_heads"]
    h = _rms(x, p["norm1"])
    q = _heads(_rope(h @ p["wq"], cos, sin, heads), heads)
    k = _heads(_rope(h @ p["wk"], cos, sin, kv), kv)
    v = _heads(h @ p["wv"], kv)
    x = x + _merge(_attention(q, k, v, kv)) @ p["wo"]
    h = _rms(x, p["norm2"])
    y = x + (jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
    return jnp.mean(y * y)
