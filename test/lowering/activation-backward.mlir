// Lowering of relu_backward / activation_backward: one parallel generic computing
// f'(x) * dy with the interpreter's formulas; then on to LLVM, and run on constants.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM
// RUN: rlx-run %s --entry values | FileCheck %s --check-prefix=VALUES
// RUN: rlx-run %s --entry values --interpret | FileCheck %s --check-prefix=VALUES

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.

// relu_backward selects dy where x > 0 (ordered: NaN gives 0), no multiply.
// CHECK-LABEL: func.func @relu
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %dy : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: f32, %[[DY:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X]]
// CHECK: %[[R:.*]] = arith.select %[[GT]], %[[DY]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @relu(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = rlx.relu_backward %x, %dy : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// Exact gelu: cdf (erf) + x * pdf (exp), times dy; lowered erf calls libm's erf (f64).
// CHECK-LABEL: func.func @gelu
// CHECK: ^{{.*}}(%[[X:.*]]: f64, %[[DY:.*]]: f64, %{{.*}}: f64):
// CHECK: math.erf
// CHECK: math.exp
// CHECK: %[[D:.*]] = arith.addf
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[D]], %[[DY]] : f64
// CHECK-NEXT: linalg.yield %[[R]] : f64
// LLVM-LABEL: llvm.func @gelu
// LLVM: llvm.call @erf(
func.func @gelu(%x: tensor<4xf64>, %dy: tensor<4xf64>) -> tensor<4xf64> {
  %0 = rlx.activation_backward %x, %dy {kind = "gelu"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// sqrt: 0.5 / sqrt(x) only where x > 0 (the sqrt sees 1 elsewhere), else 0.
// CHECK-LABEL: func.func @sqrt_guard
// CHECK: %[[POS:.*]] = arith.cmpf ogt
// CHECK: %[[SAFE:.*]] = arith.select %[[POS]]
// CHECK: math.sqrt %[[SAFE]]
// CHECK: arith.divf
// CHECK: arith.select %[[POS]]
// CHECK: arith.mulf
func.func @sqrt_guard(%x: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  %0 = rlx.activation_backward %x, %dy {kind = "sqrt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// Hand-checked values at x = [-1, 0, 0.25, 4], dy = [2, 2, 2, 2]:
//   relu_backward: [0, 0, 2, 2]         sqrt: [0, 0, 2 * 0.5 / 0.5, 2 * 0.5 / 2] = [0, 0, 2, 0.5]
//   abs (sign): [-2, 0, 2, 2]           rsqrt: 2 * -0.5 * x^-1.5 = [0, 0, -8, -0.125]
//   tanh: 2 * (1 - tanh(x)^2) = [0.839949, 2, 1.880030, 0.002682]
// VALUES: result 0: tensor<4xf32>
// VALUES-NEXT: [0.000000, 0.000000, 2.000000, 2.000000]
// VALUES: result 1: tensor<4xf32>
// VALUES-NEXT: [0.000000, 0.000000, 2.000000, 0.500000]
// VALUES: result 2: tensor<4xf32>
// VALUES-NEXT: [-2.000000,  0.000000,  2.000000,  2.000000]
// VALUES: result 3: tensor<4xf32>
// VALUES-NEXT: [ 0.000000,  0.000000, -8.000000, -0.125000]
// VALUES: result 4: tensor<4xf32>
// VALUES-NEXT: [0.839949, 2.000000, 1.880030, 0.002682]
func.func @values() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %x = rlx.constant {value = dense<[-1.0, 0.0, 0.25, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %dy = rlx.constant {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = rlx.relu_backward %x, %dy : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = rlx.activation_backward %x, %dy {kind = "sqrt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = rlx.activation_backward %x, %dy {kind = "abs"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = rlx.activation_backward %x, %dy {kind = "rsqrt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = rlx.activation_backward %x, %dy {kind = "tanh"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
