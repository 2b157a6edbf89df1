// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @contraction_mismatch(%x: tensor<6x4xf32>, %w: tensor<3x5x5xf32>, %ids: tensor<6xi32>) -> tensor<6x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op w must be [E, K, N] with E >= 1 and K = 4 (x's columns), got [3, 5, 5]}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x5x5xf32>, tensor<6xi32>) -> tensor<6x5xf32>
  func.return %y : tensor<6x5xf32>
}

// -----

func.func @transposed_layout(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>, %ids: tensor<6xi32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op w must be [E, N, K] with E >= 1 and K = 4 (x's columns), got [3, 4, 5]}}
  %y = rlx.grouped_matmul %x, %w, %ids {transpose_w = true} : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// -----

func.func @one_id_per_token(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>, %ids: tensor<5xi32>) -> tensor<6x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op expert ids must have shape [6] (one per row of x), got [5]}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<5xi32>) -> tensor<6x5xf32>
  func.return %y : tensor<6x5xf32>
}

// -----

func.func @bool_ids(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>, %ids: tensor<6xi1>) -> tensor<6x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op expert ids must be i32, i64 or f32-encoded integers, got tensor<6xi1>}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi1>) -> tensor<6x5xf32>
  func.return %y : tensor<6x5xf32>
}

// -----

func.func @integer_tokens(%x: tensor<6x4xi32>, %w: tensor<3x4x5xi32>, %ids: tensor<6xi32>) -> tensor<6x5xi32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op computes in f32 or f64, got x tensor<6x4xi32>}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xi32>, tensor<3x4x5xi32>, tensor<6xi32>) -> tensor<6x5xi32>
  func.return %y : tensor<6x5xi32>
}

// -----

func.func @mixed_precision(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf64>, %ids: tensor<6xi32>) -> tensor<6x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op w must have x's element type f32, got tensor<3x4x5xf64>}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf64>, tensor<6xi32>) -> tensor<6x5xf32>
  func.return %y : tensor<6x5xf32>
}

// -----

func.func @result_shape(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>, %ids: tensor<6xi32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op result type mismatch: expected tensor<6x5xf32>, got tensor<6x4xf32>}}
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// -----

func.func @no_experts(%x: tensor<6x4xf32>, %dy: tensor<6x5xf32>, %ids: tensor<6xi32>) -> tensor<0x4x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul_backward_weight' op experts must be >= 1, got 0}}
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 0 : i64} : (tensor<6x4xf32>, tensor<6x5xf32>, tensor<6xi32>) -> tensor<0x4x5xf32>
  func.return %dw : tensor<0x4x5xf32>
}

// -----

func.func @gradient_rows(%x: tensor<6x4xf32>, %dy: tensor<5x5xf32>, %ids: tensor<6xi32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul_backward_weight' op dy must be [6, N] of x's element type f32, got tensor<5x5xf32>}}
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 3 : i64} : (tensor<6x4xf32>, tensor<5x5xf32>, tensor<6xi32>) -> tensor<3x4x5xf32>
  func.return %dw : tensor<3x4x5xf32>
}

// -----

func.func @missing_experts(%x: tensor<6x4xf32>, %dy: tensor<6x5xf32>, %ids: tensor<6xi32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul_backward_weight' op missing required attribute 'experts'}}
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids : (tensor<6x4xf32>, tensor<6x5xf32>, tensor<6xi32>) -> tensor<3x4x5xf32>
  func.return %dw : tensor<3x4x5xf32>
}
