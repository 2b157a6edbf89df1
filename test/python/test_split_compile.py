"""Big functions lowered in two halves on two threads (rlx_mlir/lowering/split.py): the
same numbers as the whole function, the halves' values passed right, the LLVM texts
merged, and upstream's diagnostics kept when a call made without the GIL fails."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_models_grad import assert_block_grads_match, random_args, rlx_grads

import rlx_mlir as rlx
from rlx_mlir.lowering.split import merge_llvm_texts
from rlx_mlir.models import llama_block_loss, transformer_block_loss
from rlx_mlir.runtime import jit

SPLIT_PHASE = "xdsl split in halves"


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    monkeypatch.setenv("RLX_CACHE_DIR", "off")
    monkeypatch.delenv("RLX_SPLIT_COMPILE", raising=False)
    jit.clear_memory_cache()


def compile_grad(module, name):
    grad = rlx.grad_with_loss(module, name)
    return rlx.compile(module, entry=grad.sym_name.data)


def test_transformer_gradient_in_halves_matches_torch(two_threads):
    rng = np.random.default_rng(1)
    m = transformer_block_loss(batch=2, seq=8, d_model=16, heads=2)
    args, names = random_args(m, "block_loss", rng)
    loss, grads = rlx_grads(m, "block_loss", args, native=True)
    assert_block_grads_match(loss, grads, args, names)
    exe = compile_grad(transformer_block_loss(batch=2, seq=8, d_model=16, heads=2), "block_loss")
    assert SPLIT_PHASE in exe.engine.phases
    assert exe.engine.objects_compiled_in_lowering and exe.engine.native_code == "llvm"
    assert "__part0" in exe.engine.llvm_text and "__part1" in exe.engine.llvm_text


def test_llama_gradient_in_halves_matches_the_whole_function(two_threads, monkeypatch):
    rng = np.random.default_rng(2)
    args, _ = random_args(llama_block_loss(batch=2, seq=16, d_model=32, heads=4, kv_heads=2,
                                           hidden=48), "llama_loss", rng)
    outs = []
    for split in ("1", "0"):
        monkeypatch.setenv("RLX_SPLIT_COMPILE", split)
        exe = compile_grad(llama_block_loss(batch=2, seq=16, d_model=32, heads=4, kv_heads=2,
                                            hidden=48), "llama_loss")
        assert (SPLIT_PHASE in exe.engine.phases) == (split == "1")
        outs.append(exe(**args, d_output=np.float32(1.0)))
    for got, want in zip(*outs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_no_split_on_one_thread_or_when_turned_off(monkeypatch):
    monkeypatch.setenv("RLX_CACHE_DIR", "off")
    for env in ({"RLX_NUM_THREADS": "1"}, {"RLX_NUM_THREADS": "2", "RLX_SPLIT_COMPILE": "0"},
                {"RLX_SPLIT_COMPILE": "1", "RLX_THREADING": "async"}):  # halves' async fns clash
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        jit.clear_memory_cache()
        exe = compile_grad(transformer_block_loss(batch=1, seq=8, d_model=16, heads=2),
                           "block_loss")
        assert SPLIT_PHASE not in exe.engine.phases and "stage bufferize" in exe.engine.phases
        assert not exe.engine.objects_compiled_in_lowering


def recorded(monkeypatch, owner, name: str, probe) -> list:
    """Wrap ``owner.name`` so each call first appends ``probe(*args)`` to the list returned."""
    seen: list = []
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        seen.append(probe(*args))
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return seen


def test_halves_run_with_a_short_gil_switch_interval_restored_after(two_threads, monkeypatch):
    """Threads coming back from C calls wait less for the GIL during the halves; the
    process's own interval is back afterwards."""
    import sys

    from rlx_mlir.lowering import upstream

    seen = recorded(monkeypatch, upstream, "run_upstream", lambda *_: sys.getswitchinterval())
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.01)
    try:
        exe = compile_grad(transformer_block_loss(batch=1, seq=8, d_model=16, heads=2),
                           "block_loss")
        assert sys.getswitchinterval() == pytest.approx(0.01)
    finally:
        sys.setswitchinterval(before)
    assert SPLIT_PHASE in exe.engine.phases
    assert seen == [pytest.approx(upstream.HALVES_GIL_SWITCH_S)] * 2


