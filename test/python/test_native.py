"""Object code: parallel LLVM code generation, the ORC loader and the object disk cache."""

import ctypes
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.lowering.llvm_hints import GLUE_PART
from rlx_mlir.runtime import jit, native

# a matmul big enough for the packed, 2-thread schedule (async runtime calls, several
# outlined functions) and a second public function
TEXT = """
func.func @step(%x: tensor<256x128xf32>, %w: tensor<128x192xf32>) -> tensor<256x192xf32> {
  %y = rlx.matmul %x, %w : (tensor<256x128xf32>, tensor<128x192xf32>) -> tensor<256x192xf32>
  %z = rlx.gelu %y : (tensor<256x192xf32>) -> tensor<256x192xf32>
  func.return %z : tensor<256x192xf32>
}
func.func @scale(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = rlx.tanh %x : (tensor<1000xf32>) -> tensor<1000xf32>
  func.return %y : tensor<1000xf32>
}
"""


def inputs(rng):
    return (rng.standard_normal((256, 128)).astype(np.float32),
            rng.standard_normal((128, 192)).astype(np.float32) / 8)


def check_step(f, rng):
    x, w = inputs(rng)
    want = rlx.interpret(TEXT, x, w, entry="step")[0]
    np.testing.assert_allclose(f(x, w)[0], want, rtol=1e-5, atol=1e-5)




def test_parallel_codegen_runs_the_same_as_one_thread(fresh, monkeypatch, rng):
    monkeypatch.setenv("RLX_CODEGEN_JOBS", "2")
    f = jit.compile(TEXT, entry="step")
    assert f.engine.native_code == "llvm"
    # two parts of kernels, and the glue (entry functions, C wrappers) compiled at O0
    parts = native.split_module_text(f.engine.llvm_text, 2)
    assert [p.startswith(GLUE_PART) for p in parts] == [False, False, True]
    assert len(f.engine.objects) == 3 and f.engine.timings["codegen_jobs"] == 3
    check_step(f, rng)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    np.testing.assert_allclose(jit.compile(TEXT, entry="scale")(x)[0], np.tanh(x),
                               rtol=1e-5, atol=1e-6)

    monkeypatch.setenv("RLX_CODEGEN_JOBS", "1")
    monkeypatch.setenv("RLX_CACHE_DIR", "off")
    jit.clear_memory_cache()
    one = jit.compile(TEXT, entry="step")
    assert one.engine.native_code == "llvm" and len(one.engine.objects) == 2  # kernels, glue
    x, w = inputs(rng)
    np.testing.assert_array_equal(one(x, w)[0], f(x, w)[0])


def test_no_compiler_thread_outlives_a_compile(fresh):
    """Code generation runs in threads that end with it (the ExecutionEngine's context kept
    two idle LLVM workers alive per engine)."""
    before = set(os.listdir("/proc/self/task"))
    f = jit.compile(TEXT, entry="scale")
    f(np.ones(1000, np.float32))
    names = [pathlib.Path(f"/proc/self/task/{t}/comm").read_text().strip()
             for t in set(os.listdir("/proc/self/task")) - before]
    assert not [n for n in names if n.startswith("llvm-worker")], names


SPLIT_TEXT = """module {
  llvm.mlir.global private constant @msg("hi\\00") {addr_space = 0 : i32} : !llvm.array<3 x i8>
  llvm.func @free(!llvm.ptr)
  llvm.func @big(%arg0: i64) -> i64 {
    %0 = llvm.add %arg0, %arg0 : i64
    %1 = llvm.mul %0, %0 : i64
    %2 = llvm.or %1, %1 : i64
    %3 = llvm.call @small(%2) : (i64) -> i64
    llvm.return %3 : i64
  }
  llvm.func @small(%arg0: i64) -> i64 {
    %0 = llvm.or %arg0, %arg0 : i64
    %1 = llvm.call @helper(%0) : (i64) -> i64
    llvm.return %1 : i64
  }
  llvm.func @middle(%arg0: i64) -> i64 {
    %0 = llvm.add %arg0, %arg0 : i64
    llvm.return %0 : i64
  }
  llvm.func internal @helper(%arg0: i64) -> i64 {
    llvm.return %arg0 : i64
  }
}
"""


