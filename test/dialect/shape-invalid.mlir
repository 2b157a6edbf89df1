// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: shape-invalid.mlir:7:3: error: 'rlx.reshape' op cannot reshape [2, 6] (12 elements) to [5, 2] (10 elements)

func.func @reshape_count(%x: tensor<2x6xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{cannot reshape [2, 6] (12 elements) to [5, 2] (10 elements)}}
  %0 = rlx.reshape %x : (tensor<2x6xf32>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// -----

func.func @reshape_dtype(%x: tensor<2x6xf32>) -> tensor<12xf64> {
  // expected-error @below {{result type mismatch: expected tensor<12xf32>, got tensor<12xf64>}}
  %0 = rlx.reshape %x : (tensor<2x6xf32>) -> tensor<12xf64>
  func.return %0 : tensor<12xf64>
}

// -----

func.func @perm_duplicate(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  // expected-error @below {{perm [0, 0, 2] is not a permutation of 0..2}}
  %0 = rlx.transpose %x {perm = array<i64: 0, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  func.return %0 : tensor<2x2x4xf32>
}

// -----

func.func @perm_negative_duplicate(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @below {{perm [1, -1] is not a permutation of 0..1}}
  %0 = rlx.transpose %x {perm = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// -----

func.func @perm_length(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{perm [1, 0] has 2 entries, expected 3}}
  %0 = rlx.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @perm_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{perm entry 2 is out of range for rank 2}}
  %0 = rlx.transpose %x {perm = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @perm_missing(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{missing required attribute 'perm'}}
  %0 = rlx.transpose %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @perm_kind(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{attribute 'perm' must be an array<i64: ...>, got 1}}
  %0 = rlx.transpose %x {perm = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @below {{result type mismatch: expected tensor<3x2xf32>, got tensor<2x3xf32>}}
  %0 = rlx.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @expand_dim(%x: tensor<3x2xf32>) -> tensor<4x3x5xf32> {
  // expected-error @below {{cannot expand [3, 2] to [4, 3, 5]: dim 2 is 2, expected 1 or 5}}
  %0 = rlx.expand %x : (tensor<3x2xf32>) -> tensor<4x3x5xf32>
  func.return %0 : tensor<4x3x5xf32>
}

// -----

func.func @expand_rank(%x: tensor<1x3x2xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{cannot expand [1, 3, 2] to lower rank [3, 2]}}
  %0 = rlx.expand %x : (tensor<1x3x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @expand_dtype(%x: tensor<3xf32>) -> tensor<2x3xi64> {
  // expected-error @below {{result type mismatch: expected tensor<2x3xf32>, got tensor<2x3xi64>}}
  %0 = rlx.expand %x : (tensor<3xf32>) -> tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x6xf32> {
  // expected-error @below {{operand 1 has shape [4, 3], incompatible with [2, 3] for concatenation along axis 1}}
  %0 = rlx.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{operand 1 has shape [2, 3, 1], incompatible with [2, 3] for concatenation along axis 0}}
  %0 = rlx.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_dtype(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) -> tensor<4x3xf32> {
  // expected-error @below {{'rlx.concat' op operands must share one element type}}
  %0 = rlx.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = rlx.concat %a, %a {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_no_axis(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{missing required attribute 'axis'}}
  %0 = rlx.concat %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_none() -> tensor<2xf32> {
  // expected-error @below {{'rlx.concat' op needs at least one operand}}
  %0 = rlx.concat {axis = 0 : i64} : () -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @concat_scalar(%a: tensor<f32>) -> tensor<2xf32> {
  // expected-error @below {{'rlx.concat' op operand must have rank >= 1}}
  %0 = rlx.concat %a, %a {axis = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @narrow_end(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{narrow [6, 9) is out of range for dim 1 of size 8}}
  %0 = rlx.narrow %x {axis = 1 : i64, start = 6 : i64, length = 3 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @narrow_start(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{narrow [-1, 2) is out of range for dim 1 of size 8}}
  %0 = rlx.narrow %x {axis = -1 : i64, start = -1 : i64, length = 3 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @narrow_empty(%x: tensor<4x8xf32>) -> tensor<0x8xf32> {
  // expected-error @below {{need 0 <= start, length >= 1, start + length <= 4}}
  %0 = rlx.narrow %x {axis = 0 : i64, start = 1 : i64, length = 0 : i64} : (tensor<4x8xf32>) -> tensor<0x8xf32>
  func.return %0 : tensor<0x8xf32>
}

// -----

func.func @narrow_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = rlx.narrow %x {axis = 2 : i64, start = 0 : i64, length = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @narrow_missing(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  // expected-error @below {{missing required attribute 'length'}}
  %0 = rlx.narrow %x {axis = 0 : i64, start = 0 : i64} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  func.return %0 : tensor<1x8xf32>
}

// -----

func.func @gather_index_dtype(%w: tensor<10x4xf32>, %i: tensor<3xi1>) -> tensor<3x4xf32> {
  // expected-error @below {{'rlx.gather' op indices must be i32, i64 or f32-encoded integers, got tensor<3xi1>}}
  %0 = rlx.gather %w, %i : (tensor<10x4xf32>, tensor<3xi1>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @gather_bool_index(%w: tensor<10x4xf32>, %i: tensor<3xi1>) -> tensor<3x4xf32> {
  // expected-error @below {{'rlx.gather' op indices must be i32, i64 or f32-encoded integers}}
  %0 = rlx.gather %w, %i : (tensor<10x4xf32>, tensor<3xi1>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @gather_axis(%w: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = rlx.gather %w, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @gather_result(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<6x4xf32> {
  // expected-error @below {{result type mismatch: expected tensor<2x3x4xf32>, got tensor<6x4xf32>}}
  %0 = rlx.gather %w, %i : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<6x4xf32>
  func.return %0 : tensor<6x4xf32>
}

// -----

func.func @gather_scalar_table(%w: tensor<f32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @below {{'rlx.gather' op table must have rank >= 1}}
  %0 = rlx.gather %w, %i : (tensor<f32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @gather_empty_dim(%w: tensor<0x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @below {{'rlx.gather' op cannot index the empty dim 0}}
  %0 = rlx.gather %w, %i : (tensor<0x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_length(%u: tensor<5x4xf32>, %i: tensor<4xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{indices must have shape [5] (one per updates dim 0), got [4]}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xf32>, tensor<4xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @scatter_rank(%u: tensor<5x4xf32>, %i: tensor<5x1xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{indices must have shape [5] (one per updates dim 0), got [5, 1]}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xf32>, tensor<5x1xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @scatter_result(%u: tensor<5x4xf32>, %i: tensor<5xi64>) -> tensor<10x3xf32> {
  // expected-error @below {{result shape [10, 3] must equal the updates shape [5, 4] except along axis 0}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xf32>, tensor<5xi64>) -> tensor<10x3xf32>
  func.return %0 : tensor<10x3xf32>
}

// -----

func.func @scatter_result_rank(%u: tensor<5x4xf32>, %i: tensor<4xi64>) -> tensor<5x4x1xf32> {
  // expected-error @below {{result shape [5, 4, 1] must equal the updates shape [5, 4] except along axis 1}}
  %0 = rlx.scatter_add %u, %i {axis = -1 : i64} : (tensor<5x4xf32>, tensor<4xi64>) -> tensor<5x4x1xf32>
  func.return %0 : tensor<5x4x1xf32>
}

// -----

func.func @scatter_result_dtype(%u: tensor<5x4xf32>, %i: tensor<5xi64>) -> tensor<10x4xf64> {
  // expected-error @below {{result type mismatch: expected tensor<10x4xf32>, got tensor<10x4xf64>}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xf32>, tensor<5xi64>) -> tensor<10x4xf64>
  func.return %0 : tensor<10x4xf64>
}

// -----

func.func @scatter_bool(%u: tensor<5xi1>, %i: tensor<5xi64>) -> tensor<10xi1> {
  // expected-error @below {{'rlx.scatter_add' op updates has element type i1 (supported: f32, f64, i32, i64)}}
  %0 = rlx.scatter_add %u, %i : (tensor<5xi1>, tensor<5xi64>) -> tensor<10xi1>
  func.return %0 : tensor<10xi1>
}

// -----

func.func @scatter_index_dtype(%u: tensor<5x4xf32>, %i: tensor<5xi1>) -> tensor<10x4xf32> {
  // expected-error @below {{'rlx.scatter_add' op indices must be i32, i64 or f32-encoded integers}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xf32>, tensor<5xi1>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @complex_scatter(%u: tensor<5x4xcomplex<f32>>, %i: tensor<5xi32>) -> tensor<10x4xcomplex<f32>> {
  // expected-error @below {{'rlx.scatter_add' op updates has element type c64 (supported: f32, f64, i32, i64)}}
  %0 = rlx.scatter_add %u, %i : (tensor<5x4xcomplex<f32>>, tensor<5xi32>) -> tensor<10x4xcomplex<f32>>
  func.return %0 : tensor<10x4xcomplex<f32>>
}

// -----

func.func @unknown_attr(%x: tensor<2x6xf32>) -> tensor<12xf32> {
  // expected-error @below {{unknown attribute 'shape' (allowed: none)}}
  %0 = rlx.reshape %x {shape = array<i64: 12>} : (tensor<2x6xf32>) -> tensor<12xf32>
  func.return %0 : tensor<12xf32>
}

// -----

// A type whose size in bytes does not fit int64 (MLIR's dimensions and memref sizes).
// expected-error @below {{type tensor<99999999999999999999xf32> is too large: its size in bytes does not fit a 64-bit integer}}
func.func @too_large(%x: tensor<99999999999999999999xf32>) -> tensor<99999999999999999999xf32> {
  func.return %x : tensor<99999999999999999999xf32>
}

// -----

func.func @too_large_result(%x: tensor<4xf32>) -> tensor<4611686018427387904x4xf32> {
  // expected-error @below {{type tensor<4611686018427387904x4xf32> is too large}}
  %0 = rlx.expand %x : (tensor<4xf32>) -> tensor<4611686018427387904x4xf32>
  func.return %0 : tensor<4611686018427387904x4xf32>
}
