// Native (JIT) results of the conv family and its backward ops on hand-checkable inputs;
// the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry conv | FileCheck %s --check-prefix=CONV
// RUN: rlx-run %s --entry conv --interpret | FileCheck %s --check-prefix=CONV
// RUN: rlx-run %s --entry pools | FileCheck %s --check-prefix=POOLS
// RUN: rlx-run %s --entry pools --interpret | FileCheck %s --check-prefix=POOLS
// RUN: rlx-run %s --entry conv_grads | FileCheck %s --check-prefix=GRADS
// RUN: rlx-run %s --entry conv_grads --interpret | FileCheck %s --check-prefix=GRADS
// RUN: rlx-run %s --entry pool_grads | FileCheck %s --check-prefix=POOLGRADS
// RUN: rlx-run %s --entry pool_grads --interpret | FileCheck %s --check-prefix=POOLGRADS

// x = 1..9 in a 3x3; 2x2 ones kernel + bias 10: each output is its window sum + 10.
// Grouped 1x1 conv (groups = 2): channel 0 times 2, channel 1 times -1.
// Padded, strided (pad 1, stride 2) 2x2 ones kernel: corners of x with their neighbours.
func.func @conv() -> (tensor<1x1x2x2xf32>, tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>) {
  %x = rlx.constant {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %w = rlx.constant {value = dense<1.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %b = rlx.constant {value = dense<10.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = rlx.conv2d %x, %w, %b : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %x2 = rlx.constant {value = dense<[[[[1.0, 2.0]], [[3.0, 4.0]]]]> : tensor<1x2x1x2xf32>} : () -> tensor<1x2x1x2xf32>
  %w2 = rlx.constant {value = dense<[[[[2.0]]], [[[-1.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %g = rlx.conv2d %x2, %w2 {groups = 2 : i64} : (tensor<1x2x1x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x1x2xf32>
  %p = rlx.conv2d %x, %w {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %y, %g, %p : tensor<1x1x2x2xf32>, tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>
}
// CONV: result 0: tensor<1x1x2x2xf32>
// CONV-NEXT: {{\[\[\[\[}}22.000000, 26.000000],
// CONV-NEXT: [34.000000, 38.000000]]]]
// CONV: result 1: tensor<1x2x1x2xf32>
// CONV-NEXT: {{\[\[\[\[}} 2.000000,  4.000000]],
// CONV-EMPTY:
// CONV-NEXT: {{\[\[}}-3.000000, -4.000000]]]]
// CONV: result 2: tensor<1x1x2x2xf32>
// CONV-NEXT: {{\[\[\[\[}} 1.000000,  5.000000],
// CONV-NEXT: [11.000000, 28.000000]]]]

// x = 0..15 in a 4x4. 2x2 max / avg pools; a 3x3 stride-2 max pool padded by 1 over
// -(0..15): padding (-inf) never wins; each max is minus the window's first in-bounds entry.
func.func @pools() -> (tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>) {
  %x = rlx.constant {value = dense<[[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x1x4x4xf64>} : () -> tensor<1x1x4x4xf64>
  %m = rlx.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf64>) -> tensor<1x1x2x2xf64>
  %a = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf64>) -> tensor<1x1x2x2xf64>
  %n = rlx.neg %x : (tensor<1x1x4x4xf64>) -> tensor<1x1x4x4xf64>
  %q = rlx.max_pool2d %n {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xf64>) -> tensor<1x1x2x2xf64>
  func.return %m, %a, %q : tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>
}
// POOLS: result 0: tensor<1x1x2x2xf64>
// POOLS-NEXT: {{\[\[\[\[}} 5.000000,  7.000000],
// POOLS-NEXT: [13.000000, 15.000000]]]]
// POOLS: result 1: tensor<1x1x2x2xf64>
// POOLS-NEXT: {{\[\[\[\[}} 2.500000,  4.500000],
// POOLS-NEXT: [10.500000, 12.500000]]]]
// POOLS: result 2: tensor<1x1x2x2xf64>
// POOLS-NEXT: {{\[\[\[\[}}-0.000000, -1.000000],
// POOLS-NEXT: [-4.000000, -5.000000]]]]

// dx of a 2x2 kernel [[1, 2], [3, 4]] under an all-ones dy: the "full" convolution.
// dx of a stride-2 ones kernel: each dy entry copied onto its 2x2 block.
// dw of x = 1..9 under an all-ones dy: the window sums at each tap offset.
func.func @conv_grads() -> (tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) {
  %ones = rlx.constant {value = dense<1.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %w = rlx.constant {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %dx = rlx.conv2d_backward_input %ones, %w : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32>
  %dx2 = rlx.conv2d_backward_input %w, %ones {stride = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  %x = rlx.constant {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %dw = rlx.conv2d_backward_weight %x, %ones : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %dx, %dx2, %dw : tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
}
// GRADS: result 0: tensor<1x1x3x3xf32>
// GRADS-NEXT: {{\[\[\[\[}} 1.000000,  3.000000,  2.000000],
// GRADS-NEXT: [ 4.000000, 10.000000,  6.000000],
// GRADS-NEXT: [ 3.000000,  7.000000,  4.000000]]]]
// GRADS: result 1: tensor<1x1x4x4xf32>
// GRADS-NEXT: {{\[\[\[\[}}1.000000, 1.000000, 2.000000, 2.000000],
// GRADS-NEXT: [1.000000, 1.000000, 2.000000, 2.000000],
// GRADS-NEXT: [3.000000, 3.000000, 4.000000, 4.000000],
// GRADS-NEXT: [3.000000, 3.000000, 4.000000, 4.000000]]]]
// GRADS: result 2: tensor<1x1x2x2xf32>
// GRADS-NEXT: {{\[\[\[\[}}12.000000, 16.000000],
// GRADS-NEXT: [24.000000, 28.000000]]]]

// Ties go to the first max in row-major window order: windows {1,1,1,0} -> (0,0),
// {0,2,2,2} -> (0,3), {3,0,0,3} -> (2,0), all zeros -> (2,2).
// Overlapping 3x3 windows (stride 1, padding 1) over an all -inf 2x2: every window's
// first in-bounds tap is (0,0), so it collects all four dy entries (padding never wins).
func.func @pool_grads() -> (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) {
  %x = rlx.constant {value = dense<[[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0], [3.0, 0.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %dy = rlx.constant {value = dense<[[[[10.0, 20.0], [30.0, 40.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %dx = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  %inf = rlx.constant {value = dense<0xFF800000> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %dx2 = rlx.max_pool2d_backward %inf, %dy {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %dx, %dx2 : tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
}
// POOLGRADS: result 0: tensor<1x1x4x4xf32>
// POOLGRADS-NEXT: {{\[\[\[\[}}10.000000,  0.000000,  0.000000, 20.000000],
// POOLGRADS-NEXT: [ 0.000000,  0.000000,  0.000000,  0.000000],
// POOLGRADS-NEXT: [30.000000,  0.000000, 40.000000,  0.000000],
// POOLGRADS-NEXT: [ 0.000000,  0.000000,  0.000000,  0.000000]]]]
// POOLGRADS: result 1: tensor<1x1x2x2xf32>
// POOLGRADS-NEXT: {{\[\[\[\[}}100.000000,   0.000000],
// POOLGRADS-NEXT: [  0.000000,   0.000000]]]]
