// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: complex-invalid.mlir:7:3: error: 'rlx.complex_norm_sq' op operand must be c64 or c128, got f32

func.func @norm_of_real(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.complex_norm_sq' op operand must be c64 or c128, got f32}}
  %0 = rlx.complex_norm_sq %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @mixed_parts(%re: tensor<3xf32>, %im: tensor<3xf64>) -> tensor<3xcomplex<f32>> {
  // expected-error @+1 {{'rlx.complex' op second operand must be f32, got f64}}
  %0 = rlx.complex %re, %im : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xcomplex<f32>>
  func.return %0 : tensor<3xcomplex<f32>>
}

// -----

func.func @ordered(%a: tensor<3xcomplex<f32>>) -> tensor<3xi1> {
  // expected-error @+1 {{complex numbers are not ordered: predicate 'lt' on c64 (only eq and ne)}}
  %0 = rlx.compare %a, %a {predicate = "lt"} : (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}

// -----

func.func @complex_max(%a: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  // expected-error @+1 {{'rlx.max' op does not support element type c64}}
  %0 = rlx.max %a, %a : (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  func.return %0 : tensor<3xcomplex<f32>>
}

// -----

func.func @complex_relu(%a: tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
  // expected-error @+1 {{'rlx.relu' op does not support element type c128 (supported: f32, f64)}}
  %0 = rlx.relu %a : (tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>>
  func.return %0 : tensor<3xcomplex<f64>>
}
