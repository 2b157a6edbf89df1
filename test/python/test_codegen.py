"""The fast upstream pipeline (transform-dialect schedules): IR assertions and differential
tests fast vs naive (plain loops) vs the interpreter.

Transform ops on empty handles are silent no-ops (DESIGN 4.6), so the schedule tests
assert on the produced IR, not just on numbers.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.lowering import schedules
from rlx_mlir.lowering.upstream import lower_to_llvm, pipeline_stages
from rlx_mlir.runtime.jit import compile as jit_compile
from rlx_mlir.runtime.jit import reachable_module


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path))


def matmul_module(m: int, k: int, n: int):
    b = rlx.Builder("mm")
    b.ret(b.input("a", (m, k)) @ b.input("b", (k, n)))
    return b.module


def batch_matmul_module(bs: int, m: int, k: int, n: int):
    b = rlx.Builder("bmm")
    b.ret(b.input("a", (bs, m, k)) @ b.input("b", (bs, k, n)))
    return b.module


def chain_module(m: int, n: int):
    """gelu(x + bias) * s, then a row sum: a fused elementwise chain plus a reduction."""
    b = rlx.Builder("chain")
    x, bias, s = b.input("x", (m, n)), b.input("bias", (n,)), b.input("s", (m, n))
    y = b.gelu(x + bias) * s
    b.ret(y, b.reduce_sum(y, axes=[1]))
    return b.module


def stage_texts(module, pipeline="fast"):
    seen = {}
    lower_to_llvm(module, pipeline, after_stage=lambda st, text: seen.__setitem__(st.name, text))
    return seen


def run(module, pipeline, *args):
    import os

    old = os.environ.get("RLX_PIPELINE")
    os.environ["RLX_PIPELINE"] = pipeline
    try:
        return jit_compile(module)(*args)
    finally:
        if old is None:
            del os.environ["RLX_PIPELINE"]
        else:
            os.environ["RLX_PIPELINE"] = old


def test_fast_is_the_default_and_naive_is_selectable(monkeypatch):
    monkeypatch.delenv("RLX_PIPELINE", raising=False)
    assert "schedule" in [s.name for s in pipeline_stages()]
    monkeypatch.setenv("RLX_PIPELINE", "naive")
    assert "schedule" not in [s.name for s in pipeline_stages()]
    assert [s.name for s in pipeline_stages("naive")][-1] == "llvm"


def test_packed_matmul_schedule_ir_512():
    """512^3: register tile of 4x64 -> 4 vector.fma on vector<64xf32> per k step, a packed
    B panel (alloc of 4 x KC x 64), the C tile carried in registers (scf.for iter_args)."""
    texts = stage_texts(matmul_module(512, 512, 512))
    lowered = texts["vector-lowering"]
    assert len(re.findall(r"vector\.fma .*: vector<64xf32>", lowered)) >= 4
    assert re.search(r"memref.alloc\(\).*memref<4x\d+x64xf32>", texts["memplan"])
    assert re.search(r"iter_args\(.*\) -> \(vector<4x64xf32>\)", lowered)
    assert "linalg.matmul" not in lowered
    assert schedules.LAST_COUNTS.get("matmul_packed") == 1


def test_schedule_script_walks_the_module_once(monkeypatch, capsys):
    """Every scheduled op is found by one match of the whole module (split into a handle
    per op); a packed matmul found again after canonicalizing looks in its own loop nest.
    A walk of the module per op made the schedule stage quadratic in a model's depth."""
    b = rlx.Builder("two")
    h = b.relu(b.input("x", (256, 512)) @ b.param("w1", (512, 512)))
    b.ret(h @ b.param("w2", (512, 256)))
    monkeypatch.setenv("RLX_DUMP_SCHEDULE", "1")
    stage_texts(b.module)
    script = capsys.readouterr().err
    assert schedules.LAST_COUNTS.get("matmul_packed") == 2
    assert len(re.findall(r"structured\.match .* in %root\d* :", script)) == 1
    assert len(re.findall(r"%r\d+ = transform\.structured\.match .* in %f\d+ :", script)) == 2


@pytest.mark.parametrize("runtime", ["openmp", "async"])
def test_thread_split_ir(monkeypatch, runtime, rng):
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    monkeypatch.setenv("RLX_THREADING", runtime)
    module = matmul_module(512, 512, 512)
    texts = stage_texts(module)
    assert "scf.forall" in texts["schedule"]
    if runtime == "openmp":  # a 2-thread parallel region around a static worksharing loop
        assert re.search(r"omp\.parallel num_threads\(%\w+ : i\d+\)", texts["threads"])
        assert "omp.wsloop" in texts["threads"] and "omp.parallel" in texts["finish"]
        assert "async" not in texts["finish"]
    else:
        assert "mlirAsyncRuntime" in texts["llvm"] and "omp." not in texts["llvm"]
        # the outlined parallel body is compiled once: noinline (no copy in each caller)
        assert re.search(r'llvm.func @parallel_compute_fn\(.*passthrough = \["noinline"\]',
                         texts["finish"])
    a, b = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(jit_compile(module)(a, b)[0], a @ b, rtol=1e-4, atol=1e-3)
    monkeypatch.setenv("RLX_NUM_THREADS", "1")
    texts = stage_texts(matmul_module(512, 512, 512))
    assert "scf.forall" not in texts["schedule"]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_zero_initialised_matmul_starts_from_zero_registers(monkeypatch, threads):
    """K in one cache tile (K = 256): each 4x64 C tile starts as a zero vector instead of
    being read back; a thread split then starts from an empty tensor instead of the zero
    fill (every element of C is written by a tile)."""
    monkeypatch.setenv("RLX_NUM_THREADS", threads)
    module = matmul_module(512, 256, 512)
    texts = stage_texts(module)
    schedule = texts["schedule"]
    assert re.search(r"arith.constant dense<0.000000e\+00> : vector<4x64xf32>", schedule)
    assert ("linalg.fill" in schedule) == (threads == "1")  # no forall: the fill stays
    assert "rlx_zero" not in schedule
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((512, 256), (256, 512)))
    np.testing.assert_allclose(run(module, "fast", a, b)[0], a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_matmul_with_k_in_several_tiles_starts_from_zero_in_the_first(monkeypatch, threads):
    """K = 1024 spans two 512-wide cache tiles: the second adds to what the first wrote, so
    a C tile starts from ``select(first k_c block, 0, C)``; with a thread split the zero
    fill is gone too (the first block writes every element)."""
    monkeypatch.setenv("RLX_NUM_THREADS", threads)
    module = matmul_module(256, 1024, 512)
    schedule = stage_texts(module)["schedule"]
    assert re.search(r"arith.select %\S+, %\S+, %\S+ : vector<4x64xf32>", schedule)
    assert ("linalg.fill" in schedule) == (threads == "1")
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((256, 1024), (1024, 512)))
    np.testing.assert_allclose(run(module, "fast", a, b)[0], a @ b, rtol=1e-4, atol=2e-3)


