// Solves on hand-checkable systems, on the interpreter and the JIT (same CHECK lines).
// RUN: rlx-run %s --interpret --entry end_to_end | FileCheck %s --check-prefix=E2E
// RUN: rlx-run %s --entry end_to_end | FileCheck %s --check-prefix=E2E
// RUN: rlx-run %s --interpret --entry laplacian | FileCheck %s --check-prefix=LAP
// RUN: rlx-run %s --entry laplacian | FileCheck %s --check-prefix=LAP
// RUN: rlx-run %s --interpret --entry multi_rhs | FileCheck %s --check-prefix=MULTI
// RUN: rlx-run %s --entry multi_rhs | FileCheck %s --check-prefix=MULTI
// RUN: rlx-run %s --interpret --entry batched | FileCheck %s --check-prefix=BATCH
// RUN: rlx-run %s --entry batched | FileCheck %s --check-prefix=BATCH
// RUN: rlx-run %s --interpret --entry singular | FileCheck %s --check-prefix=SING
// RUN: rlx-run %s --entry singular | FileCheck %s --check-prefix=SING

// dense_solve_f64_end_to_end: [[2, 1], [1, 3]] x = [5, 10] gives x = [1, 3].
// E2E: result 0: tensor<2xf64>
// E2E-NEXT: [1.000000, 3.000000]
func.func @end_to_end() -> tensor<2xf64> {
  %a = rlx.constant {value = dense<[[2.0, 1.0], [1.0, 3.0]]> : tensor<2x2xf64>} : () -> tensor<2x2xf64>
  %b = rlx.constant {value = dense<[5.0, 10.0]> : tensor<2xf64>} : () -> tensor<2xf64>
  %x = rlx.dense_solve %a, %b : (tensor<2x2xf64>, tensor<2xf64>) -> tensor<2xf64>
  func.return %x : tensor<2xf64>
}

// dense_solve_f64_5x5_laplacian: tridiag(-1, 2, -1) x = [0, 0, 0, 0, 6] gives x = [1..5]
// (an asymmetric right-hand side: a row/column-major mix-up would show).
// LAP: result 0: tensor<5xf64>
// LAP-NEXT: [1.000000, 2.000000, 3.000000, 4.000000, 5.000000]
func.func @laplacian() -> tensor<5xf64> {
  %a = rlx.constant {value = dense<[[2.0, -1.0, 0.0, 0.0, 0.0], [-1.0, 2.0, -1.0, 0.0, 0.0], [0.0, -1.0, 2.0, -1.0, 0.0], [0.0, 0.0, -1.0, 2.0, -1.0], [0.0, 0.0, 0.0, -1.0, 2.0]]> : tensor<5x5xf64>} : () -> tensor<5x5xf64>
  %b = rlx.constant {value = dense<[0.0, 0.0, 0.0, 0.0, 6.0]> : tensor<5xf64>} : () -> tensor<5xf64>
  %x = rlx.dense_solve %a, %b : (tensor<5x5xf64>, tensor<5xf64>) -> tensor<5xf64>
  func.return %x : tensor<5xf64>
}

// dense_solve_f64_multi_rhs_forward: B = A X with X = [[1, 0, 2], [3, 1, -1]].
// A needs a row swap (|0| < |4| in column 0): partial pivoting at work. f32 too.
// MULTI: result 0: tensor<2x3xf64>
// MULTI-NEXT: {{\[\[}} 1.000000,  0.000000,  2.000000],
// MULTI-NEXT: [ 3.000000,  1.000000, -1.000000]]
// MULTI: result 1: tensor<2x3xf32>
// MULTI-NEXT: {{\[\[}} 1.000000,  0.000000,  2.000000],
// MULTI-NEXT: [ 3.000000,  1.000000, -1.000000]]
func.func @multi_rhs() -> (tensor<2x3xf64>, tensor<2x3xf32>) {
  %a = rlx.constant {value = dense<[[0.0, 1.0], [4.0, 2.0]]> : tensor<2x2xf64>} : () -> tensor<2x2xf64>
  %b = rlx.constant {value = dense<[[3.0, 1.0, -1.0], [10.0, 2.0, 6.0]]> : tensor<2x3xf64>} : () -> tensor<2x3xf64>
  %x = rlx.dense_solve %a, %b : (tensor<2x2xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %a32 = rlx.cast %a : (tensor<2x2xf64>) -> tensor<2x2xf32>
  %b32 = rlx.cast %b : (tensor<2x3xf64>) -> tensor<2x3xf32>
  %y = rlx.dense_solve %a32, %b32 : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %x, %y : tensor<2x3xf64>, tensor<2x3xf32>
}

// Batch slices are independent: diag(2, 4) and [[2, 1], [1, 3]].
// BATCH: result 0: tensor<2x2xf64>
// BATCH-NEXT: {{\[\[}}1.000000, 2.000000],
// BATCH-NEXT: [1.000000, 3.000000]]
func.func @batched() -> tensor<2x2xf64> {
  %a = rlx.constant {value = dense<[[[2.0, 0.0], [0.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]]> : tensor<2x2x2xf64>} : () -> tensor<2x2x2xf64>
  %b = rlx.constant {value = dense<[[2.0, 8.0], [5.0, 10.0]]> : tensor<2x2xf64>} : () -> tensor<2x2xf64>
  %x = rlx.batched_dense_solve %a, %b : (tensor<2x2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  func.return %x : tensor<2x2xf64>
}

// SPEC 9.25: an exactly singular matrix gives NaN (no abort); in a batch only its slice.
// SING: result 0: tensor<2xf64>
// SING-NEXT: [nan, nan]
// SING: result 1: tensor<2x2xf32>
// SING-NEXT: {{\[\[}}     nan,      nan],
// SING-NEXT: [1.000000, 3.000000]]
func.func @singular() -> (tensor<2xf64>, tensor<2x2xf32>) {
  %a = rlx.constant {value = dense<[[1.0, 2.0], [2.0, 4.0]]> : tensor<2x2xf64>} : () -> tensor<2x2xf64>
  %b = rlx.constant {value = dense<[1.0, 1.0]> : tensor<2xf64>} : () -> tensor<2xf64>
  %x = rlx.dense_solve %a, %b : (tensor<2x2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %p = rlx.constant {value = dense<[[[0.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 3.0]]]> : tensor<2x2x2xf32>} : () -> tensor<2x2x2xf32>
  %q = rlx.constant {value = dense<[[1.0, 1.0], [5.0, 10.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %y = rlx.batched_dense_solve %p, %q : (tensor<2x2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %x, %y : tensor<2xf64>, tensor<2x2xf32>
}
