"""The hand-off to upstream MLIR 22 and its pass pipeline down to the LLVM dialect.

    text = handoff_text(lowered_xdsl_module)      # generic form, upstream-clean
    llvm = lower_to_llvm(rlx_module)              # LLVM-dialect text mlir-opt verifies

Two stage lists: ``fast`` (default: transform-dialect schedules from
:mod:`rlx_mlir.lowering.schedules` -- packed, vectorized matmuls, vectorized fused
elementwise/reduction ops, 2-thread outer tiles) and ``naive`` (plain scalar loops, for
debugging): ``RLX_PIPELINE=naive`` or ``lower_to_llvm(m, "naive")``.
``RLX_PRINT_AFTER_ALL=1`` (or ``rlx-opt --print-after-all-upstream``) prints the IR after
each stage to stderr.
"""

from __future__ import annotations

import heapq
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, BoolAttr, DictionaryAttr, ModuleOp, UnitAttr

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.lowering.bool_storage import widen_bool_storage
from rlx_mlir.lowering.handoff_printer import generic_text
from rlx_mlir.lowering.light_dialects import use_light_dialects
from rlx_mlir.runtime.process_settings import collector_paused, gil_switch_interval
from rlx_mlir.runtime.timing import Phases, phase


@dataclass(frozen=True)
class Stage:
    """One named step of the upstream pipeline.

    ``passes`` is a ``PassManager`` pipeline string (run inside ``builtin.module(...)``);
    ``apply``, if set, is a Python callable run on the upstream module instead (transform
    dialect schedules, see :mod:`rlx_mlir.lowering.schedules`), and ``passes`` then only
    names it (with a version) for the cache key.
    """

    name: str
    passes: str
    apply: Callable[[Any], None] | None = field(default=None, compare=False)


_LOOPS = "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,canonicalize"
_MATH = ("func.func(convert-complex-to-standard),convert-math-to-funcs,convert-math-to-llvm,"
         "convert-math-to-libm")
_LLVM = ("expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-to-llvm,"
         "reconcile-unrealized-casts,canonicalize,cse")


def _copy_repeated_results(module: Any) -> None:
    """A buffer returned twice gets a copy per repeat (:func:`schedules.copy_repeated_results`)."""
    from rlx_mlir.lowering.schedules import copy_repeated_results

    copy_repeated_results(module)


NAIVE_PIPELINE: list[Stage] = [
    Stage("fuse", "func.func(convert-elementwise-to-linalg,linalg-fuse-elementwise-ops),"
          "canonicalize,cse"),
    Stage("bufferize",
          "one-shot-bufferize{bufferize-function-boundaries "
          "function-boundary-type-conversion=identity-layout-map},canonicalize,cse"),
    Stage("distinct-results", "python:copy-repeated-results", _copy_repeated_results),
    Stage("out-params",
          "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
          "canonicalize"),
    Stage("deallocate", "buffer-deallocation-pipeline"),
    Stage("loops", _LOOPS),
    Stage("math", _MATH),
    Stage("llvm", _LLVM),
]
"""Plain scalar loops: the debugging / reference pipeline (``RLX_PIPELINE=naive``)."""


