// --check-grads checks the gradient functions in the file (rlx.grad_of), not a rebuilt
// one: a wrong hand-written gradient fails, located at it, naming the argument and error.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --check-grads
// RUN: not rlx-opt %s --split-input-file --check-grads 2>&1 | FileCheck %s
// CHECK: check-grads-invalid.mlir:[[@LINE+11]]:1: error: gradient check failed (@f_grad):
// CHECK-NEXT: check-grads @f: FAILED (checked @f_grad)
// CHECK-NEXT: d/dw: max relative error {{.*}} over 3 checks: OFF (> 1e-06)

// @f_grad returns w instead of (1 - tanh(w)^2) * d_output.
func.func @f(%w: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
// expected-error @below {{gradient check failed (@f_grad)}}
func.func @f_grad(%w: tensor<3xf32> {rlx.param}, %d_output: tensor<f32> {rlx.name = "d_output"}) -> (tensor<f32>, tensor<3xf32>) attributes {rlx.grad_of = "f", rlx.wrt = ["w"]} {
  %0 = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1, %w : tensor<f32>, tensor<3xf32>
}

// -----

// A gradient function must take @f's arguments and then the loss cotangent.
func.func @f(%w: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.reduce_sum %w {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
// expected-error @below {{@f_grad must take the arguments of @f and then the loss cotangent (tensor<3xf32>, tensor<f32>), got (tensor<3xf32>)}}
func.func @f_grad(%w: tensor<3xf32> {rlx.param}) -> tensor<3xf32> attributes {rlx.grad_of = "f", rlx.wrt = ["w"]} {
  func.return %w : tensor<3xf32>
}

// -----

// ... and end its results with one gradient per rlx.wrt argument.
func.func @f(%w: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.reduce_sum %w {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
// expected-error @below {{@f_grad must end its results with the gradients of w (tensor<3xf32>), got (tensor<f32>)}}
func.func @f_grad(%w: tensor<3xf32> {rlx.param}, %d: tensor<f32>) -> tensor<f32> attributes {rlx.grad_of = "f", rlx.wrt = ["w"]} {
  func.return %d : tensor<f32>
}

// -----

// rlx.grad_of must name a function of the module.
// expected-error @below {{@g_grad is marked rlx.grad_of = "g" but the module has no function @g}}
func.func @g_grad(%w: tensor<3xf32>, %d: tensor<f32>) -> tensor<3xf32> attributes {rlx.grad_of = "g"} {
  func.return %w : tensor<3xf32>
}
