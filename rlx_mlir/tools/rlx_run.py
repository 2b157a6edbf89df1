"""``rlx-run``: run one function of an rlx module and print its results.

    rlx-run model.mlir --entry f --input x=x.npy --seed 0
    rlx-run model.mlir --interpret

Arguments not given with ``--input`` are drawn from ``--seed``: floats from a
standard normal, integers uniformly from ``[0, --int-high)``, booleans fair.
Results print in a stable text form (``%.6f``) that FileCheck can match.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation

from rlx_mlir.diagnostics import ArgumentError, RlxError
from rlx_mlir.dialects.base import is_real_float
from rlx_mlir.ir import check_signature_types, find_func
from rlx_mlir.runtime.signature import Arg, Signature
from rlx_mlir.tools.rlx_opt import (
    broken_pipe_exit,
    input_name,
    os_error_message,
    parse_source,
    read_source,
)


def random_input(arg: Arg, rng: np.random.Generator, int_high: int) -> np.ndarray:
    if is_real_float(arg.dtype):
        return rng.standard_normal(arg.shape).astype(arg.dtype)
    if arg.dtype.kind == "b":
        return rng.integers(0, 2, arg.shape).astype(bool)
    if arg.dtype.kind == "c":
        return (rng.standard_normal(arg.shape) + 1j * rng.standard_normal(arg.shape)).astype(
            arg.dtype
        )
    top = int(np.iinfo(arg.dtype).max) + 1
    if int_high > top:
        raise RlxError(f"--int-high {int_high} is past the range of argument '{arg.name}' "
                       f"({arg.dtype}: random integers are drawn from [0, K), K <= {top})")
    return rng.integers(0, int_high, arg.shape).astype(arg.dtype)


def format_result(index: int, array: np.ndarray, type_text: str) -> str:
    """``result 0: tensor<2xf32>`` followed by the values."""
    body = np.array2string(
        array, precision=6, floatmode="fixed", threshold=sys.maxsize,
        max_line_width=10_000, separator=", ", suppress_small=True,
    )
    return f"result {index}: {type_text}\n{body}"


def load_inputs(specs: Sequence[str]) -> dict[str, np.ndarray]:
    inputs = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise RlxError(f"--input expects NAME=FILE.npy, got '{spec}'")
        if not os.path.exists(path):
            raise RlxError(f"--input {name}: no such file '{path}'")
        if name in inputs:
            raise RlxError(f"--input {name} is given twice")
        inputs[name] = load_array(name, path)
    return inputs


def load_array(name: str, path: str) -> np.ndarray:
    """The array of one ``--input NAME=FILE.npy`` (an :class:`RlxError` for anything
    else, such as an ``.npz`` archive)."""
    if not _has_numpy_magic(path):
        raise RlxError(f"--input {name}: '{path}' is not a .npy file (save arrays with "
                       "np.save)")
    try:
        loaded = np.load(path)
    except Exception as e:
        raise RlxError(f"--input {name}: cannot read '{path}' as .npy ({e})") from None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        loaded.close()
        raise RlxError(f"--input {name}: '{path}' is an archive; .npz archives are not "
                       "supported: save one array with np.save")
    return loaded


def _has_numpy_magic(path: str) -> bool:
    """Whether ``path`` starts like a .npy file or a .npz (zip) archive."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return True  # let np.load report it
    return head.startswith((b"\x93NUMPY", b"PK"))


def located(error: RlxError, op: Operation) -> RlxError:
    """``error`` as it is if it has a location, else the same message located at ``op``
    (an input that does not fit the function's signature is reported at the function)."""
    if error.loc is not None:
        return error
    return RlxError(error.message, op=op, notes=error.notes)


def check_args(args: argparse.Namespace) -> None:
    """Values argparse accepts but numpy cannot draw from."""
    if args.int_high < 1:
        raise RlxError(f"--int-high must be at least 1 (random integers are drawn from "
                       f"[0, K)), got {args.int_high}")
    if args.seed < 0:
        raise RlxError(f"--seed must be a non-negative integer, got {args.seed}")


def run(args: argparse.Namespace) -> int:
    check_args(args)
    module = parse_source(read_source(args.file), input_name(args.file))
    func = find_func(module, args.entry)
    check_signature_types(func, tensors_only=True)
    sig = Signature.of(func)
    given = load_inputs(args.input)
    names = [a.name for a in sig.args]
    unknown = set(given) - set(names)
    if unknown:
        raise RlxError(f"--input names unknown argument(s): {', '.join(sorted(unknown))} "
                       f"(arguments of @{func.sym_name.data}: {', '.join(names)})")
    for name in given:
        if names.count(name) > 1:
            raise RlxError(f"--input {name}: @{sig.name} has {names.count(name)} arguments "
                           f"named '{name}' (give them distinct rlx.name attributes)", op=func)
    rng = np.random.default_rng(args.seed)
    arrays = [given[a.name] if a.name in given else random_input(a, rng, args.int_high)
              for a in sig.args]  # by position: argument names need not be unique
    try:
        sig.bind(arrays, {})  # a shape or dtype that does not fit: before compiling
        results = execute(module, sig.name, arrays, interpret=args.interpret)
    except ArgumentError as e:  # about the inputs: at the function, not at a Python line
        raise RlxError(e.message, op=func, notes=e.notes) from None
    except RlxError as e:  # already formatted: not wrapped again
        raise located(e, func) from None
    except ValueError as e:
        raise RlxError(str(e), op=func) from None
    for i, (array, rtype) in enumerate(zip(results, sig.results, strict=True)):
        print(format_result(i, array, str(rtype)))
    sys.stdout.flush()  # a closed pipe raises here, not at interpreter exit
    return 0


def execute(module, entry: str, arrays: Sequence[np.ndarray], interpret: bool):
    """Run with the interpreter, or natively when the JIT is available (the arguments
    by position)."""
    from rlx_mlir.interpreter import interpret as run_interpreter

    if interpret:
        return run_interpreter(module, *arrays, entry=entry)
    try:
        from rlx_mlir.runtime.jit import compile as jit_compile
    except ImportError:
        return run_interpreter(module, *arrays, entry=entry)
    return jit_compile(module, entry=entry)(*arrays)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlx-run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--entry", default=None, help="function to run (default: first public)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--int-high", type=int, default=2,
                        help="exclusive upper bound of random integer inputs")
    parser.add_argument("--interpret", action="store_true", help="use the numpy interpreter")
    try:
        args = parser.parse_args(argv)
        return run(args)
    except SystemExit as e:  # --help, --version (0); a usage error: 1, as mlir-opt
        return 0 if not e.code else 1
    except RlxError as error:
        print(error, file=sys.stderr)
        return 1
    except BrokenPipeError:
        return broken_pipe_exit()
    except OSError as e:
        print(os_error_message(e), file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("RLX_DEBUG"):
            raise
        print(f"error: internal error: {type(e).__name__}: {e} (set RLX_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