def test_matmuls_sharing_a_zero_init_get_a_fill_each(monkeypatch):
    """CSE merges the zero inits of two same-shaped matmuls; each gets its own fill again
    (bufferization would otherwise copy the one filled buffer for the second). One
    thread: no thread split, so the fills stay (with one they would be dropped)."""
    monkeypatch.setenv("RLX_NUM_THREADS", "1")
    b = rlx.Builder("two")
    x = b.input("x", (256, 1024))
    b.ret(x @ b.input("w1", (1024, 256)), x @ b.input("w2", (1024, 256)))
    texts = stage_texts(b.module)
    assert texts["contractions"].count("linalg.fill") == 1
    assert texts["schedule"].count("linalg.fill") == 2
    assert texts["bufferize"].count("linalg.fill") == 2  # each fills its own buffer: no copy
    rng = np.random.default_rng(6)
    xs, w1, w2 = (rng.standard_normal(s).astype(np.float32)
                  for s in ((256, 1024), (1024, 256), (1024, 256)))
    got = run(b.module, "fast", xs, w1, w2)
    np.testing.assert_allclose(got[0], xs @ w1, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(got[1], xs @ w2, rtol=1e-4, atol=2e-3)


def _transposes(text: str) -> list[str]:
    return re.findall(r"linalg.transpose ins\(%\w+ : (tensor<[0-9x]+xf32>)", text)


def _has_transposed_a_matmul(text: str) -> bool:
    """A ``linalg.matmul`` whose A map is ``(d0, d1, d2) -> (d2, d0)`` (A read as [K, M])."""
    maps = dict(re.findall(r"^(#map\d*) = affine_map<(.*)>$", text, re.M))
    uses = re.findall(r"linalg.matmul indexing_maps = \[(#map\d*), (#map\d*), (#map\d*)\]", text)
    return any(maps.get(a) == "(d0, d1, d2) -> (d2, d0)" for a, _, _ in uses)


def test_weight_gradient_reads_x_transposed():
    """``x^T @ dy`` (x [64, 16], dy [64, 128]): the matmul reads x through a transposed
    map (its packing copies A panels anyway), so nothing is transposed in memory."""
    b = rlx.Builder("wgrad")
    x, dy = b.input("x", (64, 16)), b.input("dy", (64, 128))
    b.ret(b.transpose(x, perm=[1, 0]) @ dy)
    contractions = stage_texts(b.module)["contractions"]
    assert _transposes(contractions) == []
    assert _has_transposed_a_matmul(contractions)
    rng = np.random.default_rng(4)
    xs, dys = rng.standard_normal((64, 16)), rng.standard_normal((64, 128))
    (fast,) = run(b.module, "fast", xs.astype(np.float32), dys.astype(np.float32))
    np.testing.assert_allclose(fast, xs.T @ dys, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, reads_transposed", [(1024, False), (256, True)])
def test_weight_gradient_with_m_above_n(k, reads_transposed):
    """``x^T @ dy`` with x [K, 128], dy [K, 16] (M = 128 > N = 16): long A^T rows (K = 1024)
    would be packed 4 columns at a time for too few B panels, so x is transposed as before;
    short ones (K = 256) are read in place."""
    b = rlx.Builder("wgrad")
    x, dy = b.input("x", (k, 128)), b.input("dy", (k, 16))
    b.ret(b.transpose(x, perm=[1, 0]) @ dy)
    contractions = stage_texts(b.module)["contractions"]
    assert _transposes(contractions) == ([] if reads_transposed else [f"tensor<{k}x128xf32>"])
    assert _has_transposed_a_matmul(contractions) == reads_transposed
    rng = np.random.default_rng(5)
    xs, dys = rng.standard_normal((k, 128)), rng.standard_normal((k, 16))
    (fast,) = run(b.module, "fast", xs.astype(np.float32), dys.astype(np.float32))
    np.testing.assert_allclose(fast, xs.T @ dys, rtol=1e-4, atol=1e-4)


def test_batched_weight_gradient_contraction_reads_x_transposed():
    """The weight gradient of ``[B, S, D] @ [D, N]`` contracts over (B, S): fusion folds
    the reshapes and the transpose into one generic, which the rewrite turns into a
    matmul reading x as [B*S, D] (a view) through the transposed map: no copy."""
    b = rlx.Builder("wgrad")
    x, g = b.input("x", (4, 16, 32)), b.input("g", (4, 16, 64))
    rows = b.transpose(b.reshape(x, (64, 32)), perm=[1, 0])
    b.ret(rows @ b.reshape(g, (64, 64)))
    texts = stage_texts(b.module)
    assert "linalg.generic" in texts["fuse"] and "linalg.matmul" not in texts["fuse"]
    assert _transposes(texts["contractions"]) == []
    assert _has_transposed_a_matmul(texts["contractions"])
    rng = np.random.default_rng(6)
    xs, gs = (rng.standard_normal(s).astype(np.float32) for s in ((4, 16, 32), (4, 16, 64)))
    (dw,) = run(b.module, "fast", xs, gs)
    np.testing.assert_allclose(dw, xs.reshape(-1, 32).T @ gs.reshape(-1, 64), rtol=1e-4, atol=1e-3)


def test_seeded_weight_gradient_is_a_packed_matmul():
    """The gradient of ``sum((x @ w) * g)`` scaled by the seed ``d_output``: fusion puts
    the seed (a one-element tensor read at index 0 everywhere) into the weight gradient's
    contraction; it is captured as a scalar, so the rewrite still finds ``x^T (s * g)``
    and the schedule packs it (as an unclassified generic it ran at under 1 GFLOP/s)."""
    b = rlx.Builder("loss")
    x, w, g = b.input("x", (4, 16, 32)), b.param("w", (32, 64)), b.input("g", (4, 16, 64))
    b.ret(b.reduce_sum((x @ w) * g, axes=[0, 1, 2]))
    grad = rlx.grad_with_loss(b.module, "loss", wrt=["w"], with_loss=False)
    module = reachable_module(b.module, grad.sym_name.data)
    texts = stage_texts(module)
    assert "-> (0, 0, 0)>" in texts["fuse"]  # the seed, broadcast into the contraction
    assert '"reduction"' in texts["fuse"]
    assert "linalg.matmul" in texts["contractions"]
    assert '"reduction"' not in texts["contractions"]
    assert schedules.LAST_COUNTS.get("matmul_packed") == 1
    rng = np.random.default_rng(7)
    xs, ws, gs = (rng.standard_normal(s).astype(np.float32) for s in ((4, 16, 32), (32, 64), (4, 16, 64)))
    (dw,) = jit_compile(b.module, grad.sym_name.data)(xs, ws, gs, np.float32(2.5))
    want = 2.5 * xs.reshape(-1, 32).T @ gs.reshape(-1, 64)
    np.testing.assert_allclose(dw, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("scale_shape", [(4, 16, 1), (1, 16, 1)])
def test_row_scaled_matmul_is_a_packed_matmul(scale_shape):
    """``(x * r) @ w`` with ``r`` broadcast along unit dims: fusion reads ``r`` through a
    map with constant-0 results, which the rewrite drops with a collapse so the product
    is still classified (unclassified it ran as a reduction loop, ~100x slower)."""
    b = rlx.Builder("f")
    x, r, w = b.input("x", (4, 16, 32)), b.input("r", scale_shape), b.input("w", (32, 64))
    b.ret((x * r) @ w)
    texts = stage_texts(b.module)
    assert re.search(r"-> \((0, d1, 0|d0, d1, 0)\)>", texts["fuse"])
    assert "linalg.matmul" in texts["contractions"]
    assert '"reduction"' not in texts["contractions"]
    rng = np.random.default_rng(8)
    xs, rs, ws = (rng.standard_normal(s).astype(np.float32) for s in ((4, 16, 32), scale_shape, (32, 64)))
    (got,) = run(b.module, "fast", xs, rs, ws)
    np.testing.assert_allclose(got, (xs * rs) @ ws, rtol=1e-4, atol=1e-4)


def test_per_head_attention_matmuls_are_not_packed():
    """Attention's per-head contractions sit in the heads loop on tiles that stay in cache:
    they get the register-tiled schedule without packing (as fast there, less code); the
    output matches the interpreter."""
    b = rlx.Builder("attn")
    q, k, v = (b.input(n, (2, 128, 64)) for n in "qkv")
    b.ret(b.attention(q, k, v, num_heads=2, head_dim=32, mask_kind="causal"))
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((2, 128, 64)).astype(np.float32) for _ in range(3)]
    (got,) = jit_compile(b.module, entry="attn")(*args)
    assert schedules.LAST_COUNTS.get("matmul_small", 0) >= 2
    assert "matmul_packed" not in schedules.LAST_COUNTS
    (want,) = rlx.interpret(b.module, *args, entry="attn")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [1, 3])
def test_a_matrix_vector_product_streams_the_weight_rows(m):
    """A product of fewer than 4 rows with a weight past the caches (a decode step) gets
    the streaming schedule: columns over the threads, ``k`` outer; numbers as numpy's."""
    k, n = 2048, 2048
    rng = np.random.default_rng(11)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    (got,) = jit_compile(matmul_module(m, k, n), entry="mm")(x, w)
    assert schedules.LAST_COUNTS.get("matmul_skinny") == 1
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-3)


def _decode_step_generic(fn, *args) -> str:
    """The one product generic left after the contractions stage of ``fn``'s lowering
    (its weight decoded inside it: no matmul, no f32 copy of the weights)."""
    text = stage_texts(fn.lower(*args).module)["contractions"]
    body = text.split("func.func")[1]
    assert "linalg.matmul" not in body
    products = [g for g in body.split("linalg.generic")[1:] if '"reduction"' in g.split("{")[1]]
    assert len(products) in (1, 2)  # packed nibbles: one product per nibble
    return products[0]


