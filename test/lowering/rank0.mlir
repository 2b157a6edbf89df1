// Reshapes to and from rank 0 (a scalar loss, a 0-d index) lower to tensor.extract +
// tensor.from_elements: a 0-d expand/collapse_shape has an empty reassociation, which
// xDSL's verifier rejects. The output must verify and run natively as interpreted.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt > /dev/null
// RUN: rlx-run %s | FileCheck %s --check-prefix=EXEC
// RUN: rlx-run %s --interpret | FileCheck %s --check-prefix=EXEC

// CHECK-LABEL: func.func @scatter_at_a_scalar_index(
// CHECK:         tensor.extract %{{.*}}[] : tensor<i32>
// CHECK-NEXT:    tensor.from_elements %{{.*}} : tensor<1xi32>
// CHECK-NOT:     tensor.expand_shape
// CHECK:         func.return
// EXEC: result 0: tensor<5xf64>
// EXEC-NEXT: [0.000000, 0.000000, 0.000000, 2.500000, 0.000000]
// EXEC: result 1: tensor<f64>
// EXEC-NEXT: 2.500000
func.func @scatter_at_a_scalar_index() -> (tensor<5xf64>, tensor<f64>) {
  %g = rlx.constant {value = dense<2.5> : tensor<f64>} : () -> tensor<f64>
  %i = rlx.constant {value = dense<3> : tensor<i32>} : () -> tensor<i32>
  %d = rlx.gather_backward %g, %i {axis = 0 : i64} : (tensor<f64>, tensor<i32>) -> tensor<5xf64>
  %one = rlx.reshape %g : (tensor<f64>) -> tensor<1x1xf64>
  %back = rlx.reshape %one : (tensor<1x1xf64>) -> tensor<f64>
  func.return %d, %back : tensor<5xf64>, tensor<f64>
}
