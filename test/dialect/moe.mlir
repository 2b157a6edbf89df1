// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
// CHECK: rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x5xf32>
// CHECK: rlx.grouped_matmul %dy, %w, %ids {transpose_w = true} : (tensor<6x5xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x4xf32>
// CHECK: rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 3 : i64} : (tensor<6x4xf32>, tensor<6x5xf32>, tensor<6xi32>) -> tensor<3x4x5xf32>
func.func @ops(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>, %ids: tensor<6xi32>, %dy: tensor<6x5xf32>) -> (tensor<6x5xf32>, tensor<6x4xf32>, tensor<3x4x5xf32>) {
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x5xf32>
  %dx = rlx.grouped_matmul %dy, %w, %ids {transpose_w = true} : (tensor<6x5xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 3 : i64} : (tensor<6x4xf32>, tensor<6x5xf32>, tensor<6xi32>) -> tensor<3x4x5xf32>
  func.return %y, %dx, %dw : tensor<6x5xf32>, tensor<6x4xf32>, tensor<3x4x5xf32>
}

// f32-encoded expert ids (SPEC 1.4) and f64 data verify too.
// CHECK-LABEL: func.func @float_ids
// CHECK: rlx.grouped_matmul %x, %w, %ids : (tensor<2x3xf64>, tensor<4x3x1xf64>, tensor<2xf32>) -> tensor<2x1xf64>
func.func @float_ids(%x: tensor<2x3xf64>, %w: tensor<4x3x1xf64>, %ids: tensor<2xf32>) -> tensor<2x1xf64> {
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<2x3xf64>, tensor<4x3x1xf64>, tensor<2xf32>) -> tensor<2x1xf64>
  func.return %y : tensor<2x1xf64>
}