def test_a_dequantized_decode_step_decodes_inside_the_product():
    """At one row, int8 weights are decoded inside the product (one generic over
    ``(m, blocks, k, n)`` streaming the bytes): no f32 copy of the weights is written
    (it was most of the time: 3.5 ms against 1.8 for f32 at ``1x4096x4096``)."""
    k, n = 2048, 2048
    rng = np.random.default_rng(14)
    x = rng.standard_normal((1, k)).astype(np.float32)
    w_q = rng.integers(-128, 128, (k, n)).astype(np.int8)
    scale = rng.uniform(0.01, 0.02, (k // 32, n)).astype(np.float32)
    fn = rlx.jit(lambda x, w_q: rlx.quant.dequant_matmul(x, w_q, scale, block_size=32))
    got = fn(x, w_q)
    w = (w_q.reshape(k // 32, 32, n) * scale[:, None].astype(np.float64)).reshape(k, n)
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-3)
    product = _decode_step_generic(fn, x, w_q)
    assert '"parallel", "reduction", "reduction", "parallel"' in product
    assert "arith.sitofp" in product and f"{k // 32}x32x{n}xf32" not in product
    assert "matmul_skinny" not in schedules.LAST_COUNTS


@pytest.mark.parametrize("scheme", ["int4", "uint4"])
def test_packed_nibbles_decode_inside_both_products(scheme):
    """Packed int4 / uint4 (with zero points) at one row: each nibble's product decodes
    the bytes itself (plain float arithmetic, no table gather), reading its half of the
    scales contiguously; numbers as numpy's unpacking."""
    k, n = 2048, 4096
    rng = np.random.default_rng(15)
    x = rng.standard_normal((1, k)).astype(np.float32)
    packed = rng.integers(0, 256, (k, n // 2)).astype(np.uint8)
    scale = rng.uniform(0.01, 0.02, (k // 64, n)).astype(np.float32)
    zero = rng.integers(0, 16, (k // 64, n)).astype(np.int32) if scheme == "uint4" else None
    fn = rlx.jit(lambda x, w: rlx.quant.dequant_matmul(x, w, scale, zero, block_size=64,
                                                       scheme=scheme))
    got = fn(x, packed.view(np.int8))
    pair = np.stack([packed & 15, packed >> 4], -1).reshape(k, n).astype(np.int64)
    levels = pair - 16 * (pair >= 8) if scheme == "int4" else pair
    if zero is not None:
        levels = levels - np.repeat(zero, 64, axis=0)
    w = levels * np.repeat(scale, 64, axis=0).astype(np.float64)
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-3)
    product = _decode_step_generic(fn, x, packed.view(np.int8))
    assert "tensor.extract " not in product and "arith.sitofp" in product


def test_a_vector_times_a_transposed_weight_reads_the_weight_rows():
    """``x @ w.T`` of one row with a PyTorch-layout weight ``[N, K]`` stays a row
    reduction over ``w``'s contiguous rows: no transpose of the weight is left (it copied
    all of it per call), and the value and both gradients are numpy's."""
    k, n = 512, 1024
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    fn = rlx.jit(lambda x, w: x @ w.T)
    texts = stage_texts(fn.lower(x, w).module)
    assert "linalg.transpose" not in texts["contractions"]
    assert "linalg.matmul" not in texts["contractions"]
    assert "#linalg.iterator_type<reduction>" in texts["contractions"] or \
        '"reduction"' in texts["contractions"]
    np.testing.assert_allclose(fn(x, w), x @ w.T, rtol=1e-4, atol=1e-3)
    g = np.random.default_rng(13).standard_normal((1, n)).astype(np.float32)
    gx, gw = rlx.grad(lambda x, w: ((x @ w.T) * g).sum(), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, g @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gw, g.T @ x, rtol=1e-4, atol=1e-3)


def test_summed_broadcast_product_is_a_matmul():
    """``(x[:, :, None] * y[None]).sum(1)``: the reduction is generalized before fusion, the
    product fuses into it, and the contraction rewrite makes it a matmul (before: a
    materialised [M, K, N] tensor and a reduction over it)."""
    b = rlx.Builder("f")
    x, y = b.input("x", (64, 32)), b.input("y", (32, 48))
    b.ret(b.reduce_sum(b.reshape(x, (64, 32, 1)) * b.reshape(y, (1, 32, 48)), axes=[1]))
    texts = stage_texts(b.module)
    assert "linalg.reduce" not in texts["fuse"]
    assert "linalg.matmul" in texts["contractions"]
    assert "tensor<64x32x48xf32>" not in texts["contractions"]
    rng = np.random.default_rng(10)
    xs, ys = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((32, 48)).astype(np.float32)
    (got,) = run(b.module, "fast", xs, ys)
    np.testing.assert_allclose(got, xs @ ys, rtol=1e-4, atol=1e-4)


def test_elementwise_chain_is_fused_and_vectorized():
    texts = stage_texts(chain_module(64, 256))
    after = texts["schedule"]
    # the elementwise chain and the row-sum reduction are both vectorized
    assert after.count("linalg.generic") == 0
    assert re.search(r"vector<1x64xf32>|vector<64xf32>", after)
    assert schedules.LAST_COUNTS.get("vector", 0) >= 1


@pytest.mark.parametrize("shape", [(7, 13, 5), (100, 70, 130), (512, 64, 40), (3, 300, 70),
                                   (256, 784, 512), (64, 256, 96)])
def test_matmul_fast_vs_naive_vs_numpy(shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    module = matmul_module(m, k, n)
    (fast,) = run(module, "fast", a, b)
    (naive,) = run(module, "naive", a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 * np.sqrt(k) * np.abs(ref).max()
    np.testing.assert_allclose(fast, ref, atol=tol)
    np.testing.assert_allclose(fast, naive, atol=tol)


@pytest.mark.parametrize("shape", [(3, 7, 13, 5), (16, 64, 32, 64), (2, 33, 17, 70), (4, 250, 30, 250),
                                   (3, 100, 100, 100)])
def test_batch_matmul_fast_vs_naive(shape):
    bs, m, k, n = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((bs, m, k)).astype(np.float32)
    b = rng.standard_normal((bs, k, n)).astype(np.float32)
    module = batch_matmul_module(bs, m, k, n)
    (fast,) = run(module, "fast", a, b)
    (naive,) = run(module, "naive", a, b)
    np.testing.assert_allclose(fast, np.matmul(a, b), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fast, naive, rtol=1e-4, atol=1e-4)


def test_folded_rows_matmul_stays_a_named_matmul():
    """Fusion folds the row reshapes of [B, S, K] @ [K, N] into a 4-d generic; the
    contractions stage makes it one linalg.matmul again, so the packed schedule applies."""
    b = rlx.Builder("rows")
    b.ret(b.input("x", (4, 32, 64)) @ b.input("w", (64, 128)))
    texts = stage_texts(b.module)
    assert "linalg.matmul" not in texts["fuse"] and "linalg.generic" in texts["fuse"]
    assert texts["contractions"].count("linalg.matmul") == 1
    assert "linalg.generic" not in texts["contractions"]
    assert schedules.LAST_COUNTS.get("matmul_packed") == 1
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 32, 64)).astype(np.float32), rng.standard_normal((64, 128))
    (fast,) = run(b.module, "fast", x, w.astype(np.float32))
    np.testing.assert_allclose(fast, x @ w, rtol=1e-4, atol=1e-4)


def test_attention_contractions_become_matmuls():
    """Both head-grouped contractions of each head (the second with the softmax
    normalisation fused into it) are rewritten as named matmuls: per head their batch dims
    (batch, kv head, group) are all 1 and fold away, so the packed schedule applies; the
    result matches the interpreter."""
    b = rlx.Builder("att")
    q, k, v = (b.input(n, (2, 16, 32)) for n in "qkv")
    b.ret(b.attention(q, k, v, num_heads=2, head_dim=16, mask_kind="causal"))
    texts = stage_texts(b.module)
    assert texts["contractions"].count("linalg.matmul ") == 2
    assert "linalg.batch_matmul" not in texts["contractions"]
    args = [np.random.default_rng(6).standard_normal((2, 16, 32)).astype(np.float32)
            for _ in range(3)]
    (fast,) = run(b.module, "fast", *args)
    np.testing.assert_allclose(fast, rlx.interpret(b.module, *args)[0], rtol=1e-5, atol=1e-5)


def _conv_loss_gradient(x_shape, w_shape, groups, seed):
    """The contractions-stage text of ``sum(conv2d(x, w) ** 2)``'s gradient, after
    checking the compiled gradient against the interpreter's."""
    b = rlx.Builder("conv")
    x, w = b.param("x", x_shape), b.param("w", w_shape)
    y = b.conv2d(x, w, padding=(1, 1), groups=groups)
    b.ret(b.reduce_sum(y * y, axes=[0, 1, 2, 3]))
    grad = rlx.grad_with_loss(b.module, "conv")
    texts = stage_texts(reachable_module(b.module, grad.sym_name.data))
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(x_shape).astype(np.float32),
            0.1 * rng.standard_normal(w_shape).astype(np.float32), np.float32(1.0)]
    got = jit_compile(b.module, entry=grad.sym_name.data)(*args)
    want = rlx.interpret(b.module, *args, entry=grad.sym_name.data)
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-4, atol=1e-3 * np.abs(v).max())
    return texts["contractions"]


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_gradient_is_im2col_plus_matmuls(groups):
    """A conv and both its gradients are each a window copy (im2col) + a contraction: with
    one group (a unit batch dim) three packed linalg.matmuls, with two groups of 20
    channels in and out three batch_matmuls; the gradient matches the interpreter."""
    channels, outs = (8, 16) if groups == 1 else (40, 40)
    text = _conv_loss_gradient((4, channels, 12, 12), (outs, channels // groups, 3, 3),
                               groups, seed=7)
    named = "linalg.matmul" if groups == 1 else "linalg.batch_matmul"
    assert text.count(f"{named} ") == 3
    if groups == 1:
        assert schedules.LAST_COUNTS.get("matmul_packed") == 3


def test_big_two_group_conv_runs_one_packed_matmul_per_group():
    """Two groups of 32 channels with big products: each im2col contraction is two packed
    linalg.matmuls on slices (batch_matmul has no packed schedule), not a batch_matmul."""
    text = _conv_loss_gradient((2, 64, 32, 32), (64, 32, 3, 3), 2, seed=9)
    assert "linalg.batch_matmul" not in text
    assert text.count("linalg.matmul ") == 6
    assert schedules.LAST_COUNTS.get("matmul_packed") == 6


def test_grouped_conv_with_few_channels_is_direct():
    """Four channels per group: the conv and its input gradient are one direct generic per
    reduced channel, the weight gradient per-column partial sums; no im2col matmul."""
    assert "matmul" not in _conv_loss_gradient((2, 16, 10, 10), (16, 4, 3, 3), 4, seed=8)


@pytest.mark.parametrize("perm", [(1, 0, 2, 3), (0, 2, 3, 1), (3, 2, 1, 0), (0, 3, 1, 2)])
def test_transposes_in_16x16_blocks_are_exact(perm):
    """Transposes moving the contiguous dim run as 16x16 register blocks (shuffles)."""
    b = rlx.Builder("t")
    b.ret(b.transpose(b.input("x", (4, 32, 16, 48)), perm=list(perm)))
    texts = stage_texts(b.module)
    out = [(4, 32, 16, 48)[p] for p in perm]
    if perm.index(3) != 3 and out[perm.index(3)] % 16 == 0 and out[3] % 16 == 0:
        assert re.search(r"vector<(1x)*16x(1x)*16xf32>", texts["schedule"])
    x = np.random.default_rng(4).standard_normal((4, 32, 16, 48)).astype(np.float32)
    (fast,) = run(b.module, "fast", x)
    np.testing.assert_array_equal(fast, x.transpose(perm))


@pytest.mark.parametrize("shape", [(64, 256), (5, 13), (3, 200)])
def test_fused_chain_fast_vs_naive_vs_interpreter(shape):
    m, n = shape
    rng = np.random.default_rng(2)
    x = rng.standard_normal((m, n)).astype(np.float32)
    bias = rng.standard_normal((n,)).astype(np.float32)
    s = rng.standard_normal((m, n)).astype(np.float32)
    module = chain_module(m, n)
    fast = run(module, "fast", x, bias, s)
    naive = run(module, "naive", x, bias, s)
    interp = rlx.interpret(module, x, bias, s)
    for f, nv, it in zip(fast, naive, interp, strict=True):
        np.testing.assert_allclose(f, nv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(f, it, rtol=1e-4, atol=1e-4)


def test_mlp_gradient_fast_vs_naive(monkeypatch):
    from rlx_mlir import models

    module = models.mlp_loss(32, (48, 40, 10))
    grad = rlx.grad_with_loss(module, "mlp_loss")
    entry = grad.sym_name.data
    rng = np.random.default_rng(3)
    fast_exe = jit_compile(module, entry=entry)
    args = [(rng.standard_normal(a.shape) * 0.3).astype(a.dtype) if a.dtype.kind == "f"
            else rng.integers(0, 10, a.shape).astype(a.dtype) for a in fast_exe.signature.args]
    fast = fast_exe(*args)
    monkeypatch.setenv("RLX_PIPELINE", "naive")
    naive = jit_compile(module, entry=entry)(*args)
    for f, nv in zip(fast, naive, strict=True):
        np.testing.assert_allclose(f, nv, rtol=1e-4, atol=1e-5)


def test_benchmark_sized_transformer_block_gradient_runs_natively():
    """The b8/s256/d256 block gradient used to crash in vectorized transposes."""
    import rlx_mlir as rlx
    from rlx_mlir.models import transformer_block_loss

    m = transformer_block_loss(batch=8, seq=256, d_model=256, heads=4)
    rlx.grad_with_loss(m, "block_loss")
    sig = rlx.runtime.signature.Signature.of(rlx.ir.find_func(m, "block_loss"))
    rng = np.random.default_rng(0)
    args = {a.name: (0.1 * rng.standard_normal(a.shape)).astype(np.float32) for a in sig.args}
    loss, *grads = rlx.compile(m, entry="block_loss_grad")(**args, d_output=np.float32(1))
    (want,) = rlx.interpret(m, entry="block_loss", **args)
    # the mean over 2^19 f32 values: sequential vs numpy's pairwise summation order
    np.testing.assert_allclose(loss, want, rtol=1e-3)
    assert all(np.isfinite(g).all() for g in grads)


def test_a_cheap_shared_producer_fuses_into_each_user():
    """``h = x + b`` read by two elementwise ops is recomputed in both (one add) instead
    of being written out and read back: no generic is left computing only the add."""
    b = rlx.Builder("shared")
    x, bias = b.input("x", (64, 256)), b.input("bias", (256,))
    h = x + bias
    b.ret(b.gelu(h), h * h)
    fused = stage_texts(b.module)["fuse"]
    assert fused.count("linalg.generic") == 2
    assert fused.count("arith.addf") >= 2  # the add, once in each user
    rng = np.random.default_rng(7)
    xs, bs = rng.standard_normal((64, 256)).astype(np.float32), rng.standard_normal(256)
    want = rlx.interpret(b.module, xs, bs.astype(np.float32))
    got = run(b.module, "fast", xs, bs.astype(np.float32))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_packed_int4_weights_are_decoded_by_arithmetic_not_lookups():
    """The bytes of int4 weights are decoded by float arithmetic (``floor(b / 16)`` and
    the rest; no table gather, which does not vectorize), and the widening is recomputed
    in each nibble's decode instead of shared as an i32 or f32 copy of the weights: the
    fused module has exactly the two decode generics."""
    k, n = 64, 32
    rng = np.random.default_rng(8)
    packed = rng.integers(0, 256, (k, n // 2)).astype(np.uint8)
    scale = rng.uniform(0.5, 1.0, n).astype(np.float32)
    fn = rlx.jit(lambda x: rlx.quant.dequant_matmul(x, packed, scale, scheme="int4"))
    x = rng.standard_normal((4, k)).astype(np.float32)
    fused = stage_texts(fn.lower(x).module)["fuse"]
    generics = fused.split("linalg.generic")[1:]
    assert len(generics) == 2 and not any("tensor.extract " in g for g in generics)
    assert all(g.split("linalg.yield")[0].count("arith.sitofp") == 1 for g in generics)
    assert "xi32>" not in fused.split("func.func")[1].split("{")[0]  # no i32 argument
    levels = (packed & 15).astype(np.int64), (packed >> 4).astype(np.int64)
    w = np.stack(levels, -1).reshape(k, n)
    np.testing.assert_allclose(fn(x), x @ ((w - 16 * (w >= 8)) * scale), rtol=1e-5, atol=1e-5)


def parallel_bodies(text: str) -> list[str]:
    return re.findall(r"func\.func private @(parallel_compute_fn\w*)", text)


def kernels(text: str) -> list[str]:
    return re.findall(r"func\.func private @(\w+_kernel_\d+)", text)


@pytest.mark.parametrize("runtime", ["openmp", "async"])
def test_identical_kernels_are_outlined_and_compiled_once(monkeypatch, rng, runtime):
    """Two same-shaped products become two identical kernel functions; the merge stage
    keeps one and calls it twice (and the results stay right)."""
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    monkeypatch.setenv("RLX_THREADING", runtime)
    b = rlx.Builder("twice")
    x, w, v = b.input("x", (512, 256)), b.input("w", (256, 256)), b.input("v", (256, 256))
    b.ret(x @ w, x @ v)
    texts = stage_texts(b.module)
    outlined, kept = kernels(texts["outline"]), kernels(texts["merge-kernels"])
    assert len(kept) == len(outlined) - 1
    calls = re.findall(r"call @(twice_kernel_\d+)\(", texts["merge-kernels"])
    assert set(calls) == set(kept) and len(calls) == len(outlined)
    main = texts["merge-kernels"].split("func.func private")[0]
    assert "scf.for" not in main and "linalg." not in main  # only calls, allocs and views
    if runtime == "async":
        assert len(parallel_bodies(texts["threads"])) == 1
    else:  # the parallel region lives in the one kernel left
        assert texts["threads"].count("omp.parallel") == 1
    args = [rng.standard_normal(s).astype(np.float32) for s in ((512, 256), (256, 256), (256, 256))]
    got = jit_compile(b.module)(*args)
    np.testing.assert_allclose(got[0], args[0] @ args[1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], args[0] @ args[2], rtol=1e-4, atol=1e-4)


MERGE_TEXT = """
func.func private @a(%x: f32) -> f32 {
  %c = arith.constant 2.0 : f32
  %y = arith.mulf %x, %c : f32
  return %y : f32
}
func.func private @b(%x: f32) -> f32 {
  %c = arith.constant 2.0 : f32
  %y = arith.mulf %x, %c : f32
  return %y : f32
}
func.func private @c(%x: f32) -> f32 {
  %c = arith.constant 3.0 : f32
  %y = arith.mulf %x, %c : f32
  return %y : f32
}
func.func private @call_a(%x: f32) -> f32 {
  %y = call @a(%x) : (f32) -> f32
  return %y : f32
}
func.func private @call_b(%x: f32) -> f32 {
  %y = call @b(%x) : (f32) -> f32
  return %y : f32
}
func.func @main(%x: f32) -> (f32, f32, f32) {
  %p = call @call_a(%x) : (f32) -> f32
  %q = call @call_b(%x) : (f32) -> f32
  %r = call @c(%x) : (f32) -> f32
  return %p, %q, %r : f32, f32, f32
}
"""


def test_merge_identical_functions_repeats_until_callers_merge_too():
    from mlir import ir

    from rlx_mlir.lowering.dedupe import merge_identical_functions

    with ir.Context():
        module = ir.Module.parse(MERGE_TEXT)
        assert merge_identical_functions(module) == 2  # @b, then @call_b (it now calls @a)
        assert module.operation.verify()
        text = str(module)
    assert re.findall(r"func\.func private @(\w+)", text) == ["a", "c", "call_a"]
    assert text.count("call @call_a(") == 2 and "call @c(" in text


def test_bodies_differing_in_one_constant_are_kept_apart(monkeypatch, rng):
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    b = rlx.Builder("apart")
    x = b.input("x", (1024, 1024))
    b.ret(b.tanh(x) * 2.0, b.tanh(x) * 3.0)
    texts = stage_texts(b.module)
    assert parallel_bodies(texts["dedupe"]) == parallel_bodies(texts["threads"])
    x_ = rng.standard_normal((1024, 1024)).astype(np.float32)
    got = jit_compile(b.module)(x_)
    np.testing.assert_allclose(got[0], np.tanh(x_) * 2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.tanh(x_) * 3, rtol=1e-5, atol=1e-5)


def test_kernel_names_avoid_the_module_own_functions(rng):
    """A user function already called ``f_kernel_0``: the outlined kernels pick other names."""
    text = """
    func.func @f(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %y = rlx.exp %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
      func.return %y : tensor<64x64xf32>
    }
    func.func @f_kernel_0(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %y = rlx.tanh %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
      func.return %y : tensor<64x64xf32>
    }
    """
    x = rng.standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(jit_compile(text, entry="f")(x)[0], np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(jit_compile(text, entry="f_kernel_0")(x)[0], np.tanh(x),
                               rtol=1e-5, atol=1e-6)
    names = re.findall(r"llvm\.func @(\w+)\(", lower_to_llvm(rlx.parse(text)))
    assert {"f", "f_kernel_0", "f_kernel_1", "f_kernel_0_kernel_0"} <= set(names)


def test_compile_does_not_import_the_linalg_opdsl_table_or_llvm_op_classes(tmp_path):
    """The bindings load ``light_dialects.linalg`` (op classes only) for linalg op views,
    and ``light_dialects.llvm`` (none) for LLVM-dialect ones; the contractions rewrite
    builds its matmuls and transposes without the opdsl table. A user's own imports of
    the full modules still work afterwards."""
    import subprocess
    import sys

    script = (
        "import sys, numpy as np, rlx_mlir as rlx\n"
        "b = rlx.Builder('f')\n"
        "x = b.input('x', (8, 64)); w = b.input('w', (32, 64))\n"
        "b.ret(b.matmul(b.transpose(b.matmul(x, b.transpose(w, perm=[1, 0])), perm=[1, 0]), x))\n"
        "exe = rlx.compile(b.module)\n"
        "xs = np.random.rand(8, 64).astype(np.float32); ws = np.random.rand(32, 64).astype(np.float32)\n"
        "np.testing.assert_allclose(exe(xs, ws)[0], (xs @ ws.T).T @ xs, rtol=1e-4)\n"
        "assert not any('opdsl' in m for m in sys.modules), 'opdsl imported'\n"
        "assert 'mlir.dialects.llvm' not in sys.modules, 'llvm op classes imported'\n"
        "from mlir.dialects import linalg, llvm\n"
        "assert callable(linalg.matmul) and callable(llvm.ReturnOp)\n"
    )
    env = {**__import__("os").environ, "RLX_CACHE_DIR": "off"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


LONG_ROW_REDUCTIONS = {
    "sum": (lambda x: x.sum(axis=-1), lambda x: x.sum(-1)),
    "max": (lambda x: x.max(axis=-1), lambda x: x.max(-1)),
    "min": (lambda x: x.min(axis=-1), lambda x: x.min(-1)),
    "mean_keepdims": (lambda x: x.mean(axis=-1, keepdims=True),
                      lambda x: x.mean(-1, keepdims=True)),
    "sum_of_squares": (lambda x: (x * x).sum(axis=-1), lambda x: (x * x).sum(-1)),
    "softmax": (lambda x: rlx.nn.softmax(x, axis=-1),
                lambda x: np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(LONG_ROW_REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_row_reductions_keep_vector_partials(name, dtype, rng):
    """Rows longer than WHOLE_ROW_REDUCTION_MAX: a vector<1x64> accumulator carried across
    the row's chunks (one cross-lane reduction per row), numbers as numpy's."""
    ours, reference = LONG_ROW_REDUCTIONS[name]
    x = rng.standard_normal((6, 2048)).astype(dtype)
    x[2, 1000] = 40.0  # a max far from the first chunk
    np.testing.assert_allclose(rlx.jit(ours)(x), reference(x), rtol=1e-5, atol=1e-5)
    texts = stage_texts(rlx.trace(ours, (x,)).module)
    element = "f32" if dtype == np.float32 else "f64"
    carried = rf"step %c64 iter_args\([^)]*\) -> \([^)]*vector<(?:1x)+64x{element}>\)"
    assert re.search(carried, texts["schedule"])


def test_long_row_reductions_of_ints_and_nans(rng):
    """addi partials, and a NaN anywhere in a row still makes its max NaN (maximumf)."""
    ints = rng.integers(-1000, 1000, size=(3, 1024)).astype(np.int32)
    np.testing.assert_array_equal(rlx.jit(lambda v: v.sum(axis=-1))(ints), ints.sum(-1))
    x = rng.standard_normal((4, 1024)).astype(np.float32)
    x[1, 700] = np.nan
    got = rlx.jit(lambda v: v.max(axis=-1))(x)
    np.testing.assert_array_equal(np.isnan(got), [False, True, False, False])
    np.testing.assert_allclose(got[[0, 2, 3]], x[[0, 2, 3]].max(-1))


@pytest.mark.parametrize("dilation", [1, 2])
def test_big_dense_conv_runs_one_packed_matmul_per_image(dilation, rng):
    """A dense conv of 2^27+ flops: a parallel loop over images, each image's im2col and
    packed [O, C*9] @ [C*9, Ho*Wo] matmul writing its NCHW output (no transpose)."""
    import torch

    x = rng.standard_normal((4, 32, 64, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)

    def conv(x, w, b):
        return rlx.nn.conv2d(x, w, b, padding=(dilation, dilation), dilation=(dilation, dilation))

    texts = stage_texts(rlx.trace(conv, (x, w, bias)).module)
    assert schedules.LAST_COUNTS.get("matmul_packed") == 1
    assert "scf.forall" in texts["contractions"] and "linalg.transpose" not in texts["contractions"]
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(bias),
                                      padding=dilation, dilation=dilation).numpy()
    np.testing.assert_allclose(rlx.jit(conv)(x, w, bias), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch,dilation", [(4, 1), (3, 2)])
def test_big_dense_conv_gradients_run_one_packed_matmul_per_image(batch, dilation, rng):
    """d/dx (stride 1) and d/dw of a 2^27+ flop dense conv take the forward's per-image
    form: three packed matmuls (forward, input and weight gradients) inside parallel loops
    over the images; the weight gradient sums per-image rows. Values against torch."""
    import torch

    x = rng.standard_normal((batch, 32, 64, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    kw = dict(padding=(dilation, 0), dilation=(dilation, dilation))
    grads = rlx.grad(lambda x, w: (rlx.nn.conv2d(x, w, **kw) ** 2).sum(), argnums=(0, 1))
    texts = stage_texts(rlx.trace(grads, (x, w)).module)
    assert schedules.LAST_COUNTS.get("matmul_packed") == 3
    assert texts["contractions"].count("scf.forall") >= 3
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    y = torch.nn.functional.conv2d(tx, tw, **kw)
    for got, want in zip(rlx.jit(grads)(x, w), torch.autograd.grad((y ** 2).sum(), (tx, tw)),
                         strict=True):
        want = want.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def assert_conv_and_grads_match_torch(x, w, kw, grads):
    """rlx's conv2d(x, w, **kw) and ``grads`` (d/dx, d/dw of ``sum(conv ** 2)``) against
    torch's."""
    import torch

    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    y = torch.nn.functional.conv2d(tx, tw, **kw)
    np.testing.assert_allclose(rlx.jit(lambda x, w: rlx.nn.conv2d(x, w, **kw))(x, w),
                               y.detach().numpy(), rtol=1e-4, atol=1e-4)
    for got, want in zip(rlx.jit(grads)(x, w), torch.autograd.grad((y ** 2).sum(), (tx, tw)),
                         strict=True):
        want = want.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("groups,stride,size", [(2, 1, 48), (4, 1, 48), (2, 2, 96),
                                                (8, 2, 128)])
def test_big_grouped_conv_and_its_gradients_run_one_image_at_a_time(groups, stride, size,
                                                                     rng):
    """A grouped conv of 2^27+ flops and both its gradients take the dense conv's
    per-image form, each group of an image a matmul on in-cache patches (over the whole
    batch 2-4x slower than torch; at stride 2 the input gradient by phases, 8 groups
    included): forall loops over the images, values against torch's."""
    x = rng.standard_normal((4, 64, size, size)).astype(np.float32)
    w = (rng.standard_normal((64, 64 // groups, 3, 3)) * 0.1).astype(np.float32)
    kw = dict(padding=(1, 1), stride=(stride, stride), groups=groups)
    grads = rlx.grad(lambda x, w: (rlx.nn.conv2d(x, w, **kw) ** 2).sum(), argnums=(0, 1))
    foralls = stage_texts(rlx.trace(grads, (x, w)).module)["contractions"].count("scf.forall")
    assert foralls >= 3
    assert_conv_and_grads_match_torch(x, w, kw, grads)


def test_a_big_depthwise_conv_at_stride_1_keeps_the_direct_form(rng):
    """One channel per group at stride 1: the direct form over the whole batch (per image
    it ran 1.8x slower forward, 1.6x for the weight gradient); strided it goes per image."""
    from rlx_mlir.dialects.conv import PER_IMAGE_MIN_FLOPS

    x = rng.standard_normal((20, 32, 112, 112)).astype(np.float32)
    w = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    assert 2 * 20 * 32 * 112 * 112 * 9 >= PER_IMAGE_MIN_FLOPS
    for stride, per_image in ((1, False), (2, True)):
        conv = rlx.trace(lambda x, w, s=stride: rlx.nn.conv2d(x, w, padding=1, stride=s,
                                                              groups=32), (x, w))
        assert ("scf.forall" in stage_texts(conv.module)["contractions"]) == per_image


@pytest.mark.parametrize("shape", [(4096, 256), (16, 256, 256), (4, 4, 128, 512)])
def test_big_row_ops_run_block_of_rows_by_block(shape, rng, monkeypatch):
    """softmax, log_softmax, layer_norm and rms_norm over the last axis of a 4 MB+ input
    run a block of rows at a time inside a parallel loop (each block's passes read it from
    cache); over another axis, or on a small input, over the whole tensor. Values against
    torch."""
    import torch

    from rlx_mlir.dialects.nn import ROW_BLOCK_MIN_BYTES

    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    x = rng.standard_normal(shape).astype(np.float32)
    g, b = (rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2))
    assert x.nbytes >= ROW_BLOCK_MIN_BYTES
    t, tg, tb = torch.tensor(x), torch.tensor(g), torch.tensor(b)
    cases = [(lambda a: rlx.nn.softmax(a, axis=-1), torch.softmax(t, -1)),
             (lambda a: rlx.nn.log_softmax(a, axis=-1), torch.log_softmax(t, -1)),
             (lambda a: rlx.nn.layer_norm(a, g, b), torch.nn.functional.layer_norm(
                 t, (shape[-1],), tg, tb)),
             (lambda a: rlx.nn.rms_norm(a, g), torch.nn.functional.rms_norm(
                 t, (shape[-1],), tg, eps=1e-6))]
    for f, want in cases:
        assert "scf.forall" in stage_texts(rlx.trace(f, (x,)).module)["contractions"]
        np.testing.assert_allclose(rlx.jit(f)(x), want.numpy(), rtol=1e-5, atol=1e-5)
    other_axis = rlx.trace(lambda a: rlx.nn.softmax(a, axis=0), (x,)).module
    small = rlx.trace(lambda a: rlx.nn.softmax(a, axis=-1), (x[..., :16, :],)).module
    for module in (other_axis, small):
        assert "scf.forall" not in stage_texts(module)["contractions"]


def test_softmax_over_a_long_outer_axis_sums_in_f64(rng):
    """An f32 exp-sum over 2^14+ elements of an outer axis (each output accumulates one
    element at a time) is accumulated in f64: softmax over axis 0 of [100001, 7] was off
    by 1.5e-4 relative (JAX: 1e-6)."""
    a = (rng.standard_normal((100001, 7)) * 3).astype(np.float32)
    shifted = np.exp(a.astype(np.float64) - a.max(axis=0))
    want = shifted / shifted.sum(axis=0)
    got = rlx.jit(lambda v: rlx.nn.softmax(v, axis=0))(a)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    log_got = rlx.jit(lambda v: rlx.nn.log_softmax(v, axis=0))(a)
    np.testing.assert_allclose(log_got, np.log(want), rtol=1e-6, atol=2e-6)


def test_windowed_and_strided_reads_are_split_over_the_threads(rng, monkeypatch):
    """Generics the vectorizer does not take (a pool's window, a strided slice's read map)
    still get a thread split of their first divisible parallel dim; a flipped read
    (``x[::-1]``, a negative coefficient linalg's tiling rejects) keeps one loop nest.
    Values against torch and numpy."""
    import torch

    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    x = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)
    y = rng.standard_normal((16, 32, 32, 64)).astype(np.float32)
    cases = [(lambda a: rlx.nn.max_pool2d(a, 3, stride=2, padding=1), x, True,
              torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1).numpy()),
             (lambda a: a[..., ::2], y, True, y[..., ::2]),
             (lambda a: a[..., ::-1], y, False, y[..., ::-1])]
    for f, arg, split, want in cases:
        stage_texts(rlx.trace(f, (arg,)).module)
        assert (schedules.LAST_COUNTS.get("threads") == 1) == split
        np.testing.assert_array_equal(rlx.jit(f)(arg), want)


@pytest.mark.parametrize("width,stride,tap_copies", [(20, 1, True), (40, 1, False),
                                                     (8, 1, False), (20, 2, False)])
def test_mid_width_stride_1_im2col_copies_a_tap_at_a_time(width, stride, tap_copies, rng):
    """Output rows of TAP_COPY_MIN_WIDTH to TAP_COPY_MAX_WIDTH at stride 1: im2col is one
    copy per tap (a generic reading ``xp[n, g, c, y, x]`` of a strided slice, for the
    forward's patches, which the weight gradient shares); wider, shorter or strided rows
    keep the one-generic form. Dilated, asymmetrically padded, non-square; values against
    torch."""
    from rlx_mlir.dialects.conv import TAP_COPY_MAX_WIDTH, TAP_COPY_MIN_WIDTH

    x = rng.standard_normal((3, 8, 12, width)).astype(np.float32)
    w = (rng.standard_normal((16, 8, 3, 3)) * 0.3).astype(np.float32)
    kw = dict(padding=(1, 2), dilation=(1, 2), stride=(stride, stride))
    assert (TAP_COPY_MIN_WIDTH <= width <= TAP_COPY_MAX_WIDTH) == (width == 20)
    loss = lambda x, w: (rlx.nn.conv2d(x, w, **kw) ** 2).sum()  # noqa: E731
    grads = rlx.grad(loss, argnums=(0, 1))
    text = stage_texts(rlx.trace(grads, (x, w)).module)["contractions"]
    tap_copy = "affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d1, d5, d6)>"
    assert (tap_copy in text) == tap_copies
    assert_conv_and_grads_match_torch(x, w, kw, grads)


@pytest.mark.parametrize("width", [14, 28, 32])
def test_a_pointwise_conv_at_mid_widths_is_a_packed_matmul(width, rng):
    """A 1x1 conv's im2col is one tap: copied by itself, it fused into the contraction,
    which then ran as a scalar reduction (10 GFLOP/s at [32, 128, 28, 28], 30x torch); the
    one-generic form keeps the packed matmul. Values and gradients against torch."""
    x = rng.standard_normal((2, 64, width, width)).astype(np.float32)
    w = (rng.standard_normal((48, 64, 1, 1)) * 0.3).astype(np.float32)
    b = rlx.Builder("pointwise")
    b.ret(b.conv2d(b.input("x", x.shape), b.param("w", w.shape)))
    stage_texts(b.module)
    assert schedules.LAST_COUNTS.get("matmul_packed") == 1
    assert "vector_reduction" not in schedules.LAST_COUNTS
    assert_conv_and_grads_match_torch(x, w, {}, rlx.grad(
        lambda x, w: (rlx.nn.conv2d(x, w) ** 2).sum(), argnums=(0, 1)))


@pytest.mark.parametrize("groups,channels", [(32, 32), (1, 8)])
def test_small_strided_convs_run_one_image_at_a_time(groups, channels, rng):
    """A strided conv from STRIDED_PER_IMAGE_MIN_FLOPS (here a depthwise and a dense one
    of about 2^19 flops at stride 2) takes the per-image form, forward and input gradient
    (by phases); values against torch."""
    import torch

    from rlx_mlir.dialects.conv import STRIDED_PER_IMAGE_MIN_FLOPS

    x = rng.standard_normal((8, channels, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((channels, channels // groups, 3, 3)) * 0.3).astype(np.float32)
    assert 2 * 8 * channels * 8 * 8 * (channels // groups) * 9 >= STRIDED_PER_IMAGE_MIN_FLOPS
    kw = dict(padding=(1, 1), stride=(2, 2), groups=groups)
    dx = rlx.grad(lambda x, w: (rlx.nn.conv2d(x, w, **kw) ** 2).sum())
    assert stage_texts(rlx.trace(dx, (x, w)).module)["contractions"].count("scf.forall") >= 2
    tx = torch.tensor(x, requires_grad=True)
    y = torch.nn.functional.conv2d(tx, torch.tensor(w), **kw)
    np.testing.assert_allclose(rlx.jit(lambda x, w: rlx.nn.conv2d(x, w, **kw))(x, w),
                               y.detach().numpy(), rtol=1e-4, atol=1e-4)
    want = torch.autograd.grad((y ** 2).sum(), tx)[0].numpy()
    np.testing.assert_allclose(rlx.jit(dx)(x, w), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width", [513, 999, 1000, 1001])
@pytest.mark.parametrize("axis", [-1, 0])
def test_rows_with_no_whole_vector_width_are_split_and_vectorized(width, axis, rng):
    """An innermost dim with no vector width of 16+ dividing it (a parallel 1000, any
    513) is split after its last multiple of 16: exp's polynomial runs on vectors only,
    none on scalars (left scalar, a 513-long softmax row ran 10x slower than 512)."""
    x = rng.standard_normal((32, width)).astype(np.float32)

    def softmax(x):
        return rlx.nn.softmax(x, axis=axis)

    scheduled = stage_texts(rlx.trace(softmax, (x,)).module)["schedule"]
    fma_types = set(re.findall(r"math\.fma [^\n]*: (vector<[^>]*>|f32)", scheduled))
    assert fma_types and "f32" not in fma_types
    e = np.exp(x - x.max(axis, keepdims=True))
    np.testing.assert_allclose(rlx.jit(softmax)(x), e / e.sum(axis, keepdims=True),
                               rtol=1e-5, atol=1e-7)


def test_small_register_tiles_use_whole_vectors():
    """Tiles of 16, 32 or 64 columns when they divide n, rows keeping <= 16 accumulators."""
    assert schedules.small_register_tile(112, 112) == (8, 16)
    assert schedules.small_register_tile(96, 96) == (8, 32)
    assert schedules.small_register_tile(128, 128) == (4, 64)
    assert schedules.small_register_tile(256, 10) == (8, 10)
    assert schedules.small_register_tile(64, 56) == (4, 56)


@pytest.mark.parametrize("seq", [96, 100])
def test_attention_at_odd_lengths_splits_columns_into_whole_vectors(seq, rng):
    """Per-head score tiles of 100 keys: 96 columns in 16- or 32-wide vectors plus a
    4-column remainder, not 50-wide vectors (LLVM spilled them: 10x slower per score);
    numbers as torch's."""
    import torch

    q, k, v = (rng.standard_normal((2, seq, 64)).astype(np.float32) for _ in range(3))

    def attend(q, k, v):
        return rlx.nn.attention(q, k, v, num_heads=1)

    texts = stage_texts(rlx.trace(attend, (q, k, v)).module)
    widths = {int(w) for w in re.findall(r"vector<\d+x(\d+)xf32>", texts["schedule"])}
    assert widths and all(w <= 16 or w in (32, 64, seq) for w in widths), widths
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a)[:, None] for a in (q, k, v)))[:, 0].numpy()
    np.testing.assert_allclose(rlx.jit(attend)(q, k, v), want, rtol=1e-4, atol=1e-5)


def test_stack_buffers_past_the_budget_go_to_the_heap(monkeypatch):
    """``promote-buffers-to-stack`` caps each buffer, not their sum (an 8-layer tiny GPT's
    gradient kept 8.9 MB in one frame: a segfault under the 8 MB stack). Past the budget
    the largest allocas become heap buffers freed at their block's end; numbers unchanged."""
    monkeypatch.setattr(schedules, "STACK_BUDGET", 3000)
    rng = np.random.default_rng(2)
    ws = [rng.standard_normal((16, 16)).astype(np.float32) / 4 for _ in range(4)]
    x = rng.standard_normal((8, 16)).astype(np.float32)

    def loss(ws, x):
        for w in ws:
            x = rlx.nn.tanh(x @ w)
        return (x ** 2).sum()

    fn = rlx.jit(rlx.grad(loss))
    texts = stage_texts(fn.lower(ws, x).module)
    before, after = texts["forall-temporaries"], texts["stack-budget"]
    assert before.count("memref.alloca(") > after.count("memref.alloca(")
    assert after.count("memref.dealloc") > before.count("memref.dealloc")
    sizes = [int(np.prod([int(d) for d in m.split("x")[:-1]])) * 4
             for m in re.findall(r"memref\.alloca\(\)[^:]*: memref<([0-9x]+f32)>", after)]
    assert sum(sizes) <= 3000
    import torch

    tws = [torch.tensor(w, requires_grad=True) for w in ws]
    h = torch.tensor(x)
    for w in tws:
        h = torch.tanh(h @ w)
    (h ** 2).sum().backward()
    for g, w in zip(fn(ws, x), tws, strict=True):
        np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scheme", ["fp8_e4m3", "nvfp4"])
def test_table_decodes_fuse_into_a_decode_step_as_vector_gathers(scheme):
    """FP8 / NVFP4 bytes decode by a 256-entry table: at one row the lookup goes into the
    product too (its generic tagged for ``vectorize_nd_extract``: ``vector.gather`` from
    the table), so no f32 copy of the weights is written; numbers as ml_dtypes'."""
    import ml_dtypes

    k, n = 2048, 4096  # each packed half: 2048 x 2048, past the streaming threshold
    rng = np.random.default_rng(16)
    x = rng.standard_normal((1, k)).astype(np.float32)
    if scheme == "fp8_e4m3":
        w = rng.standard_normal((k, n)).astype(ml_dtypes.float8_e4m3fn).view(np.int8)
        scale = rng.uniform(0.5, 1.0, n).astype(np.float32)
        levels = w.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        weights = levels * scale
    else:
        w = rng.integers(-128, 128, (k, n // 2)).astype(np.int8)
        scale = rng.integers(40, 56, (k // 16, n)).astype(np.uint8)
        e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        u = w.view(np.uint8)
        levels = np.stack([e2m1[u & 15], e2m1[u >> 4]], -1).reshape(k, n)
        weights = levels * np.repeat(scale.view(ml_dtypes.float8_e4m3fn).astype(np.float64),
                                     16, axis=0)
    fn = rlx.jit(lambda x, w: rlx.quant.dequant_matmul(x, w, scale, scheme=scheme))
    np.testing.assert_allclose(fn(x, w), x @ weights, rtol=1e-4, atol=1e-3)
    product = _decode_step_generic(fn, x, w)
    assert "tensor.extract " in product and "rlx_gather" in product


def test_a_reduction_that_ignores_an_output_dim_is_computed_once():
    """``grad((x @ w').sum())`` w.r.t. ``x`` is ``ones @ w'^T``: fusion left one reduction
    ``dx[m, k] = sum_n w'[k, n]`` that summed ``w'`` once per row of ``dx`` (64x1024x1024:
    286 ms). It is now the reduction over ``(k, n)`` alone, then a broadcast over ``m``."""
    m, k, n = 64, 1024, 1024
    rng = np.random.default_rng(17)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    s = (rng.random(n) * 0.1 + 0.01).astype(np.float32)
    fn = rlx.jit(rlx.grad(lambda x, w, s: (x @ (w.reshape((1, k, n)) * s).reshape((k, n))).sum()))
    want = np.broadcast_to((w.astype(np.float64) * s).sum(1), (m, k))
    np.testing.assert_allclose(fn(x, w, s), want, rtol=1e-4, atol=1e-4)
    text = stage_texts(fn.lower(x, w, s).module)["contractions"]
    reductions = [g for g in text.split("linalg.generic")[1:] if '"reduction"' in g.split("{")[1]]
    assert len(reductions) == 1
    assert re.search(r"\} -> tensor<([0-9x]+)xf32>", reductions[0]).group(1) == f"1x{k}"
    assert '["reduction", "parallel", "parallel"]' in reductions[0]  # n outermost


@pytest.mark.parametrize("scheme, n", [("int8", 4000), ("int4", 4000)])
def test_decode_step_fusion_takes_columns_past_multiples_of_64(scheme, n):
    """The fused decode step needs only ``N % 16`` per product (the row schedule splits
    off the rest): ``1x4096x4000`` int8 ran unfused, 4x slower than ``1x4096x4096``."""
    k = 4096
    rng = np.random.default_rng(18)
    x = rng.standard_normal((1, k)).astype(np.float32)
    packed = scheme == "int4"
    w = rng.integers(-128, 128, (k, n // 2 if packed else n)).astype(np.int8)
    scale = rng.uniform(0.01, 0.02, (k // 32, n)).astype(np.float32)
    fn = rlx.jit(lambda x, w: rlx.quant.dequant_matmul(x, w, scale, block_size=32,
                                                       scheme=scheme))
    if packed:
        u = w.view(np.uint8)
        pair = np.stack([u & 15, u >> 4], -1).reshape(k, n).astype(np.int64)
        levels = pair - 16 * (pair >= 8)
    else:
        levels = w.astype(np.int64)
    weights = levels * np.repeat(scale, 32, axis=0).astype(np.float64)
    np.testing.assert_allclose(fn(x, w), x @ weights, rtol=1e-4, atol=1e-3)
    _decode_step_generic(fn, x, w)


def test_an_empty_shared_by_many_ops_is_split_into_runs_of_neighbours():
    """CSE leaves one ``tensor.empty`` as the destination of ops in every layer; past
    EMPTY_SHARERS uses it is split into runs of neighbouring uses, bounding one-shot
    bufferization's alias sets (it was quadratic in depth)."""
    from mlir import ir

    fills = "\n".join(f"    %f{i} = linalg.fill ins(%c{i % 2} : f32) outs(%e : tensor<8xf32>) "
                      "-> tensor<8xf32>" for i in range(40))
    text = ("func.func @f() -> tensor<8xf32> {\n    %c0 = arith.constant 0.0 : f32\n"
            "    %c1 = arith.constant 1.0 : f32\n    %e = tensor.empty() : tensor<8xf32>\n"
            f"{fills}\n    return %f39 : tensor<8xf32>\n}}")
    with ir.Context():
        module = ir.Module.parse(text)
        assert schedules.split_shared_empties(module) == 2
        empties = schedules.ops_named(module, "tensor.empty")
        fill_ops = schedules.ops_named(module, "linalg.fill")
        runs = [[fill_ops.index(u.owner) for u in e.results[0].uses] for e in empties]
        assert sorted(len(r) for r in runs) == [8, 16, 16]
        assert all(max(r) - min(r) == len(r) - 1 for r in runs)  # neighbours share
        module.operation.verify()


def test_a_reshaped_empty_shared_by_many_ops_is_split_too():
    """CSE merges ``expand_shape(empty)`` views as well (479 uses in a 16-micro-batch
    step): past EMPTY_SHARERS uses the view becomes an empty of its own, then split."""
    from mlir import ir

    fills = "\n".join(f"    %f{i} = linalg.fill ins(%c : f32) outs(%v : tensor<2x4xf32>) "
                      "-> tensor<2x4xf32>" for i in range(20))
    text = ("func.func @f() -> tensor<2x4xf32> {\n    %c = arith.constant 0.0 : f32\n"
            "    %e = tensor.empty() : tensor<8xf32>\n"
            "    %v = tensor.expand_shape %e [[0, 1]] output_shape [2, 4] : tensor<8xf32> "
            f"into tensor<2x4xf32>\n{fills}\n    return %f19 : tensor<2x4xf32>\n}}")
    with ir.Context():
        module = ir.Module.parse(text)
        assert schedules.split_shared_empties(module) == 1
        assert not schedules.ops_named(module, "tensor.expand_shape")
        uses = sorted(len(list(e.results[0].uses))
                      for e in schedules.ops_named(module, "tensor.empty"))
        assert uses == [0, 4, 16]
        module.operation.verify()
