// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @conv_defaults
// CHECK: rlx.conv2d %{{.*}}, %{{.*}} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
// UPSTREAM-LABEL: func.func @conv_defaults
// UPSTREAM: "rlx.conv2d"(%{{.*}}, %{{.*}}) : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
func.func @conv_defaults(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %0 = rlx.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  func.return %0 : tensor<2x4x6x6xf32>
}

// CHECK-LABEL: func.func @conv_bias_stride_padding
// CHECK: rlx.conv2d %{{.*}}, %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
// UPSTREAM-LABEL: func.func @conv_bias_stride_padding
// UPSTREAM: "rlx.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
func.func @conv_bias_stride_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = rlx.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}

// Non-square everything: H_out = (7 + 2*2 - 2*(3-1) - 1)/3 + 1 = 3, W_out = (6 + 0 - 1*(2-1) - 1)/1 + 1 = 5.
// CHECK-LABEL: func.func @conv_groups_dilation_f64
// CHECK: rlx.conv2d %{{.*}}, %{{.*}} {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x4x7x6xf64>, tensor<6x2x3x2xf64>) -> tensor<1x6x3x5xf64>
// UPSTREAM: "rlx.conv2d"{{.*}}dilation = array<i64: 2, 1>, groups = 2 : i64{{.*}} -> tensor<1x6x3x5xf64>
func.func @conv_groups_dilation_f64(%x: tensor<1x4x7x6xf64>, %w: tensor<6x2x3x2xf64>) -> tensor<1x6x3x5xf64> {
  %0 = rlx.conv2d %x, %w {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x4x7x6xf64>, tensor<6x2x3x2xf64>) -> tensor<1x6x3x5xf64>
  func.return %0 : tensor<1x6x3x5xf64>
}

// Depthwise: groups = C_in = C_out.
// CHECK-LABEL: func.func @conv_depthwise
// CHECK: rlx.conv2d %{{.*}}, %{{.*}}, %{{.*}} {groups = 3 : i64, padding = array<i64: 1, 1>} : (tensor<2x3x5x5xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
func.func @conv_depthwise(%x: tensor<2x3x5x5xf32>, %w: tensor<3x1x3x3xf32>, %b: tensor<3xf32>) -> tensor<2x3x5x5xf32> {
  %0 = rlx.conv2d %x, %w, %b {groups = 3 : i64, padding = array<i64: 1, 1>} : (tensor<2x3x5x5xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  func.return %0 : tensor<2x3x5x5xf32>
}

// CHECK-LABEL: func.func @pools
// CHECK: rlx.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x3xf32>
// CHECK: rlx.max_pool2d %{{.*}} {kernel = array<i64: 3, 3>, stride = array<i64: 2, 1>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x6xf32>
// CHECK: rlx.avg_pool2d %{{.*}} {kernel = array<i64: 2, 3>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x2xf32>
// CHECK: rlx.avg_pool2d %{{.*}} {kernel = array<i64: 3, 2>, stride = array<i64: 1, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x8x4xf32>
// UPSTREAM-LABEL: func.func @pools
// UPSTREAM: "rlx.max_pool2d"(%{{.*}}) {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x3xf32>
// UPSTREAM: "rlx.max_pool2d"
// UPSTREAM: "rlx.avg_pool2d"(%{{.*}}) {kernel = array<i64: 2, 3>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x2xf32>
// UPSTREAM: "rlx.avg_pool2d"
func.func @pools(%x: tensor<1x2x8x6xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x2xf32>, tensor<1x2x8x4xf32>) {
  %0 = rlx.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x3xf32>
  %1 = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 1>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x6xf32>
  %2 = rlx.avg_pool2d %x {kernel = array<i64: 2, 3>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x2xf32>
  %3 = rlx.avg_pool2d %x {kernel = array<i64: 3, 2>, stride = array<i64: 1, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x8x4xf32>
  func.return %0, %1, %2, %3 : tensor<1x2x4x3xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x2xf32>, tensor<1x2x8x4xf32>
}

// CHECK-LABEL: func.func @pools_f64
// CHECK: rlx.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<1x1x3x3xf64>) -> tensor<1x1x2x2xf64>
// CHECK: rlx.avg_pool2d %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x1x3x3xf64>) -> tensor<1x1x1x1xf64>
func.func @pools_f64(%x: tensor<1x1x3x3xf64>) -> (tensor<1x1x2x2xf64>, tensor<1x1x1x1xf64>) {
  %0 = rlx.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<1x1x3x3xf64>) -> tensor<1x1x2x2xf64>
  %1 = "rlx.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x1x3x3xf64>) -> tensor<1x1x1x1xf64>
  func.return %0, %1 : tensor<1x1x2x2xf64>, tensor<1x1x1x1xf64>
}
