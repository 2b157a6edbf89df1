// --int-high past an integer argument's range is an error, not a wrap-around.
// RUN: not rlx-run %s --int-high 1000 2>&1 | FileCheck %s
// RUN: rlx-run %s --int-high 128 | FileCheck %s --check-prefix=OK
// CHECK: error: --int-high 1000 is past the range of argument 'x' (int8: random integers are drawn from [0, K), K <= 128)
// OK: result 0: tensor<3xi8>
func.func @f(%x: tensor<3xi8>) -> tensor<3xi8> {
  func.return %x : tensor<3xi8>
}
