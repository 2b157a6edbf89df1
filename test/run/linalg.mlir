// RUN: rlx-run %s --interpret --entry matmul | FileCheck %s --check-prefix=MATMUL
// RUN: rlx-run %s --interpret --entry reduce | FileCheck %s --check-prefix=REDUCE
// RUN: rlx-run %s --interpret --entry cumsum | FileCheck %s --check-prefix=CUMSUM

// MATMUL: result 0: tensor<2x2xf32>
// MATMUL-NEXT: {{\[\[}} 4.000000,  5.000000],
// MATMUL-NEXT:  [10.000000, 11.000000]]
// Batch dims [2, 1] and [3] broadcast to [2, 3]: out[b, h] = lhs[b] . rhs[h].
// MATMUL: result 1: tensor<2x3x1x1xf64>
// MATMUL-NEXT: {{\[\[\[\[}}1.000000]],
// MATMUL-EMPTY:
// MATMUL-NEXT: {{\[\[}}2.000000]],
// MATMUL-EMPTY:
// MATMUL-NEXT: {{\[\[}}3.000000]]],
// MATMUL-EMPTY:
// MATMUL-EMPTY:
// MATMUL-NEXT: {{\[\[\[}}3.000000]],
// MATMUL-EMPTY:
// MATMUL-NEXT: {{\[\[}}4.000000]],
// MATMUL-EMPTY:
// MATMUL-NEXT: {{\[\[}}7.000000]]]]
// MATMUL: result 2: tensor<2x2xi64>
// MATMUL-NEXT: {{\[\[}}19, 22],
// MATMUL-NEXT:  [43, 50]]
func.func @matmul() -> (tensor<2x2xf32>, tensor<2x3x1x1xf64>, tensor<2x2xi64>) {
  %x = rlx.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %w = rlx.constant {value = dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %0 = rlx.matmul %x, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %a = rlx.constant {value = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf64>} : () -> tensor<2x1x1x2xf64>
  %b = rlx.constant {value = dense<[[[1.0], [0.0]], [[0.0], [1.0]], [[1.0], [1.0]]]> : tensor<3x2x1xf64>} : () -> tensor<3x2x1xf64>
  %1 = rlx.matmul %a, %b : (tensor<2x1x1x2xf64>, tensor<3x2x1xf64>) -> tensor<2x3x1x1xf64>
  %i = rlx.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %j = rlx.constant {value = dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %2 = rlx.matmul %i, %j : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  func.return %0, %1, %2 : tensor<2x2xf32>, tensor<2x3x1x1xf64>, tensor<2x2xi64>
}

// x = [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]
// REDUCE: result 0: tensor<3xf32>
// REDUCE-NEXT: [18.000000, 26.000000, 34.000000]
// REDUCE: result 1: tensor<1x3x1xf32>
// REDUCE-NEXT: {{\[\[\[}}4.500000],
// REDUCE-NEXT: [6.500000],
// REDUCE-NEXT: [8.500000]]]
// REDUCE: result 2: tensor<2x2xf32>
// REDUCE-NEXT: {{\[\[}} 5.000000,  6.000000],
// REDUCE-NEXT: [11.000000, 12.000000]]
// REDUCE: result 3: tensor<f32>
// REDUCE-NEXT: 1.000000
// REDUCE: result 4: tensor<2x3xf32>
// REDUCE-NEXT: {{\[\[}}  2.000000,  12.000000,  30.000000],
// REDUCE-NEXT: [ 56.000000,  90.000000, 132.000000]]
// REDUCE: result 5: tensor<2xi64>
// REDUCE-NEXT: [4, 6]
// REDUCE: result 6: tensor<3xf64>
// REDUCE-NEXT: [ 8.000000, 10.000000, 12.000000]
func.func @reduce() -> (tensor<3xf32>, tensor<1x3x1xf32>, tensor<2x2xf32>, tensor<f32>, tensor<2x3xf32>, tensor<2xi64>, tensor<3xf64>) {
  %x = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]]> : tensor<2x3x2xf32>} : () -> tensor<2x3x2xf32>
  %0 = rlx.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x2xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_mean %x {axes = array<i64: -1, 0>, keep_dims = true} : (tensor<2x3x2xf32>) -> tensor<1x3x1xf32>
  %2 = rlx.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
  %3 = rlx.reduce_min %x {axes = array<i64: 0, 1, 2>} : (tensor<2x3x2xf32>) -> tensor<f32>
  %4 = rlx.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x2xf32>) -> tensor<2x3xf32>
  %i = rlx.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %5 = rlx.reduce_sum %i {axes = array<i64: 0>} : (tensor<2x2xi64>) -> tensor<2xi64>
  %d = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]]> : tensor<2x3x2xf64>} : () -> tensor<2x3x2xf64>
  %6 = rlx.reduce_max %d {axes = array<i64: 0, 2>} : (tensor<2x3x2xf64>) -> tensor<3xf64>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<3xf32>, tensor<1x3x1xf32>, tensor<2x2xf32>, tensor<f32>, tensor<2x3xf32>, tensor<2xi64>, tensor<3xf64>
}

// x = [[1, 2, 3], [4, 5, 6]]
// CUMSUM: result 0: tensor<2x3xf32>
// CUMSUM-NEXT: {{\[\[}} 1.000000,  3.000000,  6.000000],
// CUMSUM-NEXT: [ 4.000000,  9.000000, 15.000000]]
// CUMSUM: result 1: tensor<2x3xf32>
// CUMSUM-NEXT: {{\[\[}}1.000000, 2.000000, 3.000000],
// CUMSUM-NEXT: [5.000000, 7.000000, 9.000000]]
// CUMSUM: result 2: tensor<2x3xf32>
// CUMSUM-NEXT: {{\[\[}}0.000000, 0.000000, 0.000000],
// CUMSUM-NEXT: [1.000000, 2.000000, 3.000000]]
// CUMSUM: result 3: tensor<2x3xf64>
// CUMSUM-NEXT: {{\[\[}}0.000000, 1.000000, 3.000000],
// CUMSUM-NEXT: [0.000000, 4.000000, 9.000000]]
// CUMSUM: result 4: tensor<4xi32>
// CUMSUM-NEXT: [0, 1, 3, 6]
func.func @cumsum() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf64>, tensor<4xi32>) {
  %x = rlx.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %0 = rlx.cumsum %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = rlx.cumsum %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = rlx.cumsum %x {axis = -2 : i64, exclusive = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = rlx.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64>} : () -> tensor<2x3xf64>
  %3 = rlx.cumsum %d {axis = 1 : i64, exclusive = true} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %i = rlx.constant {value = dense<[1, 2, 3, 4]> : tensor<4xi32>} : () -> tensor<4xi32>
  %4 = rlx.cumsum %i {exclusive = true} : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf64>, tensor<4xi32>
}
