// --verify-diagnostics as mlir-opt's: an expected-error-re holds {{regex}} parts, and
// @below stacked over another expectation targets the next line holding none.
// RUN: rlx-opt %s --verify-diagnostics
// An -re expectation that nothing produces is a failure (it used to pass unread):
// RUN: sed -n 's|^// NEG: ||p' %s | sed 's/EXPECTED/expected/' > %t.mlir
// RUN: not rlx-opt %t.mlir --verify-diagnostics 2>&1 | FileCheck %s
// CHECK: error: expected error "result type {{.*}} expected" at line 3 was not produced

func.func @stacked(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error-re @below {{result type mismatch{{.*}}tensor<4xf32>}}
  // expected-error @+2 {{result type mismatch}}
  %y = rlx.add %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
  %z = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<5xf32>
  func.return %x : tensor<3xf32>
}

// NEG: func.func @g(%x: tensor<3xf32>) -> tensor<3xf32> {
// NEG:   // EXPECTED-error-re @below {{result type {{.*}} expected}}
// NEG:   func.return %x : tensor<3xf32>
// NEG: }
