// The derivative regions of a custom_fn give derivatives for its primals only: when its
// fwd region captures a value that is being differentiated, autodiff and JVP refuse
// (the derivative would silently miss that value's contribution), as JAX does.
// RUN: not rlx-opt %s --autodiff 2>&1 | FileCheck %s --check-prefix=VJP
// RUN: not rlx-opt %s --jvp 2>&1 | FileCheck %s --check-prefix=JVP
// RUN: not rlx-opt %s "--autodiff=wrt=d" 2>&1 | FileCheck %s --check-prefix=VJPD
// VJP: captures-errors.mlir:[[@LINE+6]]:3: error: the fwd region of this 'rlx.custom_fn' uses %w, defined outside it and being differentiated, but its vjp region only gives derivatives for the primals: pass that value as a primal operand
// JVP: captures-errors.mlir:[[@LINE+5]]:3: error: the fwd region of this 'rlx.custom_fn' uses %w, defined outside it and being differentiated, but its jvp region only gives derivatives for the primals
// VJPD: captures-errors.mlir:[[@LINE+4]]:3: error: the fwd region of this 'rlx.custom_fn' uses %d, defined outside it and being differentiated

func.func @f(%x: tensor<3xf32> {rlx.name = "x", rlx.param}, %d: tensor<3xf32> {rlx.name = "d"}) -> tensor<f32> {
  %w = rlx.sin %x : (tensor<3xf32>) -> tensor<3xf32>
  %y = rlx.custom_fn %x {has_vjp = true, has_jvp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %m = rlx.mul %a, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %n = rlx.mul %m, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %o: tensor<3xf32>, %g: tensor<3xf32>):
    %m = rlx.mul %g, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %n = rlx.mul %m, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %t: tensor<3xf32>):
    %m = rlx.mul %t, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %n = rlx.mul %m, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}