def test_garbage_collector_pauses_while_a_module_is_lowered(two_threads, monkeypatch):
    """No collection runs while ``lower_to_llvm`` works (whole or in halves: rlx-opt and
    direct callers too, not only ``rlx.compile``); the collector is back on after it, and
    stays off after it if it was off before."""
    import gc

    from rlx_mlir.lowering import upstream

    seen = recorded(monkeypatch, upstream, "run_upstream", lambda *_: gc.isenabled())
    for split in ("1", "0"):
        monkeypatch.setenv("RLX_SPLIT_COMPILE", split)
        module = transformer_block_loss(batch=1, seq=8, d_model=16, heads=2)
        grad = rlx.grad_with_loss(module, "block_loss")
        upstream.lower_to_llvm(jit.reachable_module(module, grad.sym_name.data))
        assert gc.isenabled()
    gc.disable()
    try:
        upstream.lower_to_llvm(transformer_block_loss(batch=1, seq=4, d_model=8, heads=2))
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen == [False] * 4


def test_a_short_switch_interval_does_not_drift():
    """An interval already under the halves' is never written (written back, it rounds
    down to whole microseconds)."""
    import sys

    from rlx_mlir.runtime.process_settings import gil_switch_interval

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        start = sys.getswitchinterval()
        for _ in range(5):
            with gil_switch_interval(0.0005):
                pass
        assert sys.getswitchinterval() == start
    finally:
        sys.setswitchinterval(before)


def test_a_collector_turned_on_during_a_pause_stays_on():
    """The program enabled the collector while a compile had it paused (it was off
    before): the end of the pause leaves it on."""
    import gc

    from rlx_mlir.runtime.process_settings import collector_paused

    gc.disable()
    try:
        with collector_paused():
            gc.enable()
        assert gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_switch_interval_blocks_restore_the_first_value():
    """Two compiles overlapping on two threads (A enters, B enters, A exits, B exits):
    the process's interval is back only when both ended."""
    import sys

    from rlx_mlir.lowering.upstream import HALVES_GIL_SWITCH_S
    from rlx_mlir.runtime.process_settings import gil_switch_interval

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.01)
    try:
        first, second = gil_switch_interval(0.001), gil_switch_interval(0.001)
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert sys.getswitchinterval() == pytest.approx(0.001)
        second.__exit__(None, None, None)
        assert sys.getswitchinterval() == pytest.approx(0.01)
        assert HALVES_GIL_SWITCH_S < 0.01
    finally:
        sys.setswitchinterval(before)


def test_overlapping_collector_pauses_resume_it_when_the_last_one_ends():
    """A compile on another thread still running keeps the collector paused."""
    import gc

    from rlx_mlir.runtime.process_settings import collector_paused

    assert gc.isenabled()
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_every_loop_annotation_reaches_the_property_in_parallel_bodies(two_threads):
    """The no-unroll notes copied onto latch branches become the property translation
    reads, also inside OpenMP regions (none left as a discardable attribute)."""
    exe = compile_grad(transformer_block_loss(batch=2, seq=8, d_model=16, heads=2),
                       "block_loss")
    text = exe.engine.llvm_text
    assert "omp.loop_nest" in text and "loop_annotation = #llvm.loop_annotation" in text
    assert "llvm.loop_annotation =" not in text


def edges(x, w):
    h = x @ w
    positive = h > 0.0
    total = h.sum()
    flat = h.reshape(24)
    y = (rlx.nn.relu(h) @ w) * total
    picked = rlx.nn.where(positive, y, x)
    return picked, x, total, picked, h, flat


