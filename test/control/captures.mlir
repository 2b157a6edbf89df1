// Regions of rlx.if, rlx.while and rlx.custom_fn may use values defined above the op
// (they are not IsolatedFromAbove; rlx.scan is). Autodiff, JVP and vmap treat such a
// captured value like an operand: its derivative, tangent or batch axis flows through.
// Every output must verify and round-trip; values: test/python/test_region_captures.py.
//
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s --check-prefix=GRAD
// RUN: rlx-opt %s --jvp | rlx-opt | FileCheck %s --check-prefix=JVP
// RUN: rlx-opt %s "--vmap=func=cond batched=x size=2" "--vmap=func=loop batched=x size=2" "--vmap=func=inline_fn batched=x size=2" "--vmap=func=nested batched=x size=2" | rlx-opt | FileCheck %s --check-prefix=VMAP
// RUN: rlx-opt %s "--vmap=func=gate batched=y size=2" "--vmap=func=vjp_data batched=d size=2" | rlx-opt | FileCheck %s --check-prefix=VMAP2

// The then branch captures %w = x * x and the constant %h; the else branch yields %w.
// GRAD-LABEL: func.func @cond_grad(
// GRAD: %[[W:[^ ]+]] = rlx.mul %x, %x
// GRAD: %[[T:[^ ]+]] = rlx.tanh %x
// GRAD: rlx.mul %[[T]], %[[W]]
// GRAD: rlx.where %{{[^,]*}}, %{{[^,]*}}, %[[W]]
// GRAD: func.return
// JVP-LABEL: func.func @cond_jvp(
// JVP: %[[W:[^ ]+]] = rlx.mul %x, %x
// JVP: rlx.mul %tangent_x, %x
// JVP: rlx.where
// JVP: func.return
// VMAP-LABEL: func.func @cond_vmap(%x: tensor<2x3xf32>
// VMAP: %[[W:[^ ]+]] = rlx.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.where %{{[^,]*}}, %{{[^,]*}}, %[[W]] : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: func.return %{{.*}} : tensor<2xf32>
func.func @cond(%x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %s = rlx.reduce_sum %x {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  %z = rlx.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %p0 = rlx.compare %s, %z {predicate = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %p = rlx.reshape %p0 : (tensor<i1>) -> tensor<1xi1>
  %h = rlx.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %w = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %y = rlx.if %p, %x : (tensor<1xi1>, tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %t = rlx.tanh %a : (tensor<3xf32>) -> tensor<3xf32>
    %u = rlx.mul %t, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %v = rlx.mul %u, %h : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %v : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    rlx.yield %w : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// The body captures %w = tanh(x) and %k, the condition captures %lim. Autodiff makes the
// loop a masked scan of max_iterations steps whose broadcast inputs are the captures; the
// gradient of %w, summed over the steps by scan_backward_xs, flows back through tanh.
// GRAD-LABEL: func.func @loop_grad(
// GRAD: %[[W:[^ ]+]] = rlx.tanh %x
// GRAD: %[[TRAJ:[^ ]+]] = rlx.scan %{{[^,]+}}, %lim, %k, %[[W]] {length = 4 : i64, save_trajectory = true} : (tensor<2x3xf32>, tensor<f32>, tensor<f32>, tensor<3xf32>) -> tensor<4x2x3xf32>
// GRAD-NEXT: ^bb0(%{{[^:]+}}: tensor<2x3xf32>, %{{[^:]+}}: tensor<f32>, %{{[^:]+}}: tensor<f32>, %[[WT:[^:]+]]: tensor<3xf32>):
// GRAD: rlx.add %{{[^,]*}}, %[[WT]]
// GRAD-NOT: rlx.while
// GRAD: %[[DW:[^ ]+]] = rlx.scan_backward_xs %{{[^,]+}}, %[[TRAJ]], %{{[^,]+}}, %lim, %k, %[[W]] {xs_idx = 2 : i64, length = 4 : i64, num_bcast = 3 : i64} : ({{.*}}) -> tensor<3xf32>
// GRAD-NOT: rlx.expand %[[W]]
// GRAD: rlx.activation_backward %x, %[[DW]] {kind = "tanh"}
// JVP-LABEL: func.func @loop_jvp(
// JVP: rlx.activation_backward %x, %tangent_x {kind = "tanh"}
// VMAP-LABEL: func.func @loop_vmap(%x: tensor<2x3xf32>
// VMAP: %[[W:[^ ]+]] = rlx.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.add %{{[^,]*}}, %[[W]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @loop(%x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %k = rlx.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
  %lim = rlx.constant {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %w = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %y = rlx.while %x {max_iterations = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%s: tensor<3xf32>):
    %q = rlx.reduce_sum %s {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %c = rlx.compare %q, %lim {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c1 = rlx.reshape %c : (tensor<i1>) -> tensor<1xi1>
    rlx.yield %c1 : (tensor<1xi1>) -> ()
  }, {
  ^bb0(%s: tensor<3xf32>):
    %m = rlx.mul %s, %k : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %n = rlx.add %m, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// A custom_fn without derivative regions is differentiated through its fwd region, which
// captures %w = sin(x): the tangent of %w reaches the result.
// GRAD-LABEL: func.func @inline_fn_grad(
// GRAD: rlx.activation_backward %x, %{{.*}} {kind = "sin"}
// JVP-LABEL: func.func @inline_fn_jvp(
// JVP: %[[W:[^ ]+]] = rlx.sin %x
// JVP: %[[TW:[^ ]+]] = rlx.activation_backward %x, %tangent_x {kind = "sin"}
// JVP: rlx.custom_fn %x
// JVP: rlx.mul %{{[^,]*}}, %[[W]]
// JVP: rlx.mul %tangent_x, %[[W]]
// JVP: rlx.mul %[[TW]], %x
// VMAP-LABEL: func.func @inline_fn_vmap(%x: tensor<2x3xf32>
// VMAP: %[[W:[^ ]+]] = rlx.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.custom_fn %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.mul %{{[^,]*}}, %[[W]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @inline_fn(%x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %w = rlx.sin %x : (tensor<3xf32>) -> tensor<3xf32>
  %y = rlx.custom_fn %x : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %m = rlx.mul %a, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %m : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// Batched on y only, the rlx.if is not batched: it is copied with its captured %w and %h
// mapped to their copies (%h is re-created inside the branch: regions stay closed).
// VMAP2-LABEL: func.func @gate_vmap(
// VMAP2: %[[W:[^ ]+]] = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// VMAP2: rlx.if
// VMAP2-NEXT: ^bb{{[0-9]+}}(%[[A:[^:]+]]: tensor<3xf32>):
// VMAP2-NEXT: %[[H:[^ ]+]] = rlx.constant {value = dense<5.000000e-01> : tensor<f32>}
// VMAP2-NEXT: %[[T:[^ ]+]] = rlx.tanh %[[A]]
// VMAP2-NEXT: %[[U:[^ ]+]] = rlx.mul %[[T]], %[[W]]
// VMAP2-NEXT: rlx.mul %[[U]], %[[H]]
func.func @gate(%x: tensor<3xf32> {rlx.name = "x", rlx.param}, %y: tensor<3xf32> {rlx.name = "y"}) -> tensor<f32> {
  %s = rlx.reduce_sum %x {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  %z = rlx.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %p0 = rlx.compare %s, %z {predicate = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %p = rlx.reshape %p0 : (tensor<i1>) -> tensor<1xi1>
  %h = rlx.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %w = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %g = rlx.if %p, %x : (tensor<1xi1>, tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %t = rlx.tanh %a : (tensor<3xf32>) -> tensor<3xf32>
    %u = rlx.mul %t, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %v = rlx.mul %u, %h : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %v : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    %v = rlx.mul %a, %h : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %v : (tensor<3xf32>) -> ()
  })
  %gy = rlx.mul %g, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %r = rlx.reduce_sum %gy {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// A custom_fn whose regions capture %d, which is not differentiated (not a parameter):
// the vjp region gives the gradient of x. Batched on d, every region gets the batched %d.
// GRAD-LABEL: func.func @vjp_data_grad(
// GRAD: rlx.custom_fn %x {has_vjp = true}
// GRAD: ^bb{{[0-9]+}}(%[[A:[^:]+]]: tensor<3xf32>):
// GRAD-NEXT: rlx.mul %[[A]], %d
// GRAD: rlx.mul %{{[^,]*}}, %d
// VMAP2-LABEL: func.func @vjp_data_vmap(
// VMAP2: rlx.custom_fn %{{[^ ]+}} {has_vjp = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP2: rlx.mul %{{[^,]*}}, %d : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP2: rlx.mul %{{[^,]*}}, %d : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @vjp_data(%x: tensor<3xf32> {rlx.name = "x", rlx.param}, %d: tensor<3xf32> {rlx.name = "d"}) -> tensor<f32> {
  %y = rlx.custom_fn %x {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %m = rlx.mul %a, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %m : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %o: tensor<3xf32>, %g: tensor<3xf32>):
    %m = rlx.mul %g, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %m : (tensor<3xf32>) -> ()
  })
  %s = rlx.sin %y : (tensor<3xf32>) -> tensor<3xf32>
  %r = rlx.reduce_sum %s {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// An rlx.if nested in the while body captures the body's block argument %s and %w from
// the function body.
// GRAD-LABEL: func.func @nested_grad(
// GRAD: %[[W:[^ ]+]] = rlx.tanh %x
// GRAD: rlx.scan
// GRAD-NEXT: ^bb0(%{{[^:]+}}: tensor<2x3xf32>, %{{[^:]+}}: tensor<f32>, %[[WT:[^:]+]]: tensor<3xf32>):
// GRAD: %[[A:[^ ]+]] = rlx.where %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} : (tensor<i1>, tensor<3xf32>, tensor<3xf32>)
// GRAD: rlx.mul %[[A]], %[[WT]]
// GRAD: rlx.sub %[[A]], %[[WT]]
// GRAD: func.return
// The JVP keeps the loop (JAX's rule): one rlx.while over [state; tangent] whose body
// reads %w and its tangent from above; the primal result comes from it too.
// JVP-LABEL: func.func @nested_jvp(
// JVP: %[[W:[^ ]+]] = rlx.tanh %x
// JVP: %[[TW:[^ ]+]] = rlx.activation_backward %x, %tangent_x {kind = "tanh"}
// JVP: rlx.while %{{[^ ]+}} {max_iterations = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// JVP: rlx.mul %[[S:[^,]+]], %[[W]]
// JVP-NEXT: rlx.mul %{{[^,]+}}, %[[W]]
// JVP-NEXT: rlx.mul %[[TW]], %[[S]]
// JVP-NOT: rlx.while
// JVP: func.return
// The batched loop stays one rlx.while with its bound (as JAX batches while_loop); its
// body evaluates both branches of the batched rlx.if and selects.
// VMAP-LABEL: func.func @nested_vmap(%x: tensor<2x3xf32>
// VMAP: %[[W:[^ ]+]] = rlx.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.while %x {max_iterations = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: }, {
// VMAP-NEXT: ^bb0(%[[S:[^:]+]]: tensor<2x3xf32>):
// VMAP: rlx.mul %[[S]], %[[W]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.sub %[[S]], %[[W]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAP: rlx.where
// VMAP-NOT: rlx.while
// VMAP: func.return
func.func @nested(%x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %w = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %lim = rlx.constant {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %y = rlx.while %x {max_iterations = 3 : i64} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%s: tensor<3xf32>):
    %q = rlx.reduce_sum %s {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %c = rlx.compare %q, %lim {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c1 = rlx.reshape %c : (tensor<i1>) -> tensor<1xi1>
    rlx.yield %c1 : (tensor<1xi1>) -> ()
  }, {
  ^bb0(%s: tensor<3xf32>):
    %q = rlx.reduce_sum %s {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %z = rlx.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
    %p0 = rlx.compare %q, %z {predicate = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %p = rlx.reshape %p0 : (tensor<i1>) -> tensor<1xi1>
    %n = rlx.if %p : (tensor<1xi1>) -> tensor<3xf32> ({
      %a = rlx.mul %s, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %b = rlx.add %a, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      rlx.yield %b : (tensor<3xf32>) -> ()
    }, {
      %a = rlx.sub %s, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      rlx.yield %a : (tensor<3xf32>) -> ()
    })
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}
