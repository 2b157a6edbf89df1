"""``rlx-opt``: the rlx optimizer driver, with mlir-opt conventions.

    rlx-opt model.mlir --autodiff --canonicalize -o out.mlir
    rlx-opt bad.mlir --split-input-file --verify-diagnostics
    rlx-opt model.mlir -p 'autodiff{wrt=w1},cse' --print-op-generic

Pass flags (``--<pass>[=options]`` or ``-p PIPELINE``) run in the order given.
Every failure is printed as ``file:line:col: error: ...`` with exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.ir import make_context, parse, to_text, verify
from rlx_mlir.tools import diagnostics_check
from rlx_mlir.tools.rlx_opt_hooks import STAGE_HOOKS
from rlx_mlir.transforms import all_passes


def split_pass_flags(argv: Sequence[str], pass_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Pull ``--<pass>[=opts]`` and ``-p PIPE`` out of argv, keeping their order.

    >>> split_pass_flags(["f.mlir", "--cse", "-p", "dce", "-o", "x"], ["cse", "dce"])
    (['cse', 'dce'], ['f.mlir', '-o', 'x'])
    """
    stages: list[str] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-p", "--passes") and i + 1 < len(args):
            stages.extend(s for s in _split_pipeline(args[i + 1]) if s)
            i += 2
            continue
        if arg.startswith("--passes=") or arg.startswith("-p="):
            stages.extend(s for s in _split_pipeline(arg.split("=", 1)[1]) if s)
        elif arg.startswith("--") and _flag_name(arg) in pass_names:
            name, _, opts = arg[2:].partition("=")
            stages.append(f"{name}{{{opts}}}" if opts else name)
        else:
            rest.append(arg)
        i += 1
    return stages, rest


def _flag_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


def _split_pipeline(spec: str) -> list[str]:
    """Split ``a{x=1,y=2},b`` at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts


class RlxOptMain(xDSLOptMain):
    """xDSL's opt driver with rlx's dialects, passes, ordering and diagnostics."""

    def __init__(self, args: Sequence[str] | None = None):
        argv = list(sys.argv[1:] if args is None else args)
        self.passes = all_passes()  # also imports the modules that add STAGE_HOOKS
        names = [*self.passes, *STAGE_HOOKS]
        self.stages, rest = split_pass_flags(argv, names)
        super().__init__(description="rlx optimizer driver", args=rest)
        self.ctx = make_context()

    def register_all_dialects(self):
        self.ctx = make_context()

    def register_all_passes(self):
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.description = __doc__

    def setup_pipeline(self):
        self.pipeline = PassPipeline(())

    # -- the run loop ----------------------------------------------------------
    def run(self) -> int:  # type: ignore[override]
        filename = self.args.input_file or "<stdin>"
        text = _read_input(self.args.input_file)
        chunks = _chunks(text) if self.args.split_input_file else [(text, 0)]
        outputs: list[str] = []
        problems: list[str] = []
        for chunk, offset in chunks:
            try:
                outputs.append(self.process(chunk, filename, offset))
            except RlxError as error:
                if not self.args.verify_diagnostics:
                    print(error, file=sys.stderr)
                    return 1
                expected = diagnostics_check.expectations(chunk, offset)
                problems += diagnostics_check.check(expected, [error], filename)
                continue
            if self.args.verify_diagnostics:
                expected = diagnostics_check.expectations(chunk, offset)
                problems += diagnostics_check.check(expected, [], filename)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        self._write("// -----\n".join(outputs))
        return 0

    def process(self, chunk: str, filename: str, offset: int) -> str:
        """Parse, verify, run the stages and print one chunk."""
        module = parse(chunk, filename, line_offset=offset)
        for stage in self.stages:
            result = self.run_stage(stage, module)
            if isinstance(result, str):
                return result
        return to_text(module, generic=self.args.print_op_generic)

    def run_stage(self, stage: str, module: ModuleOp) -> str | None:
        """Run one pass (or text-producing stage such as lower-to-llvm)."""
        name = stage.split("{", 1)[0]
        hook = STAGE_HOOKS.get(name)
        if hook is not None:
            return hook(stage, module, self.args)  # type: ignore[operator]
        try:
            pipeline = PassPipeline.parse_spec(self.passes, stage)
        except Exception as e:  # bad pass options: report, never a traceback
            raise RlxError(f"invalid pass specification '{stage}': {e}") from None
        try:
            pipeline.apply(self.ctx, module)
        except VerifyException as e:
            raise RlxError(f"after pass '{name}': {e}", op=module) from None
        if self.args.print_between_passes:
            print(f"// -----// IR after {name} //----- //\n{to_text(module)}", file=sys.stderr)
        verify(module)
        return None

    def _write(self, text: str) -> None:
        if self.args.output_file:
            with open(self.args.output_file, "w") as out:
                out.write(text)
        else:
            sys.stdout.write(text)


def _read_input(path: str | None) -> str:
    if path is None:
        return sys.stdin.read()
    if not os.path.exists(path):
        raise RlxError(f"could not open input file '{path}'")
    with open(path) as f:
        return f.read()


def _chunks(text: str) -> list[tuple[str, int]]:
    """Split at ``// -----`` lines, keeping each chunk's line offset."""
    pieces = text.split("// -----")
    out, offset = [], 0
    for piece in pieces:
        out.append((piece, offset))
        offset += piece.count("\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit status 0 on success, 1 with a diagnostic on any error."""
    try:
        return RlxOptMain(argv).run()
    except RlxError as error:
        print(error, file=sys.stderr)
        return 1
    except SystemExit as e:  # argparse errors
        return int(e.code or 0)
    except Exception as e:  # never a traceback for the user
        if os.environ.get("RLX_DEBUG"):
            raise
        print(f"error: internal compiler error: {type(e).__name__}: {e} "
              "(set RLX_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