def test_values_crossing_the_cut(two_threads, monkeypatch):
    """Split after any op (RLX_SPLIT_MIN_OPS=1): a bool mask, a scalar and a reshape cross
    the cut; results are an argument, a value returned twice and first-half values."""
    from rlx_mlir.lowering.split import split_function
    from rlx_mlir.lowering.to_linalg import lower_module

    monkeypatch.setenv("RLX_SPLIT_MIN_OPS", "1")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 6)).astype(np.float32)
    traced = rlx.jit(edges).lower(x, w)
    lowered = traced.module.clone()
    lower_module(lowered)
    _, second = split_function(lowered)
    second_inputs = str(next(iter(second.ops)).function_type)
    assert "i1>" in second_inputs and "tensor<f32>" in second_inputs
    exe = rlx.compile(traced)
    assert SPLIT_PHASE in exe.engine.phases
    h = x @ w
    s = h.sum()
    picked = np.where(h > 0, (np.maximum(h, 0) @ w) * s, x)
    want = [picked, x, s, picked, h, h.reshape(24)]
    for got, expected in zip(exe(x, w), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


HEAD = "module attributes {llvm.target = 1 : i64} {"


def module_text(*ops: str) -> str:
    return "\n".join([HEAD, *ops, "}", ""])


DEFINE_G = "  llvm.func @g() {\n    llvm.return\n  }"
DEFINE_G_OTHER = "  llvm.func @g() {\n    llvm.br ^bb1\n  ^bb1:\n    llvm.return\n  }"


def test_merge_keeps_definitions_over_declarations_and_identical_ops_once():
    first = module_text("  llvm.func @malloc(i64) -> !llvm.ptr", "  llvm.func @g()",
                        "  llvm.func @f() {\n    llvm.call @g() : () -> ()\n    llvm.return\n  }")
    second = module_text("  llvm.func @malloc(i64) -> !llvm.ptr", DEFINE_G)
    merged = merge_llvm_texts([first, second])
    assert merged is not None
    assert merged.count("llvm.func @malloc") == 1 and merged.count("llvm.func @g()") == 1
    assert DEFINE_G in merged and "llvm.func @f()" in merged


def test_merge_refuses_two_different_definitions_or_headers():
    assert merge_llvm_texts([module_text(DEFINE_G), module_text(DEFINE_G_OTHER)]) is None
    assert merge_llvm_texts([module_text(DEFINE_G), "module {\n}\n"]) is None
    assert merge_llvm_texts([module_text(DEFINE_G), module_text(DEFINE_G)]) == module_text(DEFINE_G)


def test_merge_unites_attribute_aliases_and_renames_clashing_ones():
    first = "#a = #llvm.x<1>\n#b = #llvm.y<#a>\n" + module_text(
        "  llvm.func @f() attributes {p = #b} {\n    llvm.return\n  }")
    second = "#a = #llvm.x<2>\n#b = #llvm.y<#a>\n" + module_text(
        "  llvm.func @g() attributes {p = #b, q = #a} {\n    llvm.return\n  }")
    merged = merge_llvm_texts([first, second])
    assert merged is not None
    assert merged.startswith("#a = #llvm.x<1>\n#b = #llvm.y<#a>\n#a_h1 = #llvm.x<2>\n"
                             "#b_h1 = #llvm.y<#a_h1>\nmodule")
    assert "@g() attributes {p = #b_h1, q = #a_h1}" in merged
    assert "@f() attributes {p = #b}" in merged
    same = "#a = #llvm.x<1>\n" + module_text(DEFINE_G)
    assert merge_llvm_texts([same, "#a = #llvm.x<1>\n" + module_text()]) == same


def test_calls_without_the_gil_keep_upstream_diagnostics():
    from mlir import ir
    from mlir.passmanager import PassManager

    from rlx_mlir.lowering.capi import parse_module, run_pass_manager

    with ir.Context():
        with pytest.raises(rlx.RlxError, match=r"parsing the module failed: .*1:23.*expected"):
            parse_module("module { func.func @f( }")
        module = parse_module("module { func.func @f() { return } }")
        function = module.body.operations[0]
        with pytest.raises(rlx.RlxError, match="pass pipeline failed: .*can't run"):
            run_pass_manager(PassManager.parse("builtin.module(canonicalize)"), function.operation)
        run_pass_manager(PassManager.parse("builtin.module(canonicalize)"), module.operation)


def test_a_cut_passing_too_many_values_compiles_whole(two_threads, monkeypatch):
    from rlx_mlir.lowering import split

    monkeypatch.setenv("RLX_SPLIT_MIN_OPS", "1")
    monkeypatch.setattr(split, "MAX_FIRST_RESULTS", 1)
    x = np.ones((4, 6), np.float32)
    w = np.eye(6, dtype=np.float32)
    exe = rlx.compile(rlx.jit(edges).lower(x, w))
    assert SPLIT_PHASE not in exe.engine.phases
    np.testing.assert_allclose(exe(x, w)[4], x @ w)


def fft_squared(x):
    """Both halves hold twiddle-factor tables of the same shape: their globals get the
    same name (``@__constant_...``) in the two modules."""
    y = rlx.fft.fft(x)
    return rlx.fft.ifft(y * y)


def test_merged_text_keeps_each_halfs_constants(two_threads, monkeypatch):
    """The merged module (what the cache keeps and a fallback compiles) renames a global
    the other half named the same: here run by the ExecutionEngine from that text."""
    from rlx_mlir.runtime import native

    monkeypatch.setenv("RLX_SPLIT_MIN_OPS", "1")
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    want = np.fft.ifft(np.fft.fft(x) ** 2)
    traced = rlx.jit(fft_squared).lower(x)
    np.testing.assert_allclose(rlx.compile(traced)(x)[0], want, atol=1e-4)
    jit.clear_memory_cache()

    def failing_codegen(*args, **kwargs):
        raise rlx.RlxError("LLVM code generation failed: test")

    monkeypatch.setattr(native, "object_code", failing_codegen)
    with pytest.warns(RuntimeWarning, match="object code generation failed"):
        exe = rlx.compile(traced)
    assert exe.engine.native_code == "execution-engine" and SPLIT_PHASE in exe.engine.phases
    assert "_h1(" in exe.engine.llvm_text
    np.testing.assert_allclose(exe(x)[0], want, atol=1e-4)


KERNEL = ("  llvm.func @{name}(%arg0: !llvm.ptr) attributes {{sym_visibility = \"private\"}} {{\n"
          "    %0 = llvm.call @malloc(%arg0) : (!llvm.ptr) -> !llvm.ptr\n"
          "    llvm.br ^bb1 {{loop_annotation = #a}}\n  ^bb1:\n    llvm.return\n  }}")
ENTRY = "  llvm.func @{name}(%arg0: !llvm.ptr) {{\n    llvm.call @{callee}(%arg0) : (!llvm.ptr) -> ()\n" \
        "    llvm.return\n  }}"
MALLOC = "  llvm.func @malloc(!llvm.ptr) -> !llvm.ptr"


def test_each_kernel_of_two_halves_is_compiled_once():
    from rlx_mlir.runtime.native import CompiledOnce, compile_once

    alias = "#a = #llvm.x<1>\n"
    first = alias + module_text(MALLOC, KERNEL.format(name="k0"), KERNEL.format(name="k1"),
                                ENTRY.format(name="f0", callee="k1"))
    second = alias + module_text(MALLOC, KERNEL.format(name="h0"),
                                 ENTRY.format(name="f1", callee="h0"))
    known = CompiledOnce()
    once = compile_once(first, known)  # k1 repeats k0: its caller calls k0
    assert "llvm.func @k1" not in once and "llvm.call @k0(%arg0)" in once
    assert once.count("llvm.func @k0(") == 1
    other = compile_once(second, known)  # h0 is k0, which the first module defines
    assert "llvm.call @k0(%arg0)" in other and "@h0" not in other
    assert '  llvm.func @k0(%arg0: !llvm.ptr) attributes {sym_visibility = "private"}\n' in other
    assert compile_once(second, CompiledOnce()) == second  # nothing known: unchanged
    declares_h0 = alias + module_text(MALLOC, "  llvm.func @h0(!llvm.ptr)",
                                      ENTRY.format(name="f0", callee="h0"))
    shared = CompiledOnce()
    compile_once(first, shared)
    compile_once(declares_h0, shared)  # a module calls @h0: its definition stays
    assert compile_once(second, shared) == second


def test_kernels_reading_globals_or_other_aliases_are_not_shared():
    from rlx_mlir.runtime.native import CompiledOnce, compile_once

    reads_global = KERNEL.replace("llvm.call @malloc(%arg0)", "llvm.call @malloc(%g)").replace(
        "    %0", "    %g = llvm.mlir.addressof @table : !llvm.ptr\n    %0")
    table = "  llvm.mlir.global internal constant @table(dense<1.0> : tensor<2xf32>) : !llvm.array<2 x f32>"
    known = CompiledOnce()
    first = "#a = #llvm.x<1>\n" + module_text(MALLOC, table, reads_global.format(name="k0"))
    assert compile_once(first, known) == first and not known.kept  # its @table is its own
    quoted = first.replace("@table", '@"table-1"')
    assert compile_once(quoted, known) == quoted and not known.kept
    compile_once("#a = #llvm.x<1>\n" + module_text(MALLOC, KERNEL.format(name="k0")), known)
    other = "#a = #llvm.x<2>\n" + module_text(MALLOC, KERNEL.format(name="h0"))
    assert compile_once(other, known) == other  # its #a is another loop annotation


def test_split_transformer_gradient_compiles_shared_kernels_once(two_threads, monkeypatch):
    from rlx_mlir.runtime import native

    compiled = recorded(monkeypatch, native, "object_code", lambda part, *_: part)
    exe = compile_grad(transformer_block_loss(batch=2, seq=64, d_model=64, heads=2),
                       "block_loss")
    assert exe.engine.objects_compiled_in_lowering
    cuts = [native._cut_top_level(part) for part in compiled]  # noqa: SLF001
    defined = [name for cut in cuts for name in cut.definitions]
    merged = native._cut_top_level(exe.engine.llvm_text).definitions  # noqa: SLF001
    assert len(defined) == len(set(defined)) < len(merged)
    called = {n for part in compiled for n in re.findall(r"llvm\.call @([\w$.]+)\(", part)}
    assert called & set(merged) <= set(defined)  # every function called is compiled once
    halves = [{name.split("__part")[1][0] for name in cut.definitions if "__part" in name}
              for cut in cuts]
    assert any(re.search(rf"llvm\.call @\w+__part{1 - int(min(half))}_kernel_\d+\(", part)
               for part, half in zip(compiled, halves, strict=True) if len(half) == 1)
    args, _ = random_args(transformer_block_loss(batch=2, seq=64, d_model=64, heads=2),
                          "block_loss", np.random.default_rng(3))
    monkeypatch.setenv("RLX_SPLIT_COMPILE", "0")
    whole = compile_grad(transformer_block_loss(batch=2, seq=64, d_model=64, heads=2),
                         "block_loss")
    for got, want in zip(exe(**args, d_output=np.float32(1.0)),
                         whole(**args, d_output=np.float32(1.0)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_half_lowered_last_is_cut_into_more_parts(two_threads, monkeypatch):
    """Its parts start last: finer ones keep both threads busy to the end."""
    from rlx_mlir.lowering import upstream
    from rlx_mlir.runtime import native

    asked = recorded(monkeypatch, native, "split_module_text", lambda text, parts, *_: parts)
    exe = compile_grad(transformer_block_loss(batch=2, seq=64, d_model=64, heads=2),
                       "block_loss")
    assert exe.engine.objects_compiled_in_lowering
    assert len(asked) == 2 and asked[1] == upstream.LAST_HALF_PARTS * 2 > asked[0] == 2
