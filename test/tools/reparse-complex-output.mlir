// rlx-opt re-reads --lower-to-linalg output holding complex ops (complex.create, ...)
// and lowers it on; rlx-run runs it to the same numbers.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt --lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --lower-to-linalg > %t.mlir
// RUN: rlx-run %t.mlir --seed 1 | FileCheck %s --check-prefix=VALUES
// RUN: rlx-run %s --seed 1 | FileCheck %s --check-prefix=VALUES
// LINALG: complex.create
// LLVM: llvm.func @f
// VALUES: [0.345584, 0.821618]
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %z = rlx.complex %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xcomplex<f32>>
  %r = rlx.real %z : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
