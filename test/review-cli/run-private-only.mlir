// A module whose functions are all private: rlx-run names them and says how to pick one.
// RUN: not rlx-run %s 2>&1 | FileCheck %s
// RUN: rlx-run %s --entry g | FileCheck %s --check-prefix=RAN
// CHECK: error: module has no public function to run (private functions: @g); name one (rlx-run --entry NAME
// RAN: result 0
func.func private @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = rlx.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
