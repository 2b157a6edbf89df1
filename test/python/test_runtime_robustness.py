"""The runtime under bad conditions: fork() after the async runtime started, damaged disk
cache entries (a miss, rewritten), absurd knob values, failed cache writes, and
``compile`` of a traced function."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.lowering.schedules import num_threads
from rlx_mlir.runtime import jit, native, threads

TEXT = """func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = rlx.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
func.func @g(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = rlx.tanh %x : (tensor<64xf32>) -> tensor<64xf32>
  func.return %y : tensor<64xf32>
}"""
X = np.arange(4, dtype=np.float32)


def run_script(script: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter (a hang fails the test after ``timeout`` s)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env})




# ---------------------------------------------------------------- fork()

FORK_SCRIPT = """
    import json, multiprocessing as mp, queue, warnings
    import numpy as np, rlx_mlir as rlx

    def matmul(name, scale):
        b = rlx.Builder(name)
        x, w = b.input("x", (256, 256)), b.input("w", (256, 256))
        b.ret(b.matmul(x, w) * scale)
        return rlx.compile(b.module)

    a = np.random.default_rng(0).random((256, 256), np.float32)
    f = matmul("f", 1.0)
    assert np.allclose(f(a, a)[0], a @ a, rtol=1e-4)  # the runtime's threads start

    def child(out):
        try:
            out.put(("parent's function", bool(np.allclose(f(a, a)[0], a @ a, rtol=1e-4))))
        except rlx.RlxError as error:
            out.put(("parent's function", str(error)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = matmul("g", 2.0)
            ok = bool(np.allclose(g(a, a)[0], 2 * (a @ a), rtol=1e-4))
        out.put(("new compile", ok, "mlirAsyncRuntime" in g.engine.llvm_text,
                 [str(w.message) for w in caught]))

    context = mp.get_context("fork")
    out = context.Queue()
    process = context.Process(target=child, args=(out,), daemon=True)
    process.start()
    try:
        print(json.dumps({"async": "mlirAsyncRuntime" in f.engine.llvm_text,
                          "child": [out.get(timeout=60), out.get(timeout=60)]}))
    except queue.Empty:
        print(json.dumps({"hung": True}))
    finally:
        process.kill()
    assert np.allclose(f(a, a)[0], a @ a, rtol=1e-4)  # the parent's runtime still works
"""


def test_a_forked_child_gets_a_clear_error_from_async_code_and_compiles_single_threaded():
    """The async runtime's worker threads do not survive fork(): calling the parent's code
    in the child is an RlxError (it used to wait forever) and a new compile there runs
    on one thread, correctly."""
    done = run_script(FORK_SCRIPT, RLX_THREADING="async", RLX_NUM_THREADS="2",
                      RLX_CACHE_DIR="off")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report.get("async") and "hung" not in report
    (_, error), (_, ok, uses_async, caught) = report["child"]
    assert "@f runs on MLIR's async runtime" in error and "fork()" in error
    assert "RLX_THREADING=openmp" in error and "'spawn'" in error
    assert ok and not uses_async
    assert any("compiling single-threaded" in message for message in caught)


def test_openmp_code_runs_in_a_forked_child():
    done = run_script(FORK_SCRIPT, RLX_THREADING="openmp", RLX_NUM_THREADS="2",
                      RLX_CACHE_DIR="off")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["child"] == [["parent's function", True], ["new compile", True, False, []]]


def test_after_fork_the_lost_async_runtime_is_refused_before_native_code(monkeypatch):
    monkeypatch.setenv("RLX_THREADING", "async")
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    monkeypatch.setitem(threads._async, "lost", True)
    monkeypatch.setitem(threads._async, "warned", True)
    with pytest.raises(rlx.RlxError, match="'spawn' start method"):
        threads.enter_async_runtime("step")
    assert num_threads() == 1
    monkeypatch.setenv("RLX_THREADING", "openmp")  # OpenMP restarts its workers
    assert num_threads() == 2


# ---------------------------------------------------------------- damaged cache entries


def entry(folder):
    """The cache entry's JSON path and content (one entry in ``folder``)."""
    (meta,) = folder.glob("*.json")
    return meta, json.loads(meta.read_text())


def truncate(folder, pattern: str, keep: int) -> None:
    (path,) = folder.glob(pattern)
    path.write_bytes(path.read_bytes()[:keep])


DAMAGE = {
    "json {}": lambda d: entry(d)[0].write_text("{}"),
    "json []": lambda d: entry(d)[0].write_text("[]"),
    "json without signatures": lambda d: entry(d)[0].write_text(json.dumps(
        {k: v for k, v in entry(d)[1].items() if k != "signatures"})),
    "json truncated": lambda d: truncate(d, "*.json", 40),
    "text truncated": lambda d: truncate(d, "*.llvm.mlir", 200),
    "text and object truncated": lambda d: (truncate(d, "*.llvm.mlir", 200),
                                            truncate(d, "*.0.o", 100)),
    "text missing": lambda d: next(d.glob("*.llvm.mlir")).unlink(),
}


def compile_checked() -> jit.Executable:
    f = jit.compile(TEXT)
    np.testing.assert_array_equal(f(X, X)[0], 2 * X)
    return f


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(fresh, damage):
    compile_checked()
    _, good = entry(fresh)
    DAMAGE[damage](fresh)
    jit.clear_memory_cache()
    again = compile_checked()
    assert "disk_cache_hit" not in again.engine.timings  # lowered from the source again
    assert entry(fresh)[1] == good
    jit.clear_memory_cache()
    healed = compile_checked()
    assert healed.engine.native_code == "cached-objects"


def test_a_damaged_entry_does_not_fail_a_new_process(tmp_path):
    script = f"""
        import numpy as np, rlx_mlir as rlx
        f = rlx.compile({TEXT!r})
        print(f(np.ones(4, np.float32), np.ones(4, np.float32))[0].tolist(),
              f.engine.native_code)
    """
    assert run_script(script, RLX_CACHE_DIR=str(tmp_path)).returncode == 0
    entry(tmp_path)[0].write_text("{}")
    runs = [run_script(script, RLX_CACHE_DIR=str(tmp_path)) for _ in range(2)]
    assert [r.stdout.split()[-1] for r in runs] == ["llvm", "cached-objects"], \
        runs[0].stderr


OBJECT_DAMAGE = {
    "object truncated": lambda d: truncate(d, "*.0.o", 100),
    "object missing": lambda d: next(d.glob("*.0.o")).unlink(),
    "objects not a list": lambda d: entry(d)[0].write_text(json.dumps({**entry(d)[1],
                                                                      "objects": "x"})),
    "objects of another host": lambda d: entry(d)[0].write_text(json.dumps(
        {**entry(d)[1], "host": "some-other-cpu"})),
}


@pytest.mark.parametrize("damage", OBJECT_DAMAGE)
def test_objects_compiled_again_are_written_back(fresh, damage):
    """A hit whose objects do not load (or are for another CPU) compiles the cached text and
    rewrites the entry, so the next process loads objects again."""
    compile_checked()
    OBJECT_DAMAGE[damage](fresh)
    jit.clear_memory_cache()
    again = compile_checked()
    assert "disk_cache_hit" in again.engine.timings
    assert again.engine.native_code == "llvm"
    assert entry(fresh)[1]["host"] == native.host_id()
    jit.clear_memory_cache()
    assert compile_checked().engine.native_code == "cached-objects"


def test_a_failed_cache_write_leaves_no_temporary_file(tmp_path):
    """A write beyond the file size limit fails with EFBIG (as a full disk does with
    ENOSPC): no entry and no ``.tmp-*`` file remain, and the compile still works."""
    script = f"""
        import os, resource, signal
        import numpy as np, rlx_mlir as rlx
        from rlx_mlir.runtime import jit
        f = rlx.compile({TEXT!r})
        os.environ["RLX_CACHE_DIR"] = {str(tmp_path / "full")!r}
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
        jit._store_on_disk(f.engine)
        print(f(np.ones(4, np.float32), np.ones(4, np.float32))[0].tolist())
    """
    done = run_script(script, RLX_CACHE_DIR=str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 2.0, 2.0, 2.0]"
    assert [p.name for p in (tmp_path / "full").iterdir()] == []


# ---------------------------------------------------------------- knobs


def test_a_huge_codegen_job_count_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RLX_CODEGEN_JOBS", "100000000000")
    with pytest.raises(rlx.RlxError, match=r"RLX_CODEGEN_JOBS='100000000000': expected an "
                                           r"integer from 0 to 1024"):
        native.codegen_jobs("")


def test_a_module_is_cut_into_at_most_one_part_per_function(fresh, monkeypatch):
    assert native._balanced({"a": 3, "b": 1}, 10**11) == [["a"], ["b"]]
    monkeypatch.setenv("RLX_CODEGEN_JOBS", str(native.MAX_JOBS))
    f = jit.compile(TEXT)
    definitions = native._cut_top_level(f.engine.llvm_text).definitions
    assert f.engine.native_code == "llvm"
    groups = native._codegen_groups(definitions, native.MAX_JOBS)
    assert all(len(names) == 1 for names, glue in groups if not glue)  # glue shares one part
    assert len(f.engine.objects) == len(groups) == f.engine.timings["codegen_jobs"]
    assert len(groups) <= len(definitions)
    np.testing.assert_array_equal(f(X, X)[0], 2 * X)
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(jit.compile(TEXT, entry="g")(x)[0], np.tanh(x), atol=1e-6)


@pytest.mark.parametrize("value", ["2147483648", "4294967296", "1025"])
def test_thread_counts_beyond_the_limit_are_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("RLX_NUM_THREADS", value)
    with pytest.raises(rlx.RlxError, match=f"RLX_NUM_THREADS='{value}': expected an integer "
                                           "from 1 to 1024"):
        jit.compile(TEXT)


def test_the_largest_thread_count_is_accepted(monkeypatch):
    monkeypatch.setenv("RLX_NUM_THREADS", str(threads.MAX_THREADS))
    assert num_threads() == threads.MAX_THREADS


# ---------------------------------------------------------------- compile(Traced)


def test_compile_accepts_what_lower_returns():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    traced = rlx.jit(lambda x: x * 2).lower(x)
    np.testing.assert_array_equal(rlx.compile(traced)(x)[0], x * 2)
    loss = rlx.grad(lambda x: (rlx.nn.tanh(x) * x).sum()).lower(x)
    np.testing.assert_allclose(rlx.compile(loss)(x)[0], (np.tanh(x) * x).sum(), rtol=1e-5)
    gradient = rlx.compile(loss, entry=f"{loss.name}_grad")
    want = np.tanh(x) + x * (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(gradient(x, np.float32(1))[1], want, rtol=1e-5)


# ---------------------------------------------------------------- symbol names

LIBM_NAMES_SCRIPT = """
    import sys
    import numpy as np, rlx_mlir as rlx
    for name in sys.argv[1:]:
        fn = lambda a: rlx.nn.exp(a) + rlx.nn.tanh(a) * rlx.nn.log(a) + rlx.nn.gelu(a) + a ** 1.5
        fn.__name__ = fn.__qualname__ = name
        for dtype in (np.float32, np.float64):
            a = np.array([0.5, 2.0], dtype)
            want = np.exp(a) + np.tanh(a) * np.log(a) + a ** 1.5
            got = rlx.jit(fn)(a) - rlx.jit(rlx.nn.gelu)(a)
            np.testing.assert_allclose(got, want, rtol=1e-5)
    print("ok")
"""


def test_functions_named_like_c_library_routines_do_not_replace_them():
    """``def exp(a)`` compiled natively: the generated code's own calls to libm's exp (and
    malloc, free ...) still reach libm, not the user's function (which used to recurse
    until the stack overflowed)."""
    names = ["exp", "expf", "log", "logf", "tanh", "pow", "powf", "erf", "malloc", "free",
             "memcpy", "main"]
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(LIBM_NAMES_SCRIPT), *names],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "RLX_CACHE_DIR": "off"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_rlx_run_of_a_function_named_exp(tmp_path):
    source = tmp_path / "exp.mlir"
    source.write_text("func.func @exp(%x: tensor<2xf64>) -> tensor<2xf64> {\n"
                      "  %y = rlx.exp %x : (tensor<2xf64>) -> tensor<2xf64>\n"
                      "  func.return %y : tensor<2xf64>\n}\n")
    np.save(tmp_path / "x.npy", np.array([0.0, 1.0]))
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "rlx-run"),
                           str(source), "--input", f"x={tmp_path / 'x.npy'}"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RLX_CACHE_DIR": "off"})
    assert done.returncode == 0, done.stderr
    assert "2.718282" in done.stdout
