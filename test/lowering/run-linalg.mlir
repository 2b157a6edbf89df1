// Native (JIT) results of the linalg family and the indexing backward ops, checked
// against hand-computed values; the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry matmuls | FileCheck %s --check-prefix=MM
// RUN: rlx-run %s --entry matmuls --interpret | FileCheck %s --check-prefix=MM
// RUN: rlx-run %s --entry reductions | FileCheck %s --check-prefix=RED
// RUN: rlx-run %s --entry reductions --interpret | FileCheck %s --check-prefix=RED
// RUN: rlx-run %s --entry running_sums | FileCheck %s --check-prefix=CUM
// RUN: rlx-run %s --entry running_sums --interpret | FileCheck %s --check-prefix=CUM
// RUN: rlx-run %s --entry gather_backward | FileCheck %s --check-prefix=GB
// RUN: rlx-run %s --entry gather_backward --interpret | FileCheck %s --check-prefix=GB

// [[1, 2], [3, 4]] @ [[1, 0, 2], [0, 1, -1]]; the shared weight applied to a batch of
// two rows; an i32 batch broadcast [2, 1, 1, 2] @ [3, 2, 1] -> [2, 3, 1, 1].
// MM: result 0: tensor<2x3xf32>
// MM-NEXT: {{\[\[}}1.000000, 2.000000, 0.000000],
// MM-NEXT: [3.000000, 4.000000, 2.000000]]
// MM: result 1: tensor<2x1x3xf32>
// MM-NEXT: {{\[\[\[}} 1.000000,  1.000000,  1.000000]],
// MM-EMPTY:
// MM-NEXT: {{\[\[}} 2.000000, -1.000000,  5.000000]]]
// MM: result 2: tensor<2x3x1x1xi32>
// MM-NEXT: {{\[\[\[\[}} 3]],
// MM: {{\[\[}} 7]],
// MM: {{\[\[}}11]]],
// MM: {{\[\[\[}} 6]],
// MM: {{\[\[}}14]],
// MM: {{\[\[}}22]]]]
func.func @matmuls() -> (tensor<2x3xf32>, tensor<2x1x3xf32>, tensor<2x3x1x1xi32>) {
  %a = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %w = rlx.constant {value = dense<[[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %x = rlx.constant {value = dense<[[[1.0, 1.0]], [[2.0, -1.0]]]> : tensor<2x1x2xf32>} : () -> tensor<2x1x2xf32>
  %u = rlx.constant {value = dense<[[[[1, 1]]], [[[2, 2]]]]> : tensor<2x1x1x2xi32>} : () -> tensor<2x1x1x2xi32>
  %v = rlx.constant {value = dense<[[[1], [2]], [[3], [4]], [[5], [6]]]> : tensor<3x2x1xi32>} : () -> tensor<3x2x1xi32>
  %0 = rlx.matmul %a, %w : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = rlx.matmul %x, %w : (tensor<2x1x2xf32>, tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %2 = rlx.matmul %u, %v : (tensor<2x1x1x2xi32>, tensor<3x2x1xi32>) -> tensor<2x3x1x1xi32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x1x3xf32>, tensor<2x3x1x1xi32>
}

// x = [[1, 5, -2], [4, 0, 3]]: row sums, the max of all, column minima (kept),
// row products, column means; an integer max.
// RED: result 0: tensor<2xf32>
// RED-NEXT: [4.000000, 7.000000]
// RED: result 1: tensor<f32>
// RED-NEXT: 5.000000
// RED: result 2: tensor<1x3xf32>
// RED-NEXT: {{\[\[}} 1.000000,  0.000000, -2.000000]]
// RED: result 3: tensor<2xf32>
// RED-NEXT: [-10.000000,   0.000000]
// RED: result 4: tensor<3xf32>
// RED-NEXT: [2.500000, 2.500000, 0.500000]
// RED: result 5: tensor<3xi64>
// RED-NEXT: [4, 5, 3]
func.func @reductions() -> (tensor<2xf32>, tensor<f32>, tensor<1x3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xi64>) {
  %x = rlx.constant {value = dense<[[1.0, 5.0, -2.0], [4.0, 0.0, 3.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %i = rlx.constant {value = dense<[[1, 5, -2], [4, 0, 3]]> : tensor<2x3xi64>} : () -> tensor<2x3xi64>
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = rlx.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
  %2 = rlx.reduce_min %x {axes = array<i64: 0>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %3 = rlx.reduce_prod %x {axes = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = rlx.reduce_mean %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  %5 = rlx.reduce_max %i {axes = array<i64: 0>} : (tensor<2x3xi64>) -> tensor<3xi64>
  func.return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<f32>, tensor<1x3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xi64>
}

// [1, 2, 3, 4]: inclusive [1, 3, 6, 10], exclusive [0, 1, 3, 6]; the backward op sums
// from the end: inclusive [10, 9, 7, 4], exclusive [9, 7, 4, 0]. Along axis 0 of a 2x2.
// CUM: result 0: tensor<4xf32>
// CUM-NEXT: [ 1.000000,  3.000000,  6.000000, 10.000000]
// CUM: result 1: tensor<4xf32>
// CUM-NEXT: [0.000000, 1.000000, 3.000000, 6.000000]
// CUM: result 2: tensor<4xf32>
// CUM-NEXT: [10.000000,  9.000000,  7.000000,  4.000000]
// CUM: result 3: tensor<4xf32>
// CUM-NEXT: [9.000000, 7.000000, 4.000000, 0.000000]
// CUM: result 4: tensor<2x2xi32>
// CUM-NEXT: {{\[\[}}1, 2],
// CUM-NEXT: [4, 6]]
func.func @running_sums() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>) {
  %x = rlx.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %m = rlx.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %0 = rlx.cumsum %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = rlx.cumsum %x {exclusive = true} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = rlx.cumsum_backward %x : (tensor<4xf32>) -> tensor<4xf32>
  %3 = rlx.cumsum_backward %x {exclusive = true} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = rlx.cumsum %m {axis = 0 : i64} : (tensor<2x2xi32>) -> tensor<2x2xi32>
  func.return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>
}

// f32 indices [1, -3, 1.5, 9.7] into 3 rows read rows [1, 0, 1, 2] (clamped, truncated):
// row 0 gets dy[1], row 1 gets dy[0] + dy[2], row 2 gets dy[3].
// GB: result 0: tensor<3x2xf32>
// GB-NEXT: {{\[\[}}3.000000, 4.000000],
// GB-NEXT: [6.000000, 8.000000],
// GB-NEXT: [7.000000, 8.000000]]
func.func @gather_backward() -> tensor<3x2xf32> {
  %dy = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
  %ids = rlx.constant {value = dense<[1.0, -3.0, 1.5, 9.7]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = rlx.gather_backward %dy, %ids : (tensor<4x2xf32>, tensor<4xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
