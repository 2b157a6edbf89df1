// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM
// UPSTREAM: "rlx.scan"

// CHECK-LABEL: func.func @cumulative
// CHECK: %{{.*}} = rlx.scan %init, %xs {length = 4 : i64, num_xs = 1 : i64} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32> ({
// CHECK-NEXT: ^{{.*}}(%{{.*}}: tensor<3xf32>, %{{.*}}: tensor<3xf32>):
// CHECK: rlx.yield
func.func @cumulative(%init: tensor<3xf32>, %xs: tensor<4x3xf32>) -> tensor<3xf32> {
  %c = rlx.scan %init, %xs {length = 4 : i64, num_xs = 1 : i64} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32> ({
  ^bb0(%carry: tensor<3xf32>, %x: tensor<3xf32>):
    %n = rlx.add %carry, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  func.return %c : tensor<3xf32>
}

// CHECK-LABEL: func.func @trajectory
// CHECK: rlx.scan %{{.*}}, %{{.*}} {length = 6 : i64, save_trajectory = true, num_checkpoints = 2 : i64} : (tensor<2xf64>, tensor<2xf64>) -> tensor<2x2xf64>
func.func @trajectory(%init: tensor<2xf64>, %scale: tensor<2xf64>) -> tensor<2x2xf64> {
  %t = rlx.scan %init, %scale {length = 6 : i64, save_trajectory = true, num_checkpoints = 2 : i64} : (tensor<2xf64>, tensor<2xf64>) -> tensor<2x2xf64> ({
  ^bb0(%c: tensor<2xf64>, %s: tensor<2xf64>):
    %n = rlx.mul %c, %s : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
    rlx.yield %n : (tensor<2xf64>) -> ()
  })
  func.return %t : tensor<2x2xf64>
}

// CHECK-LABEL: func.func @branch
// CHECK: rlx.if %{{.*}}, %{{.*}} : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32> ({
// CHECK: rlx.relu
// CHECK: }, {
// CHECK: rlx.sigmoid
func.func @branch(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.if %p, %x : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %r = rlx.relu %a : (tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %r : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    %s = rlx.sigmoid %a : (tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  })
  func.return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @loop
// CHECK: rlx.while %{{.*}} {max_iterations = 10 : i64}
func.func @loop(%x: tensor<f32>) -> tensor<f32> {
  %y = rlx.while %x {max_iterations = 10 : i64} : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%s: tensor<f32>):
    %lim = rlx.constant {value = dense<100.0> : tensor<f32>} : () -> tensor<f32>
    %p = rlx.compare %s, %lim {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %p : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<f32>):
    %d = rlx.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %d : (tensor<f32>) -> ()
  })
  func.return %y : tensor<f32>
}

// CHECK-LABEL: func.func @custom
// CHECK: rlx.custom_fn %{{.*}} {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
func.func @custom(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.custom_fn %x {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %m = rlx.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %m : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %y0: tensor<3xf32>, %g: tensor<3xf32>):
    %s = rlx.sin %g : (tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  })
  func.return %y : tensor<3xf32>
}
