// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: solve-invalid.mlir:7:3: error: 'rlx.dense_solve' op A must be square, got [3, 4]

func.func @not_square(%a: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{A must be square, got [3, 4]}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @a_rank(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{'rlx.dense_solve' op A must have rank 2, got tensor<3xf32>}}
  %0 = rlx.dense_solve %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @b_rank(%a: tensor<3x3xf32>, %b: tensor<3x2x1xf32>) -> tensor<3x2x1xf32> {
  // expected-error @below {{'rlx.dense_solve' op B must have rank 1 or 2, got tensor<3x2x1xf32>}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xf32>, tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
  func.return %0 : tensor<3x2x1xf32>
}

// -----

func.func @rows(%a: tensor<3x3xf64>, %b: tensor<4x2xf64>) -> tensor<4x2xf64> {
  // expected-error @below {{B has 4 rows but A is [3, 3] (need 3)}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  func.return %0 : tensor<4x2xf64>
}

// -----

func.func @mixed_dtypes(%a: tensor<3x3xf32>, %b: tensor<3xf64>) -> tensor<3xf64> {
  // expected-error @below {{'rlx.dense_solve' op operands must share one element type, got tensor<3x3xf32>, tensor<3xf64>}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xf32>, tensor<3xf64>) -> tensor<3xf64>
  func.return %0 : tensor<3xf64>
}

// -----

func.func @int_dtype(%a: tensor<3x3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @below {{'rlx.dense_solve' op operands must be f32, f64, c64 or c128, got i32}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}

// -----

func.func @result_shape(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3xf32> {
  // expected-error @below {{result type mismatch: expected tensor<3x2xf32>, got tensor<3xf32>}}
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @unknown_attr(%a: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{unknown attribute 'pivot' (allowed: none)}}
  %0 = rlx.dense_solve %a, %b {pivot = true} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @batched_a_rank(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // expected-error @below {{'rlx.batched_dense_solve' op A must have rank 3, got tensor<3x3xf32>}}
  %0 = rlx.batched_dense_solve %a, %b : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// -----

func.func @batched_b_rank(%a: tensor<2x3x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{'rlx.batched_dense_solve' op B must have rank 2 or 3, got tensor<3xf32>}}
  %0 = rlx.batched_dense_solve %a, %b : (tensor<2x3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @batched_batch(%a: tensor<2x3x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{batch dims differ: A is [2, 3, 3], B is [4, 3]}}
  %0 = rlx.batched_dense_solve %a, %b : (tensor<2x3x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @batched_not_square(%a: tensor<2x3x2xf64>, %b: tensor<2x3x5xf64>) -> tensor<2x3x5xf64> {
  // expected-error @below {{A must be square, got [2, 3, 2]}}
  %0 = rlx.batched_dense_solve %a, %b : (tensor<2x3x2xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  func.return %0 : tensor<2x3x5xf64>
}

// -----

func.func @batched_rows(%a: tensor<2x3x3xf64>, %b: tensor<2x2x5xf64>) -> tensor<2x2x5xf64> {
  // expected-error @below {{B has 2 rows but A is [2, 3, 3] (need 3)}}
  %0 = rlx.batched_dense_solve %a, %b : (tensor<2x3x3xf64>, tensor<2x2x5xf64>) -> tensor<2x2x5xf64>
  func.return %0 : tensor<2x2x5xf64>
}
