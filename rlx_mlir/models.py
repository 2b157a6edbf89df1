"""Reference models written with the builder: used by the demo, tests and benchmarks.

>>> m = mlp_loss(batch=8, sizes=(16, 32, 4))
>>> [f.sym_name.data for f in m.body.block.ops]
['mlp_loss']
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from rlx_mlir.builder import Builder, Tensor


def mlp_loss(batch: int = 256, sizes: Sequence[int] = (784, 512, 512, 10),
             name: str = "mlp_loss") -> ModuleOp:
    """Mean softmax cross-entropy of a ReLU MLP: params ``w0, b0, w1, b1, ...``."""
    b = Builder(name)
    h = b.input("x", (batch, sizes[0]))
    labels = b.input("labels", (batch,), "i32")
    layers = list(zip(sizes[:-1], sizes[1:], strict=True))
    for i, (fan_in, fan_out) in enumerate(layers):
        h = h @ b.param(f"w{i}", (fan_in, fan_out)) + b.param(f"b{i}", (fan_out,))
        if i < len(layers) - 1:
            h = b.relu(h)
    loss = b.softmax_cross_entropy(h, labels)
    b.ret(b.reduce_mean(loss, axes=[0]))
    return b.module


def transformer_block(b: Builder, x: Tensor, prefix: str, heads: int, mlp_ratio: int = 4,
                      causal: bool = True) -> Tensor:
    """Pre-norm block: ``x + attn(ln1(x))`` then ``+ mlp(ln2(x))`` with a GELU MLP."""
    _, seq, d = x.shape
    head_dim = d // heads

    def p(name: str, shape: Sequence[int]) -> Tensor:
        return b.param(f"{prefix}{name}", shape)

    h = b.layer_norm(x, p("ln1_g", (d,)), p("ln1_b", (d,)))
    q, k, v = (h @ p(f"w{n}", (d, d)) for n in "qkv")
    attn = b.attention(q, k, v, num_heads=heads, head_dim=head_dim,
                       mask_kind="causal" if causal else "none")
    x = x + attn @ p("wo", (d, d))
    h = b.layer_norm(x, p("ln2_g", (d,)), p("ln2_b", (d,)))
    h = b.gelu(h @ p("w1", (d, mlp_ratio * d)) + p("b1", (mlp_ratio * d,)))
    return x + h @ p("w2", (mlp_ratio * d, d)) + p("b2", (d,))


def transformer_block_loss(batch: int = 8, seq: int = 256, d_model: int = 256, heads: int = 4,
                           name: str = "block_loss") -> ModuleOp:
    """Mean of squares of one transformer block's output (a benchmarkable scalar loss)."""
    b = Builder(name)
    x = b.input("x", (batch, seq, d_model))
    y = transformer_block(b, x, "", heads)
    b.ret(b.reduce_mean(y * y, axes=[0, 1, 2]))
    return b.module


def llama_block(b: Builder, x: Tensor, cos: Tensor, sin: Tensor, prefix: str, heads: int,
                kv_heads: int, hidden: int) -> Tensor:
    """LLaMA-style block: RMSNorm, RoPE, grouped-query causal attention, SiLU-gated MLP."""
    _, seq, d = x.shape
    head_dim = d // heads

    def p(name: str, shape: Sequence[int]) -> Tensor:
        return b.param(f"{prefix}{name}", shape)

    h = b.rms_norm(x, p("norm1", (d,)))
    q = b.rope(h @ p("wq", (d, d)), cos, sin, head_dim=head_dim)
    k = b.rope(h @ p("wk", (d, kv_heads * head_dim)), cos, sin, head_dim=head_dim)
    v = h @ p("wv", (d, kv_heads * head_dim))
    attn = b.attention(q, k, v, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
                       mask_kind="causal")
    x = x + attn @ p("wo", (d, d))
    h = b.rms_norm(x, p("norm2", (d,)))
    gated = b.silu(h @ p("w_gate", (d, hidden))) * (h @ p("w_up", (d, hidden)))
    return x + gated @ p("w_down", (hidden, d))


def llama_block_loss(batch: int = 4, seq: int = 128, d_model: int = 256, heads: int = 8,
                     kv_heads: int = 2, hidden: int = 512, name: str = "llama_loss") -> ModuleOp:
    """Mean of squares of one LLaMA-style block's output."""
    b = Builder(name)
    x = b.input("x", (batch, seq, d_model))
    half = d_model // heads // 2
    cos, sin = b.input("cos", (seq, half)), b.input("sin", (seq, half))
    y = llama_block(b, x, cos, sin, "", heads, kv_heads, hidden)
    b.ret(b.reduce_mean(y * y, axes=[0, 1, 2]))
    return b.module


def char_lm_loss(batch: int = 16, seq: int = 64, vocab: int = 64, d_model: int = 64,
                 heads: int = 4, layers: int = 2, name: str = "lm_loss") -> ModuleOp:
    """Next-character cross-entropy of a small causal transformer language model.

    Inputs ``tokens`` and ``targets`` are ``[batch, seq]`` i32; params ``embed``,
    ``pos``, the blocks' ``l<i>_*``, ``lnf_g``, ``lnf_b`` and ``unembed``.
    """
    b = Builder(name)
    tokens = b.input("tokens", (batch, seq), "i32")
    targets = b.input("targets", (batch, seq), "i32")
    h = b.gather(b.param("embed", (vocab, d_model)), tokens, axis=0)
    h = h + b.param("pos", (seq, d_model))
    for i in range(layers):
        h = transformer_block(b, h, f"l{i}_", heads)
    h = b.layer_norm(h, b.param("lnf_g", (d_model,)), b.param("lnf_b", (d_model,)))
    logits = b.reshape(h @ b.param("unembed", (d_model, vocab)), (batch * seq, vocab))
    loss = b.softmax_cross_entropy(logits, b.reshape(targets, (batch * seq,)))
    b.ret(b.reduce_mean(loss, axes=[0]))
    return b.module


def char_lm_logits(seq: int, vocab: int, d_model: int, heads: int, layers: int,
                   name: str = "lm_logits") -> ModuleOp:
    """The same model's logits for one sequence ``[1, seq]`` (for sampling)."""
    b = Builder(name)
    tokens = b.input("tokens", (1, seq), "i32")
    h = b.gather(b.param("embed", (vocab, d_model)), tokens, axis=0)
    h = h + b.param("pos", (seq, d_model))
    for i in range(layers):
        h = transformer_block(b, h, f"l{i}_", heads)
    h = b.layer_norm(h, b.param("lnf_g", (d_model,)), b.param("lnf_b", (d_model,)))
    b.ret(b.softmax(h @ b.param("unembed", (d_model, vocab)), axis=-1))
    return b.module