def _fast_pipeline() -> list[Stage]:
    from rlx_mlir.lowering import contractions as C
    from rlx_mlir.lowering import dedupe as D
    from rlx_mlir.lowering import fusion as F
    from rlx_mlir.lowering import llvm_hints as H
    from rlx_mlir.lowering import outline as O
    from rlx_mlir.lowering import schedules as S
    from rlx_mlir.lowering import split as P

    return [
        Stage("fuse", f"python:{F.FUSION_VERSION}", F.apply_fusion),
        Stage("contractions", f"python:{C.CONTRACTION_VERSION}:{C.enabled()}",
              C.apply_contractions),
        Stage("schedule", f"transform:{S.SCHEDULE_VERSION}:threads={S.num_threads()}"
              f":skip={','.join(sorted(S.skipped_kinds()))}", S.apply_schedules),
        Stage("bufferize", f"transform:{S.SCHEDULE_VERSION}:one-shot-bufferize",
              S.apply_bufferize),
        Stage("out-params",
              "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}"),
        Stage("declared-out-params", "python:declared-results-to-out-params",
              P.declared_results_to_out_params),
        Stage("memplan", S.MEMPLAN),
        Stage("forall-temporaries", "python:heap-forall-temporaries",
              S.heap_parallel_temporaries),
        Stage("stack-budget", f"python:heap-past-stack-budget={S.STACK_BUDGET}",
              S.heap_past_stack_budget),
        Stage("outline", "python:outline-kernels", O.outline_kernels),
        Stage("merge-kernels", "python:merge-identical-functions", D.merge_identical_functions),
        Stage("vector-lowering", f"transform:{S.SCHEDULE_VERSION}:vector-lowering",
              S.apply_vector_lowering),
        Stage("threads", S.threads_passes()),
        Stage("dedupe", "python:merge-identical-functions", D.merge_identical_functions),
        # From here on the module holds many functions: per-function passes run nested
        # (``func.func(...)``) so the pass manager spreads them over the cores.
        Stage("loops", "func.func(scf-forall-to-for,canonicalize,cse,"
              "convert-vector-to-scf{full-unroll=true},convert-linalg-to-loops,lower-affine)"),
        Stage("no-unroll", H.unroll_stage_name(), H.annotate_loops),
        Stage("cf", "func.func(convert-scf-to-cf,canonicalize)"),
        Stage("math", "func.func(convert-complex-to-standard),convert-math-to-funcs,"
              "func.func(convert-math-to-llvm),convert-math-to-libm"),
        Stage("llvm", "func.func(convert-vector-to-llvm{reassociate-fp-reductions=true},"
              "expand-strided-metadata,lower-affine),finalize-memref-to-llvm,convert-to-llvm,"
              "reconcile-unrealized-casts,llvm.func(canonicalize,cse)"),
        Stage("finish", "python:noinline-parallel-bodies,loop-annotation-property",
              H.finish_llvm_module),
    ]


PIPELINES: dict[str, Callable[[], list[Stage]]] = {
    "fast": _fast_pipeline,
    "naive": lambda: list(NAIVE_PIPELINE),
}


def default_pipeline_name() -> str:
    """``RLX_PIPELINE`` (``fast`` or ``naive``), default ``fast``."""
    name = os.environ.get("RLX_PIPELINE", "").strip() or "fast"
    if name not in PIPELINES:
        raise RlxError(f"RLX_PIPELINE={name!r}: expected one of {', '.join(PIPELINES)}")
    return name


def pipeline_stages(pipeline: str | Sequence[Stage] | None = None) -> list[Stage]:
    """The stages of ``pipeline`` (a name, a stage list, or None for the default)."""
    if pipeline is None:
        pipeline = default_pipeline_name()
    if isinstance(pipeline, str):
        if pipeline not in PIPELINES:
            raise RlxError(f"unknown pipeline {pipeline!r}: expected one of {', '.join(PIPELINES)}")
        return PIPELINES[pipeline]()
    return list(pipeline)


PIPELINE: list[Stage] = PIPELINES.get(os.environ.get("RLX_PIPELINE", "").strip() or "fast",
                                      _fast_pipeline)()
"""The default stage list at import time (``RLX_PIPELINE``, default fast)."""


def pipeline_spec(stages: str | Sequence[Stage] | None = None) -> str:
    """The whole pipeline as one string (part of the compile-cache key)."""
    from rlx_mlir.lowering.split import split_min_ops

    return ";".join([*(f"{s.name}={s.passes}" for s in pipeline_stages(stages)),
                     f"split={split_compiles()}:{split_min_ops()}"])


