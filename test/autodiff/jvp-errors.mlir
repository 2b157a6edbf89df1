// RUN: rlx-opt %s --verify-diagnostics --jvp="wrt=x,x"
// RUN: not rlx-opt %s --jvp="wrt=x,x" 2>&1 | FileCheck %s
// CHECK: jvp-errors.mlir:8:1: error: wrt lists 'x' more than once

// One tangent per argument: a repeated name would get a second tangent argument that
// nothing reads (its tangent silently dropped), so it is an error.
// expected-error @below {{wrt lists 'x' more than once}}
func.func @f(%x: tensor<4xf32> {rlx.name = "x"}, %w: tensor<4xf32> {rlx.name = "w", rlx.param}) -> tensor<f32> {
  %h = rlx.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = rlx.reduce_sum %h {axes = array<i64: 0>, keep_dims = false} : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
