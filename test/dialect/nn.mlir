// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @softmaxes
// CHECK: rlx.softmax %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: rlx.softmax %{{.*}} {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: rlx.log_softmax %{{.*}} {axis = -2 : i64} : (tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
// UPSTREAM-LABEL: func.func @softmaxes
// UPSTREAM: "rlx.softmax"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// UPSTREAM: "rlx.softmax"(%{{.*}}) {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// UPSTREAM: "rlx.log_softmax"(%{{.*}}) {axis = -2 : i64} : (tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
func.func @softmaxes(%x: tensor<4x8xf32>, %y: tensor<2x4x8xf64>) -> (tensor<4x8xf32>, tensor<2x4x8xf64>) {
  %0 = rlx.softmax %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = rlx.softmax %0 {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = rlx.log_softmax %y {axis = -2 : i64} : (tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  func.return %1, %2 : tensor<4x8xf32>, tensor<2x4x8xf64>
}

// CHECK-LABEL: func.func @norms
// CHECK: rlx.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64, eps = 1.000000e-05 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK: rlx.rms_norm %{{.*}}, %{{.*}} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK: rlx.rms_norm %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-06 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK: rlx.group_norm %{{.*}}, %{{.*}}, %{{.*}} {num_groups = 2 : i64, eps = 1.000000e-03 : f32} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
// CHECK: rlx.group_norm %{{.*}}, %{{.*}}, %{{.*}} {num_groups = 4 : i64} : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5xf32>
// CHECK: rlx.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// UPSTREAM-LABEL: func.func @norms
// UPSTREAM: "rlx.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {axis = -1 : i64, eps = 9.99999974E-6 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// UPSTREAM: "rlx.rms_norm"(%{{.*}}, %{{.*}}) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// UPSTREAM: "rlx.rms_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 9.99999997E-7 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// UPSTREAM: "rlx.group_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 1.000000e-03 : f32, num_groups = 2 : i64} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
// UPSTREAM: "rlx.group_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {num_groups = 4 : i64}
// UPSTREAM: "rlx.batch_norm_inference"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {eps = 9.99999974E-6 : f32}
func.func @norms(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                 %img: tensor<2x4x3x3xf32>, %seq: tensor<2x4x5xf32>, %gc: tensor<4xf32>,
                 %bc: tensor<4xf32>) -> (tensor<2x3x8xf32>, tensor<2x4x3x3xf32>, tensor<2x4x5xf32>) {
  %0 = rlx.layer_norm %x, %g, %b {axis = -1 : i64, eps = 1.0e-05 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %1 = rlx.rms_norm %0, %g : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %2 = rlx.rms_norm %1, %g, %b {eps = 1.0e-06 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %3 = rlx.group_norm %img, %gc, %bc {num_groups = 2 : i64, eps = 1.0e-03 : f32} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %4 = rlx.group_norm %seq, %gc, %bc {num_groups = 4 : i64} : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5xf32>
  %5 = rlx.batch_norm_inference %2, %g, %b, %g, %g {eps = 1.0e-05 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  func.return %5, %3, %4 : tensor<2x3x8xf32>, tensor<2x4x3x3xf32>, tensor<2x4x5xf32>
}

// CHECK-LABEL: func.func @losses
// CHECK: rlx.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
// CHECK: rlx.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<4x10xf64>, tensor<4xi32>) -> tensor<4xf64>
// CHECK: rlx.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<4xf32>
// UPSTREAM-LABEL: func.func @losses
// UPSTREAM: "rlx.softmax_cross_entropy"(%{{.*}}, %{{.*}}) : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
// UPSTREAM: "rlx.softmax_cross_entropy"(%{{.*}}, %{{.*}}) : (tensor<4x10xf64>, tensor<4xi32>) -> tensor<4xf64>
// UPSTREAM: "rlx.softmax_cross_entropy"(%{{.*}}, %{{.*}}) : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @losses(%z: tensor<4x10xf32>, %t: tensor<4xi64>, %z64: tensor<4x10xf64>,
                  %t32: tensor<4xi32>, %tf: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf64>, tensor<4xf32>) {
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  %1 = rlx.softmax_cross_entropy %z64, %t32 : (tensor<4x10xf64>, tensor<4xi32>) -> tensor<4xf64>
  %2 = rlx.softmax_cross_entropy %z, %tf : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<4xf32>, tensor<4xf64>, tensor<4xf32>
}

// CHECK-LABEL: func.func @rope
// CHECK: rlx.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x8xf32>
// CHECK: rlx.rope %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
// UPSTREAM-LABEL: func.func @rope
// UPSTREAM: "rlx.rope"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x8xf32>
// UPSTREAM: "rlx.rope"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
func.func @rope(%x: tensor<2x3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>,
                %y: tensor<3x16xf64>, %c8: tensor<3x4xf64>, %s8: tensor<3x4xf64>) -> (tensor<2x3x8xf32>, tensor<3x16xf64>) {
  %0 = rlx.rope %x, %c, %s {head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x8xf32>
  %1 = rlx.rope %y, %c8, %s8 {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<3x16xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x16xf64>
  func.return %0, %1 : tensor<2x3x8xf32>, tensor<3x16xf64>
}