def split_compiles() -> bool:
    """Whether a big function is cut in two halves lowered on two threads
    (:mod:`rlx_mlir.lowering.split`): with two or more threads (``RLX_NUM_THREADS``) on
    OpenMP, unless ``RLX_SPLIT_COMPILE`` is ``0``, ``false``, ``off`` or ``no``. (On the
    async runtime each half would define its own ``parallel_compute_fn`` and
    ``async_execute_fn`` under the same names.)"""
    from rlx_mlir.lowering.schedules import num_threads
    from rlx_mlir.runtime.threads import threading_runtime

    setting = os.environ.get("RLX_SPLIT_COMPILE", "1").strip().lower()
    return num_threads() > 1 and setting not in ("0", "false", "off", "no") \
        and threading_runtime() == "openmp"


# ---------------------------------------------------------------- hand-off text


def prepare_for_handoff(module: ModuleOp, in_place: bool = False) -> ModuleOp:
    """A clone (or ``module`` itself, ``in_place``): bools stored as i8, rlx arg attributes
    and empty attr lists gone, entries C-callable."""
    clone = module if in_place else module.clone()
    widen_bool_storage(clone)
    for f in clone.ops:
        if isinstance(f, func.FuncOp):
            _clean_func(f)
    return clone


def _clean_func(f: func.FuncOp) -> None:
    public = f.sym_visibility is None or f.sym_visibility.data == "public"
    f.arg_attrs = _clean_attr_list(f.arg_attrs, len(f.function_type.inputs), read_only=public)
    f.res_attrs = _clean_attr_list(f.res_attrs, len(f.function_type.outputs))
    for name in [k for k in f.attributes if k.startswith("rlx.")]:
        del f.attributes[name]
    if public and f.body.blocks:
        f.attributes["llvm.emit_c_interface"] = UnitAttr()


def _clean_attr_list(attrs: ArrayAttr | None, count: int,
                     read_only: bool = False) -> ArrayAttr | None:
    """Drop ``rlx.*`` entries; ``read_only`` marks arguments ``bufferization.writable = false``
    so the compiled code never writes into the caller's numpy arrays."""
    dicts = [d.data for d in attrs.data] if attrs is not None else [{}] * count  # type: ignore[union-attr]
    cleaned = [{k: v for k, v in d.items() if not k.startswith("rlx.")} for d in dicts]
    if read_only:
        cleaned = [{**d, "bufferization.writable": BoolAttr.from_bool(False)} for d in cleaned]
    if not any(cleaned):
        return None
    return ArrayAttr([DictionaryAttr(d) for d in cleaned])


def handoff_text(lowered: ModuleOp, in_place: bool = False) -> str:
    """Generic-form text of an already lowered module, ready for ``mlir.ir.Module.parse``
    (``in_place``: ``lowered`` is a scratch copy the hand-off may change)."""
    leftover = next((op for op in lowered.walk() if op.name.startswith("rlx.")), None)
    if leftover is not None:
        raise RlxError(f"'{leftover.name}' was not lowered before the hand-off", op=leftover)
    return generic_text(prepare_for_handoff(lowered, in_place))


# ---------------------------------------------------------------- upstream passes

StageCallback = Callable[[Stage, str], None]


def print_after_all_requested() -> bool:
    return os.environ.get("RLX_PRINT_AFTER_ALL", "") not in ("", "0")


def verify_each_pass() -> bool:
    """``RLX_VERIFY_EACH=1``: verify the module after every upstream pass (for debugging a
    pass that breaks the IR). By default the module is verified once, after the last
    stage: per-pass verification was a fifth of the passes' time (char-LM gradient 0.16 s)."""
    return os.environ.get("RLX_VERIFY_EACH", "") not in ("", "0")


def _stderr_dump(stage: Stage, text: str) -> None:
    print(f"// -----// IR after upstream stage '{stage.name}' ({stage.passes}) //----- //",
          file=sys.stderr)
    print(text, file=sys.stderr)


