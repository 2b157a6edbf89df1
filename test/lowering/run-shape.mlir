// Native (JIT) results of the shape ops on constants, checked against hand-computed
// values; the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry moves | FileCheck %s --check-prefix=MOVES
// RUN: rlx-run %s --entry moves --interpret | FileCheck %s --check-prefix=MOVES
// RUN: rlx-run %s --entry lookup | FileCheck %s --check-prefix=LOOKUP
// RUN: rlx-run %s --entry lookup --interpret | FileCheck %s --check-prefix=LOOKUP
// RUN: rlx-run %s --entry bools | FileCheck %s --check-prefix=BOOLS
// RUN: rlx-run %s --entry bools --interpret | FileCheck %s --check-prefix=BOOLS

// x = [[0, 1, 2], [3, 4, 5]]: reshape (3, 2), transpose, concat with itself on axis 1,
// narrow columns 1..2, expand a [2, 1] column to [2, 3].
// MOVES: result 0: tensor<3x2xf32>
// MOVES-NEXT: {{\[\[}}0.000000, 1.000000],
// MOVES-NEXT: [2.000000, 3.000000],
// MOVES-NEXT: [4.000000, 5.000000]]
// MOVES: result 1: tensor<3x2xf32>
// MOVES-NEXT: {{\[\[}}0.000000, 3.000000],
// MOVES-NEXT: [1.000000, 4.000000],
// MOVES-NEXT: [2.000000, 5.000000]]
// MOVES: result 2: tensor<2x6xf32>
// MOVES-NEXT: {{\[\[}}0.000000, 1.000000, 2.000000, 0.000000, 1.000000, 2.000000],
// MOVES-NEXT: [3.000000, 4.000000, 5.000000, 3.000000, 4.000000, 5.000000]]
// MOVES: result 3: tensor<2x2xf32>
// MOVES-NEXT: {{\[\[}}1.000000, 2.000000],
// MOVES-NEXT: [4.000000, 5.000000]]
// MOVES: result 4: tensor<2x3xf32>
// MOVES-NEXT: {{\[\[}}1.000000, 1.000000, 1.000000],
// MOVES-NEXT: [4.000000, 4.000000, 4.000000]]
func.func @moves() -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x6xf32>, tensor<2x2xf32>, tensor<2x3xf32>) {
  %x = rlx.constant {value = dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %r = rlx.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t = rlx.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = rlx.concat %x, %x {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %n = rlx.narrow %x {axis = 1 : i64, start = 1 : i64, length = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  %col = rlx.narrow %x {axis = 1 : i64, start = 1 : i64, length = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %e = rlx.expand %col : (tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %r, %t, %c, %n, %e : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x6xf32>, tensor<2x2xf32>, tensor<2x3xf32>
}

// Table rows are [10r, 10r + 1]. gather with f32 ids [2.7, -1.5, 0/0, 9.0]: truncation
// gives 2, then -1 -> 0, NaN -> 0, 9 -> 3 (clamped). scatter_add of rows [1, 1], [2, 2],
// [4, 4], [8, 8] with i64 ids [1, 3, 1, -1] into 3 rows: id 3 and -1 are dropped,
// row 1 gets 1 + 4.
// LOOKUP: result 0: tensor<4x2xf32>
// LOOKUP-NEXT: {{\[\[}}20.000000, 21.000000],
// LOOKUP-NEXT: [ 0.000000,  1.000000],
// LOOKUP-NEXT: [ 0.000000,  1.000000],
// LOOKUP-NEXT: [30.000000, 31.000000]]
// LOOKUP: result 1: tensor<3x2xf32>
// LOOKUP-NEXT: {{\[\[}}0.000000, 0.000000],
// LOOKUP-NEXT: [5.000000, 5.000000],
// LOOKUP-NEXT: [0.000000, 0.000000]]
func.func @lookup() -> (tensor<4x2xf32>, tensor<3x2xf32>) {
  %t = rlx.constant {value = dense<[[0.0, 1.0], [10.0, 11.0], [20.0, 21.0], [30.0, 31.0]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
  %num = rlx.constant {value = dense<[2.7, -1.5, 0.0, 9.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %den = rlx.constant {value = dense<[1.0, 1.0, 0.0, 1.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %ids = rlx.div %num, %den : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g = rlx.gather %t, %ids {axis = 0 : i64} : (tensor<4x2xf32>, tensor<4xf32>) -> tensor<4x2xf32>
  %u = rlx.constant {value = dense<[[1.0, 1.0], [2.0, 2.0], [4.0, 4.0], [8.0, 8.0]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
  %sid = rlx.constant {value = dense<[1, 3, 1, -1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %s = rlx.scatter_add %u, %sid {axis = 0 : i64} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<3x2xf32>
  func.return %g, %s : tensor<4x2xf32>, tensor<3x2xf32>
}

// Booleans through every data-movement op (stored as bytes by the JIT): c = [F, F, T, F, F],
// rows 1..2 of it expanded to [2, 3] and transposed.
// BOOLS: result 0: tensor<2x2xi1>
// BOOLS-NEXT: {{\[\[}} True, False],
// BOOLS-NEXT: [False, False]]
// BOOLS: result 1: tensor<3x2xi1>
// BOOLS-NEXT: {{\[\[}}False,  True],
// BOOLS-NEXT: [False,  True],
// BOOLS-NEXT: [False,  True]]
func.func @bools() -> (tensor<2x2xi1>, tensor<3x2xi1>) {
  %b = rlx.constant {value = dense<[true, false, false]> : tensor<3xi1>} : () -> tensor<3xi1>
  %ids = rlx.constant {value = dense<[[0, 1], [2, 5]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %g = rlx.gather %b, %ids {axis = 0 : i64} : (tensor<3xi1>, tensor<2x2xi32>) -> tensor<2x2xi1>
  %nb = rlx.narrow %b {axis = 0 : i64, start = 1 : i64, length = 2 : i64} : (tensor<3xi1>) -> tensor<2xi1>
  %c = rlx.concat %nb, %b {axis = 0 : i64} : (tensor<2xi1>, tensor<3xi1>) -> tensor<5xi1>
  %r = rlx.reshape %c : (tensor<5xi1>) -> tensor<5x1xi1>
  %row = rlx.narrow %r {axis = 0 : i64, start = 1 : i64, length = 2 : i64} : (tensor<5x1xi1>) -> tensor<2x1xi1>
  %e = rlx.expand %row : (tensor<2x1xi1>) -> tensor<2x3xi1>
  %t = rlx.transpose %e {perm = array<i64: 1, 0>} : (tensor<2x3xi1>) -> tensor<3x2xi1>
  func.return %g, %t : tensor<2x2xi1>, tensor<3x2xi1>
}
