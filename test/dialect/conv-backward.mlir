// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// The result shape is caller-given: stride 2 makes x = 7x7 and x = 8x8 both give dy = 3x3.
// CHECK-LABEL: func.func @backward_input
// CHECK: rlx.conv2d_backward_input %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
// CHECK: rlx.conv2d_backward_input %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x7x7xf32>
// UPSTREAM-LABEL: func.func @backward_input
// UPSTREAM: "rlx.conv2d_backward_input"(%{{.*}}, %{{.*}}) {stride = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
func.func @backward_input(%dy: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x7x7xf32>) {
  %0 = rlx.conv2d_backward_input %dy, %w {stride = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  %1 = "rlx.conv2d_backward_input"(%dy, %w) {stride = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x7x7xf32>
  func.return %0, %1 : tensor<1x3x8x8xf32>, tensor<1x3x7x7xf32>
}

// Every attribute, f64: H_out = (7 + 4 - 2*2 - 1)/3 + 1 = 3, W_out = (6 - 1 - 1)/1 + 1 = 5.
// CHECK-LABEL: func.func @backward_input_all_attrs_f64
// CHECK: rlx.conv2d_backward_input %{{.*}}, %{{.*}} {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x6x3x5xf64>, tensor<6x2x3x2xf64>) -> tensor<1x4x7x6xf64>
// UPSTREAM: "rlx.conv2d_backward_input"{{.*}}dilation = array<i64: 2, 1>, groups = 2 : i64{{.*}} -> tensor<1x4x7x6xf64>
func.func @backward_input_all_attrs_f64(%dy: tensor<1x6x3x5xf64>, %w: tensor<6x2x3x2xf64>) -> tensor<1x4x7x6xf64> {
  %0 = rlx.conv2d_backward_input %dy, %w {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x6x3x5xf64>, tensor<6x2x3x2xf64>) -> tensor<1x4x7x6xf64>
  func.return %0 : tensor<1x4x7x6xf64>
}

// CHECK-LABEL: func.func @backward_weight
// CHECK: rlx.conv2d_backward_weight %{{.*}}, %{{.*}} {groups = 2 : i64, padding = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x6x6x6xf32>) -> tensor<6x2x3x3xf32>
// CHECK: rlx.conv2d_backward_weight %{{.*}}, %{{.*}} {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x4x7x6xf64>, tensor<1x6x3x5xf64>) -> tensor<6x2x3x2xf64>
// UPSTREAM-LABEL: func.func @backward_weight
// UPSTREAM: "rlx.conv2d_backward_weight"(%{{.*}}, %{{.*}}) {groups = 2 : i64, padding = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x6x6x6xf32>) -> tensor<6x2x3x3xf32>
// UPSTREAM: "rlx.conv2d_backward_weight"{{.*}} -> tensor<6x2x3x2xf64>
func.func @backward_weight(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x6x6xf32>, %x64: tensor<1x4x7x6xf64>, %dy64: tensor<1x6x3x5xf64>) -> (tensor<6x2x3x3xf32>, tensor<6x2x3x2xf64>) {
  %0 = rlx.conv2d_backward_weight %x, %dy {groups = 2 : i64, padding = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x6x6x6xf32>) -> tensor<6x2x3x3xf32>
  %1 = rlx.conv2d_backward_weight %x64, %dy64 {stride = array<i64: 3, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<1x4x7x6xf64>, tensor<1x6x3x5xf64>) -> tensor<6x2x3x2xf64>
  func.return %0, %1 : tensor<6x2x3x3xf32>, tensor<6x2x3x2xf64>
}

// CHECK-LABEL: func.func @max_pool_backward
// CHECK: rlx.max_pool2d_backward %{{.*}}, %{{.*}} {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
// CHECK: rlx.max_pool2d_backward %{{.*}}, %{{.*}} {kernel = array<i64: 3, 3>, stride = array<i64: 2, 1>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf64>, tensor<1x2x4x6xf64>) -> tensor<1x2x8x6xf64>
// UPSTREAM-LABEL: func.func @max_pool_backward
// UPSTREAM: "rlx.max_pool2d_backward"(%{{.*}}, %{{.*}}) {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
// UPSTREAM: "rlx.max_pool2d_backward"{{.*}}padding = array<i64: 1, 1>{{.*}} -> tensor<1x2x8x6xf64>
func.func @max_pool_backward(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x4x3xf32>, %x64: tensor<1x2x8x6xf64>, %dy64: tensor<1x2x4x6xf64>) -> (tensor<1x2x8x6xf32>, tensor<1x2x8x6xf64>) {
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
  %1 = "rlx.max_pool2d_backward"(%x64, %dy64) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 1>, padding = array<i64: 1, 1>} : (tensor<1x2x8x6xf64>, tensor<1x2x4x6xf64>) -> tensor<1x2x8x6xf64>
  func.return %0, %1 : tensor<1x2x8x6xf32>, tensor<1x2x8x6xf64>
}
