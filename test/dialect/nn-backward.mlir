// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// Backward ops of the nn family (SPEC 3 rows 3-14, 20): round trip.

// CHECK-LABEL: func.func @row_norms
// CHECK: rlx.layer_norm_backward_input %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64, eps = 1.000000e-03 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK: rlx.layer_norm_backward_gamma %{{.*}}, %{{.*}} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<8xf32>
// CHECK: rlx.rms_norm_backward_input %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
// CHECK: rlx.rms_norm_backward_gamma %{{.*}}, %{{.*}} {eps = 1.000000e-03 : f32} : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<8xf64>
// UPSTREAM-LABEL: func.func @row_norms
// UPSTREAM: "rlx.layer_norm_backward_input"(%{{.*}}, %{{.*}}, %{{.*}}) {axis = -1 : i64, eps = 1.000000e-03 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// UPSTREAM: "rlx.layer_norm_backward_gamma"(%{{.*}}, %{{.*}}) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<8xf32>
// UPSTREAM: "rlx.rms_norm_backward_input"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
// UPSTREAM: "rlx.rms_norm_backward_gamma"(%{{.*}}, %{{.*}}) {eps = 1.000000e-03 : f32} : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<8xf64>
func.func @row_norms(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x3x8xf32>,
                     %r: tensor<4x8xf64>, %rg: tensor<8xf64>, %rdy: tensor<4x8xf64>)
    -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<4x8xf64>, tensor<8xf64>) {
  %0 = rlx.layer_norm_backward_input %x, %g, %dy {axis = -1 : i64, eps = 1.0e-03 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %1 = rlx.layer_norm_backward_gamma %x, %dy : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<8xf32>
  %2 = rlx.rms_norm_backward_input %r, %rg, %rdy : (tensor<4x8xf64>, tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %3 = rlx.rms_norm_backward_gamma %r, %rdy {eps = 1.0e-03 : f32} : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<8xf64>
  func.return %0, %1, %2, %3 : tensor<2x3x8xf32>, tensor<8xf32>, tensor<4x8xf64>, tensor<8xf64>
}

// CHECK-LABEL: func.func @group_norm
// CHECK: rlx.group_norm_backward_input %{{.*}}, %{{.*}}, %{{.*}} {num_groups = 2 : i64, eps = 1.000000e-03 : f32} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
// CHECK: rlx.group_norm_backward_gamma %{{.*}}, %{{.*}} {num_groups = 4 : i64} : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<4xf32>
// CHECK: rlx.group_norm_backward_beta %{{.*}} : (tensor<2x4x3x3xf32>) -> tensor<4xf32>
// CHECK: rlx.group_norm_backward_beta %{{.*}} : (tensor<2x4x5xf32>) -> tensor<4xf32>
// UPSTREAM-LABEL: func.func @group_norm
// UPSTREAM: "rlx.group_norm_backward_input"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 1.000000e-03 : f32, num_groups = 2 : i64}
// UPSTREAM: "rlx.group_norm_backward_gamma"(%{{.*}}, %{{.*}}) {num_groups = 4 : i64} : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<4xf32>
// UPSTREAM: "rlx.group_norm_backward_beta"(%{{.*}}) : (tensor<2x4x3x3xf32>) -> tensor<4xf32>
func.func @group_norm(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3x3xf32>,
                      %dseq: tensor<2x4x5xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = rlx.group_norm_backward_input %x, %g, %dy {num_groups = 2 : i64, eps = 1.0e-03 : f32} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %1 = rlx.group_norm_backward_gamma %x, %dy {num_groups = 4 : i64} : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<4xf32>
  %2 = rlx.group_norm_backward_beta %dy : (tensor<2x4x3x3xf32>) -> tensor<4xf32>
  %3 = rlx.group_norm_backward_beta %dseq : (tensor<2x4x5xf32>) -> tensor<4xf32>
  func.return %0, %1, %2, %3 : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK: rlx.batch_norm_inference_backward_input %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-03 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
// CHECK: rlx.batch_norm_inference_backward_gamma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<3xf32>
// CHECK: rlx.batch_norm_inference_backward_beta %{{.*}} : (tensor<2x5x3xf32>) -> tensor<3xf32>
// UPSTREAM-LABEL: func.func @batch_norm
// UPSTREAM: "rlx.batch_norm_inference_backward_input"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 1.000000e-03 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
// UPSTREAM: "rlx.batch_norm_inference_backward_gamma"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<3xf32>
// UPSTREAM: "rlx.batch_norm_inference_backward_beta"(%{{.*}}) : (tensor<2x5x3xf32>) -> tensor<3xf32>
func.func @batch_norm(%x: tensor<2x5x3xf32>, %g: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>,
                      %dy: tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = rlx.batch_norm_inference_backward_input %g, %v, %dy {eps = 1.0e-03 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %1 = rlx.batch_norm_inference_backward_gamma %x, %m, %v, %dy : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<3xf32>
  %2 = rlx.batch_norm_inference_backward_beta %dy : (tensor<2x5x3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2 : tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK: rlx.softmax_cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
// CHECK: rlx.softmax_cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xf64>, tensor<2xf32>, tensor<2xf64>) -> tensor<2x3xf64>
// UPSTREAM-LABEL: func.func @cross_entropy
// UPSTREAM: "rlx.softmax_cross_entropy_backward"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
// UPSTREAM: "rlx.softmax_cross_entropy_backward"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x3xf64>, tensor<2xf32>, tensor<2xf64>) -> tensor<2x3xf64>
func.func @cross_entropy(%z: tensor<4x10xf32>, %t: tensor<4xi64>, %dl: tensor<4xf32>,
                         %z2: tensor<2x3xf64>, %t2: tensor<2xf32>, %dl2: tensor<2xf64>) -> (tensor<4x10xf32>, tensor<2x3xf64>) {
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x10xf32>
  %1 = rlx.softmax_cross_entropy_backward %z2, %t2, %dl2 : (tensor<2x3xf64>, tensor<2xf32>, tensor<2xf64>) -> tensor<2x3xf64>
  func.return %0, %1 : tensor<4x10xf32>, tensor<2x3xf64>
}

// CHECK-LABEL: func.func @rope
// CHECK: rlx.rope_backward %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
// CHECK: rlx.rope_backward %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
// UPSTREAM-LABEL: func.func @rope
// UPSTREAM: "rlx.rope_backward"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
// UPSTREAM: "rlx.rope_backward"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
func.func @rope(%dy: tensor<1x3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>,
                %dy2: tensor<3x16xf64>, %c2: tensor<3x4xf64>, %s2: tensor<3x4xf64>) -> (tensor<1x3x8xf32>, tensor<3x16xf64>) {
  %0 = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
  %1 = rlx.rope_backward %dy2, %c2, %s2 {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
  func.return %0, %1 : tensor<1x3x8xf32>, tensor<3x16xf64>
}