def test_modules_split_into_balanced_parts_that_link_back():
    parts = native.split_module_text(SPLIT_TEXT, 2)
    assert len(parts) == 2
    defined = [sorted(n for n in ("big", "small", "middle")
                      if f"llvm.func @{n}(%arg0: i64) -> i64 {{" in p) for p in parts]
    assert defined == [["big"], ["middle", "small"]]  # largest first, then the lighter bin
    for part, names in zip(parts, defined, strict=True):
        for other in {"big", "small", "middle"} - set(names):
            assert f"  llvm.func @{other}(%arg0: i64) -> i64\n" in part  # declared
        assert "@msg(" in part and "llvm.func internal @helper" in part  # copied
    objects = native.compile_objects(SPLIT_TEXT, 2)
    assert len(objects) == 2
    big = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(native.ObjectJit(objects).lookup("big"))
    assert big(3) == 36  # big -> small -> helper across the two parts: (3 + 3)^2


@pytest.mark.parametrize("text", [
    "not mlir", SPLIT_TEXT.replace("\n  }\n", "\n", 1),
    SPLIT_TEXT.replace("  llvm.func @free", "    llvm.func @free"),
    SPLIT_TEXT.replace("private constant @msg", "internal @msg")])  # one variable, not a copy each
def test_text_of_another_shape_is_compiled_whole(text):
    assert native.split_module_text(text, 2) == [text]


def test_small_modules_compile_in_one_thread(monkeypatch):
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    assert native.codegen_jobs("x" * 1000) == 1
    assert native.codegen_jobs("x" * 2 * native.PART_BYTES) == 2


def test_the_disk_cache_loads_object_code_in_a_fresh_process(tmp_path):
    module = tmp_path / "module.mlir"
    module.write_text(TEXT)
    script = textwrap.dedent(f"""
        import json, pathlib, time, numpy as np
        from rlx_mlir.runtime.jit import compile
        t = time.perf_counter()
        f = compile(pathlib.Path({str(module)!r}).read_text(), entry="step")
        elapsed = time.perf_counter() - t
        rng = np.random.default_rng(0)
        x = rng.standard_normal((256, 128)).astype(np.float32)
        w = rng.standard_normal((128, 192)).astype(np.float32) / 8
        print(json.dumps({{"how": f.engine.native_code, "s": elapsed,
                          "sum": float(f(x, w)[0].sum(dtype=np.float64))}}))
    """)
    env = {"RLX_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "RLX_CODEGEN_JOBS": "2"}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env,
                                      capture_output=True, text=True, check=True).stdout)
            for _ in range(2)]
    assert [r["how"] for r in runs] == ["llvm", "cached-objects"]
    assert runs[0]["sum"] == runs[1]["sum"]
    assert len(list(tmp_path.glob("*.o"))) == 3  # two parts of kernels and the glue


def test_execution_engine_objects_are_cached_too(fresh, monkeypatch, rng):
    monkeypatch.setattr(native, "compile_objects", failing_codegen)
    with pytest.warns(RuntimeWarning, match="object code generation failed"):
        f = jit.compile(TEXT, entry="step")
    assert f.engine.native_code == "execution-engine" and len(f.engine.objects) == 1
    jit.clear_memory_cache()
    again = jit.compile(TEXT, entry="step")
    assert again.engine.native_code == "cached-objects"
    check_step(again, rng)


def cached_meta(folder):
    (meta,) = folder.glob("*.json")
    return meta, json.loads(meta.read_text())


def test_objects_of_another_host_are_compiled_again(fresh, rng):
    jit.compile(TEXT, entry="step")
    path, meta = cached_meta(fresh)
    path.write_text(json.dumps({**meta, "host": "some-other-cpu"}))
    jit.clear_memory_cache()
    f = jit.compile(TEXT, entry="step")
    assert "disk_cache_hit" in f.engine.timings
    assert f.engine.native_code == "llvm"
    check_step(f, rng)


def test_a_corrupt_object_falls_back_to_the_cached_text(fresh, rng):
    jit.compile(TEXT, entry="step")
    obj = sorted(fresh.glob("*.o"))[0]
    obj.write_bytes(b"\x7fELF not really an object file")
    jit.clear_memory_cache()
    f = jit.compile(TEXT, entry="step")
    assert f.engine.native_code == "llvm"
    check_step(f, rng)


