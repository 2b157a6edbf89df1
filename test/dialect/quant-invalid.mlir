// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @wrong_scale_extent(%x: tensor<4x3xf32>, %s: tensor<4xf32>, %zp: tensor<4xi32>) -> tensor<4x3xi8> {
  // expected-error @+1 {{'rlx.quantize' op scale must be f32 of shape [3], got tensor<4xf32>}}
  %q = rlx.quantize %x, %s, %zp {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4xf32>, tensor<4xi32>) -> tensor<4x3xi8>
  func.return %q : tensor<4x3xi8>
}

// -----

func.func @float_zero_point(%x: tensor<4xf32>, %s: tensor<f32>, %zp: tensor<f32>) -> tensor<4xi8> {
  // expected-error @+1 {{'rlx.quantize' op zero_point must be i32 of shape [] or [1], got tensor<f32>}}
  %q = rlx.quantize %x, %s, %zp : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xi8>
  func.return %q : tensor<4xi8>
}

// -----

func.func @dequantize_float(%x: tensor<4xf32>, %s: tensor<f32>, %zp: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.dequantize' op q must be i8, got tensor<4xf32>}}
  %d = rlx.dequantize %x, %s, %zp : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

func.func @bits(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.fake_quantize' op bits must be 8, 4 or 2, got 3}}
  %y = rlx.fake_quantize %x {bits = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @ste(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.fake_quantize' op ste must be one of identity, clipped_identity, tanh, hard_tanh, got 'sigmoid'}}
  %y = rlx.fake_quantize %x {ste = "sigmoid"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @dy_shape(%x: tensor<4xf32>, %dy: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.fake_quantize_backward' op dy must have the type of x (tensor<4xf32>), got tensor<3xf32>}}
  %y = rlx.fake_quantize_backward %x, %dy : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @qmatmul_inner(%x: tensor<2x3xi8>, %w: tensor<4x5xi8>, %b: tensor<5xi32>) -> tensor<2x5xi8> {
  // expected-error @+1 {{'rlx.qmatmul' op x is [2, 3] but w is [4, 5]: inner dims differ}}
  %y = rlx.qmatmul %x, %w, %b {mult = 1.0 : f32} : (tensor<2x3xi8>, tensor<4x5xi8>, tensor<5xi32>) -> tensor<2x5xi8>
  func.return %y : tensor<2x5xi8>
}

// -----

func.func @qmatmul_mult(%x: tensor<2x3xi8>, %w: tensor<3x5xi8>, %b: tensor<5xi32>) -> tensor<2x5xi8> {
  // expected-error @+1 {{'rlx.qmatmul' op missing required attribute 'mult'}}
  %y = rlx.qmatmul %x, %w, %b : (tensor<2x3xi8>, tensor<3x5xi8>, tensor<5xi32>) -> tensor<2x5xi8>
  func.return %y : tensor<2x5xi8>
}
