// A complex matmul is four real matmuls of the parts, each scheduled as a real one (a
// contraction on complex<f32> elements stays scalar code: 512x512 c64 took 0.40 s):
// (ar br - ai bi) + i (ar bi + ai br).
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry cmm | FileCheck %s --check-prefix=NATIVE
// RUN: rlx-run %s --entry cmm --interpret | FileCheck %s --check-prefix=NATIVE

// CHECK-LABEL: func.func @cmm
// CHECK-COUNT-4: complex.{{re|im}}
// CHECK-COUNT-4: linalg.matmul ins({{.*}} : tensor<2x2xf32>, tensor<2x2xf32>)
// CHECK: %[[RE:.*]] = arith.subf
// CHECK: %[[IM:.*]] = arith.addf
// CHECK: complex.create %[[RE]], %[[IM]] : complex<f32>
// CHECK-NOT: complex.mul
// [[1+i, 2], [0, i]] @ [[1, i], [1-i, 2]] = [[3-i, 3+i], [1+i, 2i]]
// NATIVE: result 0: tensor<2x2xcomplex<f32>>
// NATIVE-NEXT: {{\[\[}}3.000000-1.000000j, {{ *}}3.000000+1.000000j],
// NATIVE-NEXT: {{ *}}[1.000000+1.000000j, {{ *}}0.000000+2.000000j]]
func.func @cmm() -> tensor<2x2xcomplex<f32>> {
  %ar = rlx.constant {value = dense<[[1.0, 2.0], [0.0, 0.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %ai = rlx.constant {value = dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %br = rlx.constant {value = dense<[[1.0, 0.0], [1.0, 2.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %bi = rlx.constant {value = dense<[[0.0, 1.0], [-1.0, 0.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %a = rlx.complex %ar, %ai : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>>
  %b = rlx.complex %br, %bi : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>>
  %c = rlx.matmul %a, %b : (tensor<2x2xcomplex<f32>>, tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>>
  func.return %c : tensor<2x2xcomplex<f32>>
}
