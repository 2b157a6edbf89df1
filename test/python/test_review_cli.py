"""rlx-opt / rlx-run as an mlir-opt user drives them (docs/cli.md): review fixes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlx_mlir.tools import rlx_opt, rlx_run

BIN = Path(sys.executable).parent

F = """\
func.func @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = rlx.mul %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
"""

# Two arguments with the same rlx.name: rlx-run passes arguments by position.
DUPLICATE = """\
func.func @f(%a: tensor<3xf32> {rlx.name = "x"}, %b: tensor<3xf32> {rlx.name = "x"}) -> tensor<3xf32> {
  %0 = rlx.sub %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("interpret", [False, True])
def test_run_input_that_does_not_fit_is_at_the_function(tmp_path, capsys, interpret):
    """Natively too, a wrong --input is located at the function in the user's file, not
    at a Python line (the JIT locates its argument errors at its caller)."""
    src = tmp_path / "m.mlir"
    src.write_text(F)
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    np.save(tmp_path / "y.npy", np.zeros(3, np.int32))
    for name, message in (("x", "expected shape (3,), got (4,)"),
                          ("y", "expected dtype float32 (f32), got int32")):
        argv = [str(src), "--input", f"{name}={tmp_path / (name + '.npy')}"]
        assert rlx_run.main(argv + ["--interpret"] * interpret) == 1
        err = capsys.readouterr().err
        assert err == f"{src}:1:1: error: argument '{name}' of @f: {message}\n", err


@pytest.mark.parametrize("interpret", [False, True])
def test_run_function_with_duplicate_argument_names(tmp_path, capsys, interpret):
    src = tmp_path / "m.mlir"
    src.write_text(DUPLICATE)
    assert rlx_run.main([str(src)] + ["--interpret"] * interpret) == 0
    assert capsys.readouterr().out.startswith("result 0: tensor<3xf32>\n")
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    assert rlx_run.main([str(src), "--input", f"x={tmp_path / 'x.npy'}"]) == 1
    assert "m.mlir:1:1: error: --input x: @f has 2 arguments named 'x'" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["=x.npy", "x="])
def test_run_input_needs_a_name_and_a_file(tmp_path, capsys, spec):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_run.main([str(src), "--input", spec]) == 1
    assert capsys.readouterr().err == f"error: --input expects NAME=FILE.npy, got '{spec}'\n"


def test_usage_errors_exit_1(capsys):
    """As mlir-opt (and docs/cli.md: every error exits 1), not argparse's 2."""
    assert rlx_opt.main(["--no-such-option"]) == 1
    assert rlx_run.main([]) == 1
    capsys.readouterr()
    assert rlx_opt.main(["--help"]) == 0


def test_one_dash_spellings(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    out = tmp_path / "out.mlir"
    assert rlx_opt.main(["-split-input-file", str(src), "-autodiff", f"-o={out}"]) == 0
    assert "func.func @f_grad" in out.read_text()
    assert rlx_opt.main([str(src), "-verify-diagnostics"]) == 0
    assert rlx_opt.mlir_opt_spellings(["-pcse", "-ofile", "-v", "-", "--", "-cse"], ["cse"]) \
        == ["-pcse", "-ofile", "-v", "-", "--", "-cse"]


def test_pass_pipeline_and_generic_spellings(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_opt.main([str(src), "--pass-pipeline=builtin.module(jvp{wrt=x},cse)",
                         "--mlir-print-op-generic"]) == 0
    out = capsys.readouterr().out
    assert '"func.func"() <{sym_name = "f_jvp"' in out


def test_print_no_properties_is_honoured(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_opt.main([str(src), "--print-op-generic", "--print-no-properties"]) == 0
    out = capsys.readouterr().out
    assert '}) {sym_name = "f", function_type' in out and "<{" not in out
    back = subprocess.run([str(BIN / "rlx-opt")], input=out, text=True, capture_output=True)
    assert back.returncode == 0 and "func.func @f(" in back.stdout, back.stderr


def test_version_names_rlx_opt(capsys):
    assert rlx_opt.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("rlx-opt (rlx-mlir ")


def test_end_of_input_error_is_after_the_last_token(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text('func.func @h(%x: tensor<3xf32>,  // "a // b"\n\n// trailing\n')
    assert rlx_opt.main([str(src)]) == 1
    assert capsys.readouterr().err.startswith(f"{src}:1:32: error: ")


def test_unknown_pass_option_is_named_as_on_the_command_line(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_opt.main([str(src), "--autodiff=bogus=1"]) == 1
    assert '"zero-missing-wrt", "grad-only"]' in capsys.readouterr().err


def test_output_dash_is_stdout(tmp_path, capsys, monkeypatch):
    """``-o -`` writes to stdout (mlir-opt), not to a file named ``-``."""
    src = tmp_path / "m.mlir"
    src.write_text(F)
    monkeypatch.chdir(tmp_path)
    assert rlx_opt.main([str(src), "-o", "-"]) == 0
    assert "func.func @f" in capsys.readouterr().out
    assert not (tmp_path / "-").exists()


def test_vmap_of_a_function_without_arguments_says_so(tmp_path):
    source = tmp_path / "c.mlir"
    source.write_text("func.func @f() -> tensor<2xf32> {\n"
                      "  %c = rlx.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>\n"
                      "  func.return %c : tensor<2xf32>\n}\n")
    done = subprocess.run([sys.executable, "-m", "rlx_mlir.tools.rlx_opt", str(source),
                           "--vmap=func=f batched=x size=2"], capture_output=True, text=True)
    assert done.returncode == 1
    assert "@f has no argument 'x' to batch (it takes no arguments)" in done.stderr
