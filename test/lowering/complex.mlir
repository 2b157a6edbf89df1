// Complex tensors lower to linalg.generic bodies in MLIR's complex dialect, then to LLVM
// structs; native results against SPEC's textbook values (the interpreter agrees).
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM
// RUN: rlx-run %s --entry textbook | FileCheck %s --check-prefix=NATIVE
// RUN: rlx-run %s --entry textbook --interpret | FileCheck %s --check-prefix=NATIVE

// LLVM-NOT: complex.
// LLVM: llvm.func @textbook

// (1+2i)(3+4i) = -5+10i; (1+2i)/(3+4i) = 0.44+0.08i; exp(i pi) = -1; log(-1) = i pi;
// |3+4i|^2 = 25; conj(1+2i) = 1-2i; Re, Im of (3+4i). Products, quotients (Smith's) and
// logs (atan2; ln of the scaled modulus, near |z| = 1 log1p((a - 1)(a + 1) + b^2) / 2 in
// f64) are written from the parts, as numpy computes them.
// CHECK-LABEL: func.func @textbook
// CHECK: linalg.generic
// CHECK: complex.create
// CHECK: complex.re
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: complex.create
// CHECK: math.absf
// CHECK: arith.cmpf oge
// CHECK: arith.divf
// CHECK: complex.exp
// CHECK: math.atan2
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: complex.re
// CHECK: complex.im
// CHECK: complex.conj
// CHECK-NOT: rlx.
// NATIVE: result 0: tensor<2xcomplex<f32>>
// NATIVE-NEXT: [-5.000000+10.000000j,  0.440000 +0.080000j]
// NATIVE: result 1: tensor<2xcomplex<f32>>
// NATIVE-NEXT: [-1.000000{{[-+]}}0.000000j,  0.000000+3.141593j]
// NATIVE: result 2: tensor<f32>
// NATIVE-NEXT: 25.000000
// NATIVE: result 3: tensor<2xcomplex<f32>>
// NATIVE-NEXT: [1.000000-2.000000j, 3.000000-4.000000j]
func.func @textbook() -> (tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>, tensor<f32>, tensor<2xcomplex<f32>>) {
  %re = rlx.constant {value = dense<[1.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %im = rlx.constant {value = dense<[2.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = rlx.complex %re, %im : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xcomplex<f32>>
  %b = rlx.narrow %a {axis = 0 : i64, start = 1 : i64, length = 1 : i64} : (tensor<2xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %a0 = rlx.narrow %a {axis = 0 : i64, start = 0 : i64, length = 1 : i64} : (tensor<2xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %p = rlx.mul %a0, %b : (tensor<1xcomplex<f32>>, tensor<1xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %q = rlx.div %a0, %b : (tensor<1xcomplex<f32>>, tensor<1xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %pq = rlx.concat %p, %q {axis = 0 : i64} : (tensor<1xcomplex<f32>>, tensor<1xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  %pi = rlx.constant {value = dense<3.14159265> : tensor<1xf32>} : () -> tensor<1xf32>
  %zero = rlx.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %ipi = rlx.complex %zero, %pi : (tensor<f32>, tensor<1xf32>) -> tensor<1xcomplex<f32>>
  %e = rlx.exp %ipi : (tensor<1xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %minus1 = rlx.constant {value = dense<-1.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %m1 = rlx.complex %minus1, %zero : (tensor<1xf32>, tensor<f32>) -> tensor<1xcomplex<f32>>
  %l = rlx.log %m1 : (tensor<1xcomplex<f32>>) -> tensor<1xcomplex<f32>>
  %out1 = rlx.concat %e, %l {axis = 0 : i64} : (tensor<1xcomplex<f32>>, tensor<1xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  %n = rlx.complex_norm_sq %b : (tensor<1xcomplex<f32>>) -> tensor<1xf32>
  %n0 = rlx.reshape %n : (tensor<1xf32>) -> tensor<f32>
  %r = rlx.real %a : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  %i = rlx.imag %a : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  %ri = rlx.complex %r, %i : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xcomplex<f32>>
  %c = rlx.conjugate %ri : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  func.return %pq, %out1, %n0, %c : tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>, tensor<f32>, tensor<2xcomplex<f32>>
}
