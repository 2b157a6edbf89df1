// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @add_bf16(%x: tensor<3xbf16>) -> tensor<3xbf16> {
  // expected-error @+1 {{'rlx.add' op does not compute in bf16, got tensor<3xbf16>: f16, bf16 and i8 are storage types; convert them to f32 with 'rlx.cast'}}
  %0 = rlx.add %x, %x : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  func.return %0 : tensor<3xbf16>
}

// -----

func.func @matmul_result_f16(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'rlx.matmul' op does not compute in f16, got tensor<2x4xf16>}}
  %0 = rlx.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf16>
  func.return %0 : tensor<2x4xf16>
}

// -----

func.func @narrow_bf16(%x: tensor<4xbf16>) -> tensor<2xbf16> {
  // expected-error @+1 {{'rlx.narrow' op does not compute in bf16, got tensor<4xbf16>}}
  %0 = rlx.narrow %x {axis = 0 : i64, start = 0 : i64, length = 2 : i64} : (tensor<4xbf16>) -> tensor<2xbf16>
  func.return %0 : tensor<2xbf16>
}

// -----

func.func @complex_to_bf16(%z: tensor<2xcomplex<f32>>) -> tensor<2xbf16> {
  // expected-error @+1 {{'rlx.cast' op cannot cast c64 to bf16}}
  %0 = rlx.cast %z : (tensor<2xcomplex<f32>>) -> tensor<2xbf16>
  func.return %0 : tensor<2xbf16>
}

// -----

func.func @add_i8(%x: tensor<3xi8>) -> tensor<3xi8> {
  // expected-error @+1 {{'rlx.add' op does not compute in i8, got tensor<3xi8>: f16, bf16 and i8 are storage types; convert them to i32 with 'rlx.cast'}}
  %0 = rlx.add %x, %x : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
  func.return %0 : tensor<3xi8>
}
