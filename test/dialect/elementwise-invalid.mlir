// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: elementwise-invalid.mlir:7:3: error: 'rlx.add' op shapes [4, 8] and [7] do not broadcast

func.func @bad_broadcast(%x: tensor<4x8xf32>, %b: tensor<7xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{shapes [4, 8] and [7] do not broadcast}}
  %0 = rlx.add %x, %b : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @bad_dtype_mix(%x: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @below {{operands must share one element type}}
  %0 = rlx.mul %x, %b : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @bad_result(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @below {{result type mismatch: expected tensor<4xf32>, got tensor<5xf32>}}
  %0 = rlx.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @int_activation(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @below {{'rlx.exp' op does not support element type i64}}
  %0 = rlx.exp %x : (tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @bad_predicate(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @below {{unknown predicate 'less'}}
  %0 = rlx.compare %x, %x {predicate = "less"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @unknown_attr(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{unknown attribute 'axis'}}
  %0 = rlx.relu %x {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) -> tensor<5xi64> {
  // expected-error @below {{keeps the shape}}
  %0 = rlx.cast %x : (tensor<4xf32>) -> tensor<5xi64>
  func.return %0 : tensor<5xi64>
}

// -----

func.func @where_values(%p: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @below {{values must share one element type}}
  %0 = rlx.where %p, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{Operation rlx.frobnicate is not registered}}
  %0 = rlx.frobnicate %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
