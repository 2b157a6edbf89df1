// RUN: rlx-opt %s --verify-diagnostics --autodiff="func=f"

func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.reduce_sum %x {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
// A hand-written @f_grad is kept: --autodiff refuses to add a second one.
// expected-error @below {{@f_grad already exists in the module; cannot add the gradient of @f under that name (remove or rename the existing function)}}
func.func @f_grad(%x: tensor<3xf32>, %d: tensor<f32>) -> tensor<3xf32> {
  %0 = rlx.expand %d : (tensor<f32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
