// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @k_too_large(%x: tensor<3x5xf32>) -> tensor<3x6xi32> {
  // expected-error @below {{k must be in [1, 5] (the last axis), got 6}}
  %0 = rlx.top_k %x {k = 6 : i64} : (tensor<3x5xf32>) -> tensor<3x6xi32>
  func.return %0 : tensor<3x6xi32>
}

// -----

func.func @scalar(%x: tensor<f32>) -> tensor<1xi32> {
  // expected-error @below {{'rlx.top_k' op takes a real or integer tensor of rank >= 1, got f32[]}}
  %0 = rlx.top_k %x {k = 1 : i64} : (tensor<f32>) -> tensor<1xi32>
  func.return %0 : tensor<1xi32>
}

// -----

func.func @complex(%x: tensor<4xcomplex<f32>>) -> tensor<2xi32> {
  // expected-error @below {{'rlx.top_k' op takes a real or integer tensor of rank >= 1, got c64[4]}}
  %0 = rlx.top_k %x {k = 2 : i64} : (tensor<4xcomplex<f32>>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}

// -----

func.func @no_k(%x: tensor<4xf32>) -> tensor<2xi32> {
  // expected-error @below {{k}}
  %0 = rlx.top_k %x : (tensor<4xf32>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