def failing_codegen(*args, **kwargs):
    raise rlx.RlxError("LLVM code generation failed: test")


def test_failing_codegen_warns_and_uses_the_execution_engine(fresh, monkeypatch, rng):
    monkeypatch.setenv("RLX_CODEGEN_JOBS", "2")
    monkeypatch.setattr(native, "object_code", failing_codegen)
    with pytest.warns(RuntimeWarning, match="object code generation failed"):
        f = jit.compile(TEXT, entry="step")
    assert f.engine.native_code == "execution-engine"
    check_step(f, rng)


def test_unloadable_objects_are_a_clear_error():
    with pytest.raises(rlx.RlxError, match="loading native code"):
        native.ObjectJit([b"not an object file"])


@pytest.mark.parametrize("setting", ["RLX_CODEGEN_JOBS=abc", "RLX_OPT_LEVEL=7",
                                     "RLX_NUM_THREADS=0"])
def test_bad_knob_values_are_named_errors(tmp_path, setting):
    """A bad environment knob is a one-line error naming it (exit 1), not a traceback."""
    name, value = setting.split("=")
    module = tmp_path / "relu.mlir"
    module.write_text("func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
                      "  %y = rlx.relu %x : (tensor<3xf32>) -> tensor<3xf32>\n"
                      "  func.return %y : tensor<3xf32>\n}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RLX_CACHE_DIR": "off", name: value}
    rlx_run = pathlib.Path(sys.executable).with_name("rlx-run")
    done = subprocess.run([str(rlx_run), str(module), "--entry", "f"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert name in done.stderr and "Traceback" not in done.stderr


def test_scalar_loop_functions_get_llvms_whole_pipeline(monkeypatch):
    """Parts of a fast-pipeline module (``rlx.light_llvm``) whose functions arrive
    vectorized get the light pass list; a part defining a function with scalar loops
    (declarations do not count), coroutines, O0/O1, ``RLX_LLVM_LIGHT=0`` or a module the
    schedules did not produce (the naive pipeline) get ``default<O<level>>``."""
    from rlx_mlir.lowering.llvm_hints import LIGHT_PASSES, PARALLEL_PASSES, llvm_passes

    light = SPLIT_TEXT.replace("module {", "module attributes {rlx.light_llvm} {", 1)
    scalar = light.replace("@middle(%arg0: i64) -> i64 {",
                           "@middle(%arg0: i64) -> i64 attributes {rlx.scalar_loops} {")
    declared = scalar.replace("{rlx.scalar_loops} {\n", "{rlx.scalar_loops}\n", 1)
    assert llvm_passes(light, 2) == LIGHT_PASSES and "instcombine" in LIGHT_PASSES
    assert llvm_passes(SPLIT_TEXT, 2) == "default<O2>"  # not from the fast pipeline
    assert llvm_passes(scalar, 2) == "default<O2>" and llvm_passes(scalar, 3) == "default<O3>"
    assert llvm_passes(declared, 2) == LIGHT_PASSES
    parallel = scalar.replace("{rlx.scalar_loops}", "{rlx.parallel_loops, rlx.scalar_loops}")
    assert llvm_passes(parallel, 2) == PARALLEL_PASSES and "loop-vectorize" in PARALLEL_PASSES
    mixed = parallel.replace("@big(%arg0: i64) -> i64 {",
                             "@big(%arg0: i64) -> i64 attributes {rlx.scalar_loops} {")
    assert llvm_passes(mixed, 2) == "default<O2>"  # one function needs the whole pipeline
    assert llvm_passes(parallel, 1) == "default<O1>"
    assert llvm_passes(light + "llvm.intr.coro.begin", 2) == "default<O2>"
    assert llvm_passes(light, 1) == "default<O1>"
    monkeypatch.setenv("RLX_LLVM_LIGHT", "0")
    assert llvm_passes(light, 2) == "default<O2>"


def test_constant_powers_are_not_libm_calls_per_element(fresh):
    """``x ** 2`` reaches LLVM as a vector ``llvm.intr.pow``: the light pass list keeps
    InstCombine, which makes it ``x * x`` (without it every element called ``powf``)."""
    x = np.linspace(-2, 2, 4096, dtype=np.float32).reshape(64, 64)
    traced = rlx.jit(lambda x: (x ** 2).sum()).lower(x)
    f = jit.compile(traced.module, entry=traced.name)
    assert "llvm.intr.pow" in f.engine.llvm_text
    assert not any(b"powf" in code for code in f.engine.objects)
    np.testing.assert_allclose(f(x)[0], (x.astype(np.float64) ** 2).sum(), rtol=1e-5)


def test_parts_never_mix_scalar_and_vectorized_functions():
    """Even one job compiles a scalar-loop function apart from the others (they get
    different pipelines); the parts still link back into one program."""
    from rlx_mlir.lowering.llvm_hints import PARALLEL_LOOPS, SCALAR_LOOPS

    text = SPLIT_TEXT.replace("@small(%arg0: i64) -> i64 {",
                              f"@small(%arg0: i64) -> i64 attributes {{{SCALAR_LOOPS}}} {{")
    parts = native.split_module_text(text, 1)
    assert len(parts) == 2
    kinds = [[n for n in ("big", "small", "middle") if f"@{n}(%arg0: i64) -> i64 " in p
              and p.split(f"@{n}(%arg0: i64) -> i64 ")[1].split("\n")[0].endswith("{")]
             for p in parts]
    assert kinds == [["big", "middle"], ["small"]]
    three = text.replace("@middle(%arg0: i64) -> i64 {",
                         f"@middle(%arg0: i64) -> i64 attributes {{{PARALLEL_LOOPS}, {SCALAR_LOOPS}}} {{")
    assert len(native.split_module_text(three, 1)) == 3  # vectorized, parallel, scalar
    big = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(
        native.ObjectJit(native.compile_objects(text, 1)).lookup("big"))
    assert big(3) == 36


GLUE_TEXT = """module {
  llvm.func @entry(%arg0: i64) -> i64 {
    %0 = llvm.call @triangle(%arg0) : (i64) -> i64
    %1 = llvm.call @triangle(%0) : (i64) -> i64
    llvm.return %1 : i64
  }
  llvm.func @triangle(%arg0: i64) -> i64 {
    %0 = llvm.mlir.constant(0 : i64) : i64
    %1 = llvm.mlir.constant(1 : i64) : i64
    llvm.br ^bb1(%0, %0 : i64, i64)
  ^bb1(%2: i64, %3: i64):
    %4 = llvm.icmp "sle" %2, %arg0 : i64
    llvm.cond_br %4, ^bb2, ^bb3
  ^bb2:
    %5 = llvm.add %3, %2 : i64
    %6 = llvm.add %2, %1 : i64
    llvm.br ^bb1(%6, %5 : i64, i64)
  ^bb3:
    llvm.return %3 : i64
  }
}
"""


def test_glue_functions_get_machine_code_at_o0():
    """A function of one block of calls and plumbing is glue: its own part, no passes,
    machine code at O0; the function with a loop keeps the usual plan; both link. A
    straight-line function doing arithmetic of its own is not glue (called in a loop, O0
    code would run every iteration)."""
    from rlx_mlir.lowering.llvm_hints import LIGHT_PASSES, codegen_plan

    parts = native.split_module_text(GLUE_TEXT.replace("module {", "module attributes {rlx.light_llvm} {"), 1)
    assert [p.startswith(GLUE_PART) for p in parts] == [False, True]
    assert "llvm.func @triangle(%arg0: i64) -> i64 {" in parts[0]
    assert "llvm.func @entry(%arg0: i64) -> i64 {" in parts[1]
    assert codegen_plan(parts[1], 2) == ("default<O0>", 0)
    assert codegen_plan(parts[0], 2) == (LIGHT_PASSES, 2)
    entry = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(
        native.ObjectJit(native.compile_objects(GLUE_TEXT, 1)).lookup("entry"))
    assert entry(3) == 21  # triangle(triangle(3)) = triangle(6)
    only_glue = GLUE_TEXT.split("  llvm.func @triangle")[0] + (
        "  llvm.func @triangle(%arg0: i64) -> i64 {\n"
        "    %0 = llvm.call @entry(%arg0) : (i64) -> i64\n"
        "    llvm.return %0 : i64\n  }\n}\n")
    assert native.split_module_text(only_glue, 1) == [only_glue]  # all glue: compiled whole
    cut = native._cut_top_level(SPLIT_TEXT)
    assert native._is_glue(cut.definitions["small"]) is False  # an llvm.or of its own
    arithmetic = GLUE_TEXT.replace("%1 = llvm.call @triangle(%0)", "%1 = llvm.fadd %0, %0")
    assert not native._is_glue(native._cut_top_level(arithmetic).definitions["entry"])


LOOPS = """func.func @loops(%a: memref<8x16xf32>, %out: memref<8x16xf32>, %acc: memref<8xf32>,
                  %idx: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %s = memref.subview %out[%i, 0] [1, 16] [1, 1] : memref<8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
      %k = arith.addi %j, %c1 : index
      %m = arith.remui %k, %c16 : index
      %v = memref.load %a[%i, %m] : memref<8x16xf32>
      memref.store %v, %s[%j] : memref<16xf32, strided<[1], offset: ?>>
    }
  }
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %a[%i, %j] : memref<8x16xf32>
      %s = memref.load %acc[%i] : memref<8xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %acc[%i] : memref<8xf32>
    }
  }
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %c0f, %acc[%c0] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %j = memref.load %idx[%i] : memref<8xindex>
    %v = memref.load %acc[%j] : memref<8xf32>
    memref.store %v, %acc[%j] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.copy %a, %out : memref<8x16xf32> to memref<8x16xf32>
  }
  return
}"""


def test_loops_writing_elements_apart_are_told_from_reductions():
    """A rotation of rows (each store addressed through the loop's variable, also via a
    subview) writes elements apart at both depths; a row sum's inner loop stores to one
    element per row; a loop of one iteration counts as apart; a copy inside does not, nor
    a scatter (its address is read from memory and may repeat)."""
    from mlir import ir

    from rlx_mlir.lowering.llvm_hints import _writes_apart
    from rlx_mlir.lowering.schedules import ops_named

    text = LOOPS.replace("memref.store %c0f", "%c0f = arith.constant 0.0 : f32\n    memref.store %c0f")
    with ir.Context():
        module = ir.Module.parse(text)
        loops = ops_named(module, "scf.for")
        outer_rotate, inner_rotate, outer_sum, inner_sum, one, scatter, copying = loops
        assert _writes_apart(outer_rotate) and _writes_apart(inner_rotate)
        assert _writes_apart(outer_sum) and not _writes_apart(inner_sum)
        assert _writes_apart(one) and not _writes_apart(copying) and not _writes_apart(scatter)


def test_a_long_address_chain_is_followed_without_recursion():
    from mlir import ir

    from rlx_mlir.lowering.llvm_hints import _writes_apart
    from rlx_mlir.lowering.schedules import ops_named

    chain = "\n".join(f"      %a{k + 1} = arith.addi %a{k}, %c0 : index" for k in range(3000))
    text = f"""func.func @f(%out: memref<8xf32>, %x: f32) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {{
      %a0 = arith.addi %i, %c0 : index
{chain}
      memref.store %x, %out[%a3000] : memref<8xf32>
  }}
  return
}}"""
    with ir.Context():
        module = ir.Module.parse(text)  # (kept: its ops live as long as it does)
        assert _writes_apart(ops_named(module, "scf.for")[0])


def test_a_part_of_parallel_loops_compiles_with_its_passes():
    """The pass list of ``rlx.parallel_loops`` parts is one LLVM 22 accepts: the part
    compiles to object code and runs."""
    from rlx_mlir.lowering.llvm_hints import (
        PARALLEL_LOOPS,
        PARALLEL_PASSES,
        SCALAR_LOOPS,
        llvm_passes,
    )

    text = SPLIT_TEXT.replace("module {", "module attributes {rlx.light_llvm} {", 1).replace(
        "@big(%arg0: i64) -> i64 {",
        f"@big(%arg0: i64) -> i64 attributes {{{PARALLEL_LOOPS}, {SCALAR_LOOPS}}} {{")
    parts = native.split_module_text(text, 1)
    assert [llvm_passes(p, 2) for p in parts].count(PARALLEL_PASSES) == 1
    objects = [native.object_code(part, 2) for part in parts]
    big = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(native.ObjectJit(objects).lookup("big"))
    assert big(3) == 36
