// --print-no-properties prints properties as attributes (it was silently ignored); the
// result reads back. --syntax-highlight colours the output (also ignored before).
// RUN: rlx-opt %s --print-op-generic --print-no-properties | FileCheck %s
// RUN: rlx-opt %s --print-op-generic --print-no-properties | rlx-opt | FileCheck %s --check-prefix=BACK
// RUN: rlx-opt %s --print-between-passes --cse --print-op-generic --print-no-properties 2>&1 >/dev/null | FileCheck %s
// CHECK: "func.func"() ({
// CHECK: }) {sym_name = "f", function_type = (tensor<3xf32>) -> tensor<3xf32>} : () -> ()
// BACK: func.func @f(%x: tensor<3xf32>) -> tensor<3xf32>
// RUN: rlx-opt %s --syntax-highlight | FileCheck %s --check-prefix=COLOUR
// COLOUR: {{.\[[0-9;]+m}}%0{{.\[0m}} = rlx.tanh
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
