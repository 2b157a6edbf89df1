// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: indexing-backward-invalid.mlir:7:3: error: 'rlx.cumsum_backward' op result type tensor<5x2xf32> must equal dy's type tensor<2x5xf32>

func.func @cumsum_result(%dy: tensor<2x5xf32>) -> tensor<5x2xf32> {
  // expected-error @below {{result type tensor<5x2xf32> must equal dy's type tensor<2x5xf32>}}
  %0 = rlx.cumsum_backward %dy : (tensor<2x5xf32>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// -----

func.func @cumsum_axis(%dy: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = rlx.cumsum_backward %dy {axis = 2 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @cumsum_rank0(%dy: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'rlx.cumsum_backward' op dy must have rank >= 1, got tensor<f32>}}
  %0 = rlx.cumsum_backward %dy : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @cumsum_bool(%dy: tensor<3xi1>) -> tensor<3xi1> {
  // expected-error @below {{'rlx.cumsum_backward' op does not support element type i1}}
  %0 = rlx.cumsum_backward %dy : (tensor<3xi1>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}

// -----

func.func @cumsum_exclusive_kind(%dy: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{attribute 'exclusive'}}
  %0 = rlx.cumsum_backward %dy {exclusive = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// SPEC 9.29: dy must hold numel(indices) positions in gather's result layout.
func.func @gather_dy_shape(%dy: tensor<6x4xf32>, %ids: tensor<2x3xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{dy must have gather's result shape [2, 3, 4] for table [10, 4], indices [2, 3] and axis 0, got [6, 4]}}
  %0 = rlx.gather_backward %dy, %ids : (tensor<6x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @gather_axis_shape(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{dy must have gather's result shape [10, 3] for table [10, 4], indices [3] and axis 1, got [3, 4]}}
  %0 = rlx.gather_backward %dy, %ids {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @gather_index_dtype(%dy: tensor<3x4xf32>, %ids: tensor<3xi1>) -> tensor<10x4xf32> {
  // expected-error @below {{'rlx.gather_backward' op indices must be i32, i64 or f32-encoded integers, got tensor<3xi1>}}
  %0 = rlx.gather_backward %dy, %ids : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @gather_result_dtype(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) -> tensor<10x4xf64> {
  // expected-error @below {{'rlx.gather_backward' op dy and result}}
  %0 = rlx.gather_backward %dy, %ids : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf64>
  func.return %0 : tensor<10x4xf64>
}

// -----

func.func @gather_empty_dim(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) -> tensor<0x4xf32> {
  // expected-error @below {{cannot scatter into the empty dim 0 of tensor<0x4xf32>}}
  %0 = rlx.gather_backward %dy, %ids : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<0x4xf32>
  func.return %0 : tensor<0x4xf32>
}

// -----

func.func @gather_axis_range(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = rlx.gather_backward %dy, %ids {axis = -3 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}

// -----

func.func @gather_unknown_attr(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) -> tensor<10x4xf32> {
  // expected-error @below {{unknown attribute 'dim'}}
  %0 = rlx.gather_backward %dy, %ids {dim = 0 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  func.return %0 : tensor<10x4xf32>
}
