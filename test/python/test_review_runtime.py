"""Review of the runtime and the jit caching layer: fork() while another thread holds a
lock, static arguments that compare equal but trace differently, namedtuples, keyword
arguments to ``lower``, dict keys that cannot be sorted, Python ints at the edges of
int32, and located argument errors of compiled executables."""

import collections
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rlx_mlir as rlx

X = np.arange(4, dtype=np.float32)


def run_script(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


# ---------------------------------------------------------------- fork()


def test_a_child_forked_while_another_thread_holds_a_lock_does_not_hang():
    """A thread of the parent in a call (the executable's lock) or in a compile (the cache
    lock) when another thread forks: the child's call and compile must not wait forever
    for a lock no thread of the child will release."""
    script = """
        import os, signal, threading
        import numpy as np, rlx_mlir as rlx
        from rlx_mlir.runtime import jit

        f = rlx.jit(lambda x: x * 2.0)
        x = np.arange(4, dtype=np.float32)
        f(x)
        (executable,) = [e for e in jit._EXECUTABLES.values() if e.name == "fn"]
        held, release = threading.Barrier(3), threading.Event()

        def hold(lock):
            with lock:
                held.wait()
                release.wait()

        threads = [threading.Thread(target=hold, args=(lock,))
                   for lock in (executable._lock, jit._CACHE_LOCK)]
        for t in threads:
            t.start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)  # a hang ends the child with SIGALRM
            called = f(x).tolist()
            g = rlx.jit(lambda x: x + 1.0)(x).tolist()  # a new compile
            print("child", called, g, flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        release.set()
        for t in threads:
            t.join()
        print("status", status)
    """
    done = run_script(script)
    assert done.returncode == 0, done.stderr
    assert "child [0.0, 2.0, 4.0, 6.0] [1.0, 2.0, 3.0, 4.0]" in done.stdout, done.stdout
    assert "status 0" in done.stdout


# ---------------------------------------------------------------- static arguments


def test_static_arguments_equal_in_python_but_of_other_types_are_traced_apart():
    """``2 == 2.0 == True`` (and their hashes are equal), but ``x * 2.0`` is a float
    array: each type gets its own trace, as in JAX."""
    f = rlx.jit(lambda x, n: x * n, static_argnums=1)
    xi = np.arange(3, dtype=np.int32)
    assert f(xi, 2).dtype == np.int32
    result = f(xi, 2.0)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])
    assert f(xi, True).dtype == np.int32
    pair = rlx.jit(lambda x, ns: x * ns[0], static_argnums=1)
    assert pair(xi, (2, 1)).dtype == np.int32
    assert pair(xi, (2.0, 1)).dtype == np.float32


# ---------------------------------------------------------------- pytrees

Params = collections.namedtuple("Params", "w b")


def test_namedtuples_are_pytree_nodes_that_keep_their_type():
    params = Params(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
    f = rlx.jit(lambda p, x: Params(x @ p.w + p.b, p.b * 2.0))
    x = np.ones((1, 2), np.float32)
    out = f(params, x)
    assert type(out) is Params
    np.testing.assert_array_equal(out.w, x @ params.w + params.b)
    np.testing.assert_array_equal(out.b, params.b * 2)
    assert type(f(params, x)) is Params  # the cached call too
    g = rlx.grad(lambda p: (p.w * p.b).sum())(params)
    assert type(g) is Params
    np.testing.assert_array_equal(g.w, np.broadcast_to(params.b, (2, 3)))


def test_dict_keys_that_cannot_be_sorted_are_a_located_error():
    f = rlx.jit(lambda d: d[1])
    with pytest.raises(rlx.RlxError, match=r"test_review_runtime.py:\d+:\d+: error: the keys"):
        f({1: X, "a": X})
    with pytest.raises(rlx.RlxError, match="cannot be sorted"):
        rlx.jit(lambda x: {1: x, "a": x})(X)


def test_lower_takes_keyword_arguments_like_a_call():
    f = rlx.jit(lambda x, scale: x * scale)
    traced = f.lower(X, scale=np.float32(2))
    np.testing.assert_array_equal(rlx.compile(traced)(X, np.float32(2))[0], 2 * X)


# ---------------------------------------------------------------- Python ints


def test_python_ints_at_the_edges_of_int32():
    f = rlx.jit(lambda n: n + 0)
    assert f(-2**31) == -2**31  # fits int32: was refused (|n| > max)
    assert f(2**31 - 1) == 2**31 - 1
    for outside in (-2**63, 2**31, -2**31 - 1, [-2**63]):  # -2**63 was wrapped to 0
        with pytest.raises(rlx.RlxError, match="does not fit int32"):
            rlx.jit(lambda n: n)(outside)


# ---------------------------------------------------------------- compiled executables


def test_argument_errors_of_an_executable_are_located_at_the_call():
    run = rlx.compile(rlx.jit(lambda x: x * 2.0).lower(X))
    with pytest.raises(rlx.RlxError, match=r"test_review_runtime.py:\d+:1: error: .*shape"):
        run(np.ones(5, np.float32))
    with pytest.raises(rlx.RlxError, match=r"test_review_runtime.py:\d+:1: error: .*dtype"):
        run(X.astype(np.float64))


def test_calls_from_several_threads_run_on_spare_slots_and_agree_with_numpy():
    """A call made while another thread is inside the same function runs at the same time
    on spare descriptors (it used to wait for the other call to finish)."""
    import threading

    run = rlx.compile("""
func.func @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = rlx.matmul %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}""")
    rng = np.random.default_rng(3)
    pairs = [(rng.standard_normal((64, 64), np.float32), rng.standard_normal((64, 64), np.float32))
             for _ in range(4)]
    done = []
    with run._lock:  # as if another thread were in a call: this one must not wait for it
        caller = threading.Thread(target=lambda: done.append(run(*pairs[0])[0]))
        caller.start()
        caller.join(timeout=60)
        assert done, "the call waited for the other one"
    np.testing.assert_allclose(done[0], pairs[0][0] @ pairs[0][1], rtol=1e-4, atol=1e-4)
    assert run._spares, "the call did not run on a spare slot"
    errors = []

    def worker(a, b):
        for _ in range(50):
            (c,) = run(a, b)
            if not np.allclose(c, a @ b, rtol=1e-4, atol=1e-4):
                errors.append("wrong result")

    threads = [threading.Thread(target=worker, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
