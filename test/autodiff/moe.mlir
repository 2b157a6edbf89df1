// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// VJP of rlx.grouped_matmul (SPEC 5.14): dx is the grouped matmul of dy with the other
// weight layout; dw sums each expert's outer products; the expert ids get nothing.

// GRADS: check-grads @experts: OK
// GRADS-NEXT: d/dx: max relative error
// GRADS-NEXT: d/dw: max relative error
// CHECK-LABEL: func.func @experts_grad(
// CHECK: %[[Y:.*]] = rlx.grouped_matmul %x, %w, %ids : (tensor<5x3xf32>, tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<5x4xf32>
// CHECK: %[[DX:.*]] = rlx.grouped_matmul %d_output, %w, %ids {transpose_w = true} : (tensor<5x4xf32>, tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<5x3xf32>
// CHECK: %[[DW:.*]] = rlx.grouped_matmul_backward_weight %x, %d_output, %ids {experts = 2 : i64} : (tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xi32>) -> tensor<2x3x4xf32>
// CHECK: func.return %[[Y]], %[[DX]], %[[DW]]
func.func @experts(%x: tensor<5x3xf32> {rlx.name = "x", rlx.param}, %w: tensor<2x3x4xf32> {rlx.name = "w", rlx.param}, %ids: tensor<5xi32> {rlx.name = "ids"}) -> tensor<5x4xf32> {
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<5x3xf32>, tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}

// With [E, N, K] weights the roles swap: dx uses the plain layout, dw = dy^T x per expert.
// GRADS: check-grads @transposed: OK
// CHECK-LABEL: func.func @transposed_grad(
// CHECK: rlx.grouped_matmul %d_output, %w, %ids : (tensor<5x4xf32>, tensor<2x4x3xf32>, tensor<5xi32>) -> tensor<5x3xf32>
// CHECK: rlx.grouped_matmul_backward_weight %d_output, %x, %ids {experts = 2 : i64} : (tensor<5x4xf32>, tensor<5x3xf32>, tensor<5xi32>) -> tensor<2x4x3xf32>
func.func @transposed(%x: tensor<5x3xf32> {rlx.name = "x", rlx.param}, %w: tensor<2x4x3xf32> {rlx.name = "w", rlx.param}, %ids: tensor<5xi32> {rlx.name = "ids"}) -> tensor<5x4xf32> {
  %y = rlx.grouped_matmul %x, %w, %ids {transpose_w = true} : (tensor<5x3xf32>, tensor<2x4x3xf32>, tensor<5xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}

// The weight-gradient op differentiates into grouped matmuls (gradients of gradients):
// d/dx = dy G[e]^T and d/ddy = x G[e], for the cotangent G of dw.
// GRADS: check-grads @weight_gradient: OK
// CHECK-LABEL: func.func @weight_gradient_grad(
// CHECK: %[[G:.*]] = rlx.activation_backward
// CHECK: rlx.grouped_matmul %dy, %[[G]], %ids {transpose_w = true} : (tensor<5x4xf32>, tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<5x3xf32>
// CHECK: rlx.grouped_matmul %x, %[[G]], %ids : (tensor<5x3xf32>, tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<5x4xf32>
func.func @weight_gradient(%x: tensor<5x3xf32> {rlx.name = "x", rlx.param}, %dy: tensor<5x4xf32> {rlx.name = "dy", rlx.param}, %ids: tensor<5xi32> {rlx.name = "ids"}) -> tensor<f32> {
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 2 : i64} : (tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xi32>) -> tensor<2x3x4xf32>
  %t = rlx.tanh %dw : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %s = rlx.reduce_sum %t {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
