// An option given twice is an error, not last-wins (it silently differentiated w only).
// RUN: not rlx-opt %s "--autodiff=wrt=x wrt=w" 2>&1 | FileCheck %s
// RUN: not rlx-opt %s -p "autodiff{wrt=x wrt=x}" 2>&1 | FileCheck %s
// CHECK: option 'wrt' given more than once
func.func @f(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<f32> {
  %y = rlx.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.reduce_sum %y {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