def run_upstream(text: str, stages: str | Sequence[Stage] | None = None,
                 after_stage: StageCallback | None = None, phases: Phases | None = None,
                 multithreaded: bool = True,
                 on_result: Callable[[Any], None] | None = None) -> str:
    """Parse ``text`` upstream, run ``stages`` (a pipeline name or stage list; default
    ``RLX_PIPELINE`` / fast), return LLVM-dialect text. ``phases`` (if given) gets the
    seconds of the parse, of each stage and of the final verify + print;
    ``multithreaded=False``: nested passes on this thread only; ``on_result`` gets the
    final module, in its context."""
    from mlir import ir
    from mlir.passmanager import PassManager

    if after_stage is None and print_after_all_requested():
        after_stage = _stderr_dump
    with ir.Context() as context:
        context.enable_multithreading(multithreaded)
        with phase(phases, "upstream parse"):
            module = _parse_upstream(ir, text)
        for stage in pipeline_stages(stages):
            with phase(phases, f"stage {stage.name}"):
                _run_stage(PassManager, module, stage)
            if after_stage is not None:
                after_stage(stage, str(module))
        with phase(phases, "verify + print LLVM dialect"):
            _verify(module)
            text = module.operation.get_asm(assume_verified=True)  # verified just above
        if on_result is not None:
            on_result(module)
        return text


def _parse_upstream(ir, text: str):
    from rlx_mlir.lowering.capi import parse_module

    use_light_dialects()
    try:
        return parse_module(text)
    except RlxError as e:  # carries upstream's diagnostics
        raise RlxError(f"upstream MLIR rejected the lowered module: {e}") from None


def _run_stage(pass_manager_cls, module, stage: Stage) -> None:
    from rlx_mlir.lowering.capi import run_pass_manager

    try:
        if stage.apply is not None:
            stage.apply(module)
            return
        if not stage.passes:
            return
        pm = pass_manager_cls.parse(f"builtin.module({stage.passes})")
        pm.enable_verifier(verify_each_pass())
        run_pass_manager(pm, module.operation)
    except Exception as e:
        raise RlxError(f"upstream stage '{stage.name}' ({stage.passes}) failed: {e}") from None


def _verify(module) -> None:
    try:
        module.operation.verify()
    except Exception as e:  # MLIRError carries the diagnostics
        raise RlxError(f"upstream pipeline produced invalid IR: {e}") from None


def _refuse_nested_modules(module: ModuleOp) -> None:
    """Native code is built from the top-level functions: a nested ``builtin.module`` would
    pass through unlowered, so it is an error at its location."""
    for op in module.walk():
        if isinstance(op, ModuleOp) and op is not module:
            raise RlxError("nested 'builtin.module' is not supported by the LLVM lowering: "
                           "put its functions in the top-level module", op=op)


def lower_to_llvm(module: ModuleOp, stages: str | Sequence[Stage] | None = None,
                  after_stage: StageCallback | None = None, phases: Phases | None = None,
                  objects: list[bytes] | None = None, opt_level: int = 2) -> str:
    """rlx (or already lowered) xDSL module -> LLVM-dialect text (the module is not changed;
    ``phases``, if given, gets the seconds of each phase: :mod:`rlx_mlir.runtime.timing`).
    When the function is lowered in two halves and ``objects`` is a list, each half's
    object code (at ``opt_level``) is compiled on its thread as soon as it is lowered and
    appended to it (otherwise it stays empty). The garbage collector pauses meanwhile."""
    with collector_paused():
        return _lower(module, stages, after_stage, phases, objects, opt_level)


def _lower(module: ModuleOp, stages: str | Sequence[Stage] | None,
           after_stage: StageCallback | None, phases: Phases | None,
           objects: list[bytes] | None, opt_level: int) -> str:
    from rlx_mlir.lowering.to_linalg import lower_module

    _refuse_nested_modules(module)
    with phase(phases, "xdsl lower-to-linalg"):
        lowered = module.clone()
        lower_module(lowered)
    if split_compiles() and after_stage is None and not print_after_all_requested() \
            and (stages or default_pipeline_name()) == "fast":
        text = _lower_halves(lowered, stages, phases, objects, opt_level)
        if text is not None:
            return text
    with phase(phases, "xdsl hand-off text"):
        text = handoff_text(lowered, in_place=True)
    return run_upstream(text, stages, after_stage, phases)


