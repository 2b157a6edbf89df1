// RUN: rlx-run %s --entry conv_stride_bias --interpret | FileCheck %s --check-prefix=STRIDE
// RUN: rlx-run %s --entry conv_padding --interpret | FileCheck %s --check-prefix=PAD
// RUN: rlx-run %s --entry conv_depthwise_dilation --interpret | FileCheck %s --check-prefix=DEPTH
// RUN: rlx-run %s --entry max_pool_padding --interpret | FileCheck %s --check-prefix=MAX
// RUN: rlx-run %s --entry avg_pools --interpret | FileCheck %s --check-prefix=AVG

// 2x2 block sums of arange(16) (stride 2) plus a bias of 0.5.
// STRIDE: result 0: tensor<1x1x2x2xf32>
// STRIDE-NEXT: {{\[\[\[\[}}10.500000, 18.500000],
// STRIDE-NEXT: [42.500000, 50.500000]]]]
func.func @conv_stride_bias() -> tensor<1x1x2x2xf32> {
  %x = rlx.constant {value = dense<[[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %w = rlx.constant {value = dense<1.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %b = rlx.constant {value = dense<0.5> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = rlx.conv2d %x, %w, %b {stride = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// A 3x3 box filter with zero padding 1: each output is the sum of the in-bounds neighbours.
// PAD: result 0: tensor<1x1x3x3xf32>
// PAD-NEXT: {{\[\[\[\[}}12.000000, 21.000000, 16.000000],
// PAD-NEXT: [27.000000, 45.000000, 33.000000],
// PAD-NEXT: [24.000000, 39.000000, 28.000000]]]]
func.func @conv_padding() -> tensor<1x1x3x3xf32> {
  %x = rlx.constant {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %w = rlx.constant {value = dense<1.0> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %y = rlx.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  func.return %y : tensor<1x1x3x3xf32>
}

// Depthwise (groups = 2), dilation 2: a 2x2 kernel reads the four corners of each 3x3 channel.
// Channel 0: 1 + 3 + 7 + 9 = 20; channel 1: 10 - 90 = -80.
// DEPTH: result 0: tensor<1x2x1x1xf64>
// DEPTH-NEXT: {{\[\[\[\[}} 20.000000]],
// DEPTH-EMPTY:
// DEPTH-NEXT: {{\[\[}}-80.000000]]]]
func.func @conv_depthwise_dilation() -> tensor<1x2x1x1xf64> {
  %x = rlx.constant {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 20.0, 30.0], [40.0, 50.0, 60.0], [70.0, 80.0, 90.0]]]]> : tensor<1x2x3x3xf64>} : () -> tensor<1x2x3x3xf64>
  %w = rlx.constant {value = dense<[[[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 0.0], [0.0, -1.0]]]]> : tensor<2x1x2x2xf64>} : () -> tensor<2x1x2x2xf64>
  %y = rlx.conv2d %x, %w {dilation = array<i64: 2, 2>, groups = 2 : i64} : (tensor<1x2x3x3xf64>, tensor<2x1x2x2xf64>) -> tensor<1x2x1x1xf64>
  func.return %y : tensor<1x2x1x1xf64>
}

// All inputs are negative: padding never wins the max (zero padding would give 0).
// MAX: result 0: tensor<1x1x2x2xf32>
// MAX-NEXT: {{\[\[\[\[}}-1.000000, -2.000000],
// MAX-NEXT: [-5.000000, -6.000000]]]]
// MAX: result 1: tensor<1x1x2x2xf64>
// MAX-NEXT: {{\[\[\[\[}} 5.000000, 7.000000],
// MAX-NEXT: [13.000000, 15.000000]]]]
func.func @max_pool_padding() -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf64>) {
  %x = rlx.constant {value = dense<[[[[-1.0, -2.0, -3.0, -4.0], [-5.0, -6.0, -7.0, -8.0], [-9.0, -10.0, -11.0, -12.0], [-13.0, -14.0, -15.0, -16.0]]]]> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %y = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %z = rlx.constant {value = dense<[[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x1x4x4xf64>} : () -> tensor<1x1x4x4xf64>
  %m = rlx.max_pool2d %z {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf64>) -> tensor<1x1x2x2xf64>
  func.return %y, %m : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf64>
}

// Averages divide by the full kernel area, padded taps included (count_include_pad).
// AVG: result 0: tensor<1x1x2x2xf32>
// AVG-NEXT: {{\[\[\[\[}} 2.500000, 4.500000],
// AVG-NEXT: [10.500000, 12.500000]]]]
// AVG: result 1: tensor<1x1x2x2xf32>
// AVG-NEXT: {{\[\[\[\[}}0.250000, 0.500000],
// AVG-NEXT: [0.750000, 1.000000]]]]
// AVG: result 2: tensor<1x1x1x4xf64>
// AVG-NEXT: {{\[\[\[\[}}3.000000, 6.000000, 9.000000, 7.000000]]]]
func.func @avg_pools() -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x1x4xf64>) {
  %x = rlx.constant {value = dense<[[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %a = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %s = rlx.constant {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %p = rlx.avg_pool2d %s {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %r = rlx.constant {value = dense<[[[[3.0, 6.0, 9.0, 12.0]]]]> : tensor<1x1x1x4xf64>} : () -> tensor<1x1x1x4xf64>
  %q = rlx.avg_pool2d %r {kernel = array<i64: 1, 3>, stride = array<i64: 1, 1>, padding = array<i64: 0, 1>} : (tensor<1x1x1x4xf64>) -> tensor<1x1x1x4xf64>
  func.return %a, %p, %q : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x1x4xf64>
}
