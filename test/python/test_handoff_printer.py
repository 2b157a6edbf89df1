"""The hand-off printer writes what xDSL's generic printer writes, up to names: upstream
MLIR parses both into the same module."""

from __future__ import annotations

import re

import pytest
from mlir import ir
from xdsl.dialects.cf import Cf
from xdsl.parser import Parser

import rlx_mlir as rlx
from rlx_mlir import models
from rlx_mlir.ir import make_context, to_text
from rlx_mlir.lowering.handoff_printer import generic_text
from rlx_mlir.lowering.to_linalg import lower_module
from rlx_mlir.lowering.upstream import prepare_for_handoff, use_light_dialects
from rlx_mlir.runtime.jit import reachable_module

CONTROL_FLOW = """
func.func @f(%x: f32, %n: index, %flag: i1) -> (f32, index) attributes {llvm.emit_c_interface, "odd key" = {a = 1 : i64, b}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r, %q = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x, %k = %c0) -> (f32, index) {
    %s = arith.addf %acc, %acc fastmath<fast> : f32
    %k1 = arith.addi %k, %i : index
    scf.yield %s, %k1 : f32, index
  }
  cf.cond_br %flag, ^yes(%r : f32), ^no
^yes(%v: f32):
  return %v, %q : f32, index
^no:
  %e = "test.unregistered"(%r) {note = unit} : (f32) -> f32
  return %e, %c0 : f32, index
}
"""


def _upstream_form(text: str) -> str:
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        use_light_dialects()
        return str(ir.Module.parse(text))


def test_control_flow_module_prints_as_xdsl_does():
    context = make_context()
    context.allow_unregistered = True
    if "cf" not in context.registered_dialect_names:
        context.load_dialect(Cf)
    module = Parser(context, CONTROL_FLOW).parse_module()
    ours = generic_text(module)
    assert ours.startswith('"builtin.module"() ({')
    assert re.search(r'%\d+, %\d+ = "scf.for"', ours)  # two results
    assert '"cf.cond_br"' in ours and "[^bb" in ours  # successors
    assert '"odd key" = {a = 1 : i64, b}' in ours  # quoted key, dictionary, unit entry
    assert '"test.unregistered"' in ours and "op_name__" not in ours
    assert _upstream_form(ours) == _upstream_form(to_text(module, generic=True))


@pytest.mark.parametrize("build,entry", [
    (lambda: models.mlp_loss(batch=4, sizes=[6, 5, 3]), "mlp_loss"),
    (lambda: models.transformer_block_loss(batch=2, seq=8, d_model=16, heads=2), "block_loss"),
])
def test_lowered_gradient_prints_as_xdsl_does(build, entry):
    module = build()
    grad = rlx.grad_with_loss(module, entry)
    lowered = reachable_module(module, grad.sym_name.data).clone()
    lower_module(lowered)
    handoff = prepare_for_handoff(lowered)
    assert _upstream_form(generic_text(handoff)) == _upstream_form(to_text(handoff, generic=True))