HALVES_GIL_SWITCH_S = 0.0005
"""Python's thread switch interval while the halves are lowered (default 5 ms): a thread
coming back from a C call (a pass pipeline, a parse, LLVM) waits for the GIL until the
thread running Python gives it up, at most this long. Transformer-block gradient: 0.465
-> 0.446 s (15 alternating compiles)."""


LAST_HALF_PARTS = 2
"""The half lowered last may be cut into this many code-generation parts per core
(:func:`~rlx_mlir.runtime.native.codegen_jobs`: still at most one per ``PART_BYTES``, and
``RLX_CODEGEN_JOBS`` as set), the other into one: its parts are the last to start, and a
big one left one thread idle at the end (40 of 420 ms on the transformer-block
gradient). A part costs about 3 ms of CPU more."""


def _result_or_none(job: Any) -> bytes | None:
    """The object code of a finished code-generation job, None if it failed (the engine
    then compiles the merged text, or falls back to MLIR's ExecutionEngine)."""
    try:
        return job.result()
    except Exception:  # noqa: BLE001 - any failure: the text is compiled again, or the fallback
        return None


def _lower_halves(lowered: ModuleOp, stages: str | Sequence[Stage] | None,
                  phases: Phases | None, objects: list[bytes] | None,
                  opt_level: int) -> str | None:
    """LLVM-dialect text of ``lowered``'s function cut in two halves, each lowered (and,
    with ``objects``, compiled) in its own context on its own thread
    (:mod:`rlx_mlir.lowering.split`); None, with ``lowered`` unchanged, when it is not cut."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from rlx_mlir.lowering.split import merge_llvm_texts, split_function
    from rlx_mlir.runtime import native

    started = time.perf_counter()
    halves = split_function(lowered)
    if halves is None:
        return None
    if phases is not None:
        phases["xdsl split in halves"] = time.perf_counter() - started
    codegen: list[Future[bytes]] = []
    half_phases: list[Phases] = [{} for _ in halves]
    parts: list[tuple[float, int, str]] = []  # a heap: the costliest part first
    known = native.CompiledOnce()  # the kernels a half compiles (the other's copies go)
    done: list[int] = []  # the halves lowered so far
    lock = threading.Lock()

    def costliest_part() -> bytes:
        with lock:
            _, _, part = heapq.heappop(parts)
        return native.object_code(part, opt_level)

    def lower_half(pool: ThreadPoolExecutor, i: int, text: str) -> str:
        text = run_upstream(text, stages, phases=half_phases[i], multithreaded=False)
        if objects is not None:  # on the same two threads, the costliest waiting part first
            with lock:
                own = native.compile_once(text, known)
                done.append(i)
                last = len(done) == len(halves)
            jobs = native.codegen_jobs(own, LAST_HALF_PARTS if last else 1)
            for part in native.split_module_text(own, jobs):
                with lock:
                    heapq.heappush(parts, (-native.codegen_cost(part), len(codegen), part))
                    codegen.append(pool.submit(costliest_part))
        return text

    name = "hand-off, upstream stages" + ("" if objects is None else ", LLVM code generation")
    with phase(phases, f"{name}: halves on 2 threads"), gil_switch_interval(HALVES_GIL_SWITCH_S):
        with ThreadPoolExecutor(len(halves)) as pool:
            # each half's text is printed (holding the GIL) before the next one's, so the
            # first half's upstream work starts while the second is printed
            jobs = [pool.submit(lower_half, pool, i, handoff_text(half, in_place=True))
                    for i, half in enumerate(halves)]
            texts = [job.result() for job in jobs]
            compiled = [_result_or_none(job) for job in codegen]
    if phases is not None:  # each half's own stages (on threads that shared the cores)
        phases.update({f"  half {i}: {k}": v for i, own in enumerate(half_phases)
                       for k, v in own.items()})
    if objects is not None and all(code is not None for code in compiled):
        objects.extend(code for code in compiled if code is not None)
    with phase(phases, "merge the halves' LLVM dialect"):
        merged = merge_llvm_texts(texts)
    if merged is None:
        raise RlxError("the two halves of the split function define a symbol differently "
                       "(internal error; RLX_SPLIT_COMPILE=0 compiles it whole)")
    return merged
