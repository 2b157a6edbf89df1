// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @float_key(%k: tensor<f32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.rng_uniform' op key must be an i64 or i32 tensor, got tensor<f32>}}
  %0 = rlx.rng_uniform %k : (tensor<f32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @key_vector(%k: tensor<2xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.rng_normal' op result shape [3] must start with the key shape [2]}}
  %0 = rlx.rng_normal %k : (tensor<2xi32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @integer_samples(%k: tensor<i32>) -> tensor<3xi32> {
  // expected-error @+1 {{'rlx.rng_uniform' op result must be f32 or f64, got tensor<3xi32>}}
  %0 = rlx.rng_uniform %k : (tensor<i32>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
