// Native (JIT) results of elementwise ops, checked against hand-computed values;
// the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry mix | FileCheck %s --check-prefix=MIX
// RUN: rlx-run %s --entry mix --interpret | FileCheck %s --check-prefix=MIX
// RUN: rlx-run %s --entry ints | FileCheck %s --check-prefix=INTS
// RUN: rlx-run %s --entry ints --interpret | FileCheck %s --check-prefix=INTS
// RUN: rlx-run %s --entry scalar | FileCheck %s --check-prefix=SCALAR

// MIX: result 0: tensor<2x3xf32>
// MIX-NEXT: {{\[\[}}0.000000, 0.000000, 3.000000],
// MIX-NEXT: [2.500000, 0.000000, 4.500000]]
// MIX: result 1: tensor<2x3xf32>
// MIX-NEXT: {{\[\[}}-0.154269,  0.000000,  2.99595{{[01]}}],
// MIX-NEXT: [ 2.484476, -0.154269,  4.49998{{[45]}}]]
// MIX: result 2: tensor<2x3xi1>
// MIX-NEXT: {{\[\[}}False, False,  True],
// MIX-NEXT: [ True, False,  True]]
// MIX: result 3: tensor<2x3xi32>
// MIX-NEXT: {{\[\[}}-3, -1,  1],
// MIX-NEXT: [ 1, -2,  3]]
func.func @mix() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>) {
  %x = rlx.constant {value = dense<[[-1.5, -0.5, 2.0], [1.5, -1.0, 3.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %b = rlx.constant {value = dense<[1.0, 0.5, 1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %s = rlx.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = rlx.relu %s : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %m1 = rlx.constant {value = dense<-1.0> : tensor<f32>} : () -> tensor<f32>
  %g0 = rlx.max %s, %m1 : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %g = rlx.gelu %g0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = rlx.compare %s, %b {predicate = "gt"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %h = rlx.sub %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %i = rlx.cast %h : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return %r, %g, %p, %i : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>
}

// INTS: result 0: tensor<4xi64>
// INTS-NEXT: [ 3, -3,  0, -3]
// INTS: result 1: tensor<4xi64>
// INTS-NEXT: [49, 49,  1,  1]
func.func @ints() -> (tensor<4xi64>, tensor<4xi64>) {
  %a = rlx.constant {value = dense<[7, -7, 5, 3]> : tensor<4xi64>} : () -> tensor<4xi64>
  %c = rlx.constant {value = dense<[2, 2, 0, -1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %q = rlx.div %a, %c : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %p = rlx.pow %a, %c : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %q, %p : tensor<4xi64>, tensor<4xi64>
}

// SCALAR: result 0: tensor<f64>
// SCALAR-NEXT: -3.000000
func.func @scalar() -> tensor<f64> {
  %a = rlx.constant {value = dense<-2.5> : tensor<f64>} : () -> tensor<f64>
  %r = rlx.round %a : (tensor<f64>) -> tensor<f64>
  func.return %r : tensor<f64>
}
