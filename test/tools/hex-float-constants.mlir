// A hex integer in a float dense literal is the element's bit pattern (as in MLIR):
// -inf/nan constants survive print -> re-parse, the interpreter and native code.
// RUN: rlx-opt %s | FileCheck %s --check-prefix=PRINT
// RUN: rlx-opt %s | rlx-opt | FileCheck %s --check-prefix=PRINT
// PRINT: dense<[0xff800000, 1.000000e+00, 0x7fc00000]> : tensor<3xf32>
// PRINT: dense<0xfff0000000000000> : tensor<2xf64>
// RUN: rlx-run %s --interpret | FileCheck %s --check-prefix=OUT
// RUN: rlx-run %s | FileCheck %s --check-prefix=OUT
// RUN: rlx-opt %s | rlx-run - | FileCheck %s --check-prefix=OUT
// RUN: rlx-run %s --entry g | FileCheck %s --check-prefix=F64
// OUT-NOT: 4294
// OUT: result 0: tensor<3xf32>
// OUT-NEXT: [{{ *}}-inf, 1.000000, {{ *}}nan]
// F64: [-inf, -inf]
func.func @f() -> tensor<3xf32> {
  %0 = rlx.constant {value = dense<[0xFF800000, 0x3F800000, 0x7FC00000]> : tensor<3xf32>} : () -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
func.func @g() -> tensor<2xf64> {
  %0 = rlx.constant {value = dense<0xFFF0000000000000> : tensor<2xf64>} : () -> tensor<2xf64>
  func.return %0 : tensor<2xf64>
}
