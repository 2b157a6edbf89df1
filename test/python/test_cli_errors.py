"""User mistakes in the Python API behind the CLI: clear, located RlxErrors (docs/cli.md)."""

import re
from pathlib import Path

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.ir import parse
from rlx_mlir.testing import check_grads
from rlx_mlir.tools import rlx_opt, rlx_run

ROOT = Path(__file__).resolve().parents[2]

F = """\
func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
"""

# d/dx sum(tanh(x)) is (1 - tanh(x)^2) * d_output; {body} returns the gradient %dx.
F_GRAD = """\
func.func @f_grad(%x: tensor<3xf32> {rlx.param}, %d: tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
    attributes {rlx.grad_of = "f", rlx.wrt = ["x"]} {
  %t = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %loss = rlx.reduce_sum %t {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  %one = rlx.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t2 = rlx.mul %t, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.sub %one, %t2 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  {body}
  func.return %loss, %dx : tensor<f32>, tensor<3xf32>
}
"""
RIGHT = "%dx = rlx.mul %s, %d : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>"
WRONG = "%dx = rlx.mul %s, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>"


def module(text: str = F):
    return parse(text, "m.mlir")


@pytest.mark.parametrize("add, name", [
    (lambda m: rlx.grad_with_loss(m, "f"), "f_grad"),
    (lambda m: rlx.jvp(m, "f"), "f_jvp"),
    (lambda m: rlx.vmap(m, "f", ["x"], 2), "f_vmap"),
])
def test_adding_an_existing_function_is_a_located_error(add, name):
    m = module()
    add(m)
    with pytest.raises(RlxError, match=f"@{name} already exists in the module") as error:
        add(m)
    assert str(error.value).startswith("m.mlir:1:1: error:")  # the existing @f_<suffix>
    assert [f.sym_name.data for f in m.ops].count(name) == 1


def test_grad_with_loss_refuses_a_hand_written_f_grad():
    m = module(F + F_GRAD.replace("{body}", RIGHT))
    with pytest.raises(RlxError, match=r"^m.mlir:6:1: error: @f_grad already exists"):
        rlx.grad_with_loss(m, "f")


def test_check_grads_checks_the_gradient_function_in_the_module():
    right = check_grads(module(F + F_GRAD.replace("{body}", RIGHT)))
    assert right.ok and right.grad == "f_grad"
    m = module(F + F_GRAD.replace("{body}", WRONG))
    report = check_grads(m, raise_on_error=False)
    assert not report.ok and report.grad == "f_grad" and report.args[0].max_rel_error > 0.1
    with pytest.raises(AssertionError, match=r"check-grads @f: FAILED \(checked @f_grad\)"):
        check_grads(m)
    assert check_grads(module(), "f").grad is None  # no @f_grad: the one autodiff builds


def test_check_grads_of_a_named_gradient_validates_it():
    m = module(F + F_GRAD.replace("{body}", RIGHT))
    assert check_grads(m, grad="f_grad").ok
    with pytest.raises(RlxError, match="@f_grad is the gradient of @f, not of @g"):
        check_grads(m, "g", grad="f_grad")
    bad = F_GRAD.replace("{body}", RIGHT).replace(", %d: tensor<f32>)", ")")
    with pytest.raises(RlxError, match=r"^m.mlir:6:1: error: @f_grad must take the arguments"):
        check_grads(module(F + bad.replace("%d", "%loss")))


def test_rlx_opt_bad_pass_spec_is_an_error(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_opt.main([str(src), "-p", "autodiff{wrt=x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid pass specification 'autodiff{wrt=x'")
    assert "Traceback" not in err


def test_rlx_run_bad_int_high_is_an_error(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text(F)
    assert rlx_run.main([str(src), "--int-high", "0"]) == 1
    assert capsys.readouterr().err.startswith("error: --int-high must be at least 1")


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md"])
def test_documented_mlir_opt_exists(doc):
    """The docs' ``rlx-opt ... --lower-to-llvm | <mlir-opt>`` names a tool that exists."""
    tools = re.findall(r"--lower-to-llvm \| (\S*mlir-opt)\b", (ROOT / doc).read_text())
    assert tools
    for tool in tools:
        assert (ROOT / tool).is_file(), f"{doc}: {tool} does not exist (run from the checkout)"


def test_rlx_run_refuses_a_text_file_given_as_npy(tmp_path, capsys):
    src, bad = tmp_path / "m.mlir", tmp_path / "x.npy"
    src.write_text(F)
    bad.write_text("1 2 3\n")
    assert rlx_run.main([str(src), "--input", f"x={bad}"]) == 1
    assert capsys.readouterr().err.startswith(f"error: --input x: '{bad}' is not a .npy file")


def test_rlx_run_refuses_an_input_given_twice(tmp_path, capsys):
    src, x = tmp_path / "m.mlir", tmp_path / "x.npy"
    src.write_text(F)
    np.save(x, np.ones(3, np.float32))
    assert rlx_run.main([str(src), "--input", f"x={x}", "--input", f"x={x}"]) == 1
    assert capsys.readouterr().err.startswith("error: --input x is given twice")


def test_rlx_run_names_the_arguments_of_an_unknown_input(tmp_path, capsys):
    src, x = tmp_path / "m.mlir", tmp_path / "x.npy"
    src.write_text(F)
    np.save(x, np.ones(3, np.float32))
    assert rlx_run.main([str(src), "--input", f"w={x}"]) == 1
    assert "unknown argument(s): w (arguments of @f: x)" in capsys.readouterr().err


def test_rlx_run_takes_big_endian_inputs(tmp_path, capsys):
    """``>f4`` is float32 in the other byte order: the same values (it was refused as
    'expected dtype float32, got >f4')."""
    src, x = tmp_path / "m.mlir", tmp_path / "x.npy"
    src.write_text(F)
    np.save(x, np.array([0.5, -1.0, 2.0], dtype=">f4"))
    assert rlx_run.main([str(src), "--input", f"x={x}"]) == 0
    printed = capsys.readouterr().out
    assert f"{np.tanh([0.5, -1.0, 2.0]).sum():.6f}" in printed
