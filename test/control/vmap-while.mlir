// vmap of an rlx.while without max_iterations stays one loop (as JAX batches
// while_loop): the batched cond is "any element still looping", and the body keeps the
// state of the elements whose own cond is false. With a bound the loop is unrolled with
// a mask per element, as under autodiff. Values: test/python/test_control_frontend.py.
// RUN: rlx-opt %s "--vmap=func=unbounded batched=x size=3" | rlx-opt | FileCheck %s
func.func @unbounded(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = rlx.while %x : (tensor<2xf32>) -> tensor<2xf32> ({
  ^bb0(%s: tensor<2xf32>):
    %sum = rlx.reduce_sum %s {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    %c = rlx.constant {value = dense<10.0> : tensor<f32>} : () -> tensor<f32>
    %p = rlx.compare %sum, %c {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %p : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<2xf32>):
    %d = rlx.add %s, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %d : (tensor<2xf32>) -> ()
  })
  func.return %0 : tensor<2xf32>
}
// CHECK-LABEL: func.func @unbounded_vmap(%x: tensor<3x2xf32>
// CHECK-NEXT: rlx.while %x : (tensor<3x2xf32>) -> tensor<3x2xf32> ({
// CHECK: %[[SUM:.*]] = rlx.reduce_sum {{.*}} : (tensor<3x2xf32>) -> tensor<3xf32>
// CHECK: %[[LT:.*]] = rlx.compare %[[SUM]], {{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
// CHECK: %[[F:.*]] = rlx.cast %[[LT]] : (tensor<3xi1>) -> tensor<3xf32>
// CHECK: %[[ANY:.*]] = rlx.reduce_max %[[F]] {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
// CHECK: %[[P:.*]] = rlx.compare %[[ANY]], {{.*}} {predicate = "gt"}
// CHECK: rlx.yield %[[P]] : (tensor<i1>) -> ()
// CHECK: ^bb0(%[[S:.*]]: tensor<3x2xf32>):
// CHECK: %[[NEXT:.*]] = rlx.add %[[S]], %[[S]]
// CHECK: %[[KEEP:.*]] = rlx.expand {{.*}} : (tensor<3x1xi1>) -> tensor<3x2xi1>
// CHECK: %[[OUT:.*]] = rlx.where %[[KEEP]], %[[NEXT]], %[[S]]
// CHECK: rlx.yield %[[OUT]]
// CHECK-NOT: rlx.while
// CHECK: return
