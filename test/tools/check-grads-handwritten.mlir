// --check-grads checks the gradient function in the file, here a hand-written one:
// d/dw sum(tanh(w)) = (1 - tanh(w)^2) * d_output.
// RUN: rlx-opt %s --check-grads | FileCheck %s
// CHECK: check-grads @f: OK (checked @f_grad)
// CHECK-NEXT: d/dw: max relative error

func.func @f(%w: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
func.func @f_grad(%w: tensor<3xf32> {rlx.param}, %d_output: tensor<f32> {rlx.name = "d_output"}) -> (tensor<f32>, tensor<3xf32>) attributes {rlx.grad_of = "f", rlx.wrt = ["w"]} {
  %t = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  %loss = rlx.reduce_sum %t {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  %one = rlx.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t2 = rlx.mul %t, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %d = rlx.sub %one, %t2 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %dw = rlx.mul %d, %d_output : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %loss, %dw : tensor<f32>, tensor<3xf32>
}
