// `expected-error @unknown {{...}}` (MLIR syntax) matches an error without a location;
// it was ignored, so the unlocated error was "unexpected" and the expectation unchecked.
// RUN: rlx-opt %s --autodiff=func=nope --verify-diagnostics
// RUN: not rlx-opt %s --verify-diagnostics 2>&1 | FileCheck %s
// CHECK: verify-unknown-loc.mlir:[[@LINE+1]]:1: error: expected error "no function named 'nope'" at an unknown location was not produced
// expected-error @unknown {{no function named 'nope'}}
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
