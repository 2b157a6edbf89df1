// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @real_operand(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'rlx.fft' op operand must be c64 or c128 (cast real data first), got f32}}
  %0 = rlx.fft %x : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @bad_norm(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{'rlx.fft' op norm must be one of backward, ortho, forward, none, got 'unitary'}}
  %0 = rlx.fft %x {norm = "unitary"} : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  func.return %0 : tensor<8xcomplex<f32>>
}

// -----

func.func @scalar(%x: tensor<complex<f32>>) -> tensor<complex<f32>> {
  // expected-error @+1 {{'rlx.fft' op operand must have rank >= 1}}
  %0 = rlx.fft %x : (tensor<complex<f32>>) -> tensor<complex<f32>>
  func.return %0 : tensor<complex<f32>>
}

// -----

func.func @shape_change(%x: tensor<8xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{'rlx.fft' op result type mismatch: expected tensor<8xcomplex<f32>>, got tensor<4xcomplex<f32>>}}
  %0 = rlx.fft %x : (tensor<8xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  func.return %0 : tensor<4xcomplex<f32>>
}

// -----

func.func @inverse_not_bool(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{'rlx.fft' op attribute 'inverse' must be a bool, got 1}}
  %0 = rlx.fft %x {inverse = 1 : i64} : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  func.return %0 : tensor<8xcomplex<f32>>
}
