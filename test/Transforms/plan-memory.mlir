// RUN: mlperf-opt %s --plan-memory | FileCheck %s

// Tests placement: persistent buffers in consecutive 256-byte aligned slots (400 bytes take 512); activation buffers
// whose lives do not overlap share bytes (@a dies before @c is written), overlapping ones
// do not; a view takes its source's offset and keeps it alive; programs share the arena;
// sizes and the lower bound (the most bytes alive at once) are recorded.
// CHECK: plan.arena @persistent persistent {size = 1024 : i64}
// CHECK: plan.arena @activations activations {lower_bound = 2048 : i64, size = 2048 : i64}
// CHECK: plan.buffer @x : tensor<4xf32> in @persistent at 0
// CHECK: plan.buffer @y : tensor<100xf32> in @persistent at 256
// CHECK: plan.buffer @z : tensor<4xf32> in @persistent at 768
// CHECK: plan.buffer @a : tensor<256xf32> in @activations at [[A:[0-9]+]]
// CHECK: plan.buffer @b : tensor<256xf32> in @activations at [[B:[0-9]+]]
// CHECK: plan.buffer @c : tensor<256xf32> in @activations at [[A]]
// CHECK: plan.buffer @bview : tensor<16x16xf32> in @activations at [[B]] view of @b
// CHECK: plan.buffer @other : tensor<512xf32> in @activations at 0
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.buffer @y : tensor<100xf32> in @persistent
  plan.buffer @z : tensor<4xf32> in @persistent
  plan.buffer @a : tensor<256xf32> in @activations
  plan.buffer @b : tensor<256xf32> in @activations
  plan.buffer @c : tensor<256xf32> in @activations
  plan.buffer @bview : tensor<16x16xf32> in @activations view of @b
  plan.program @first inputs [@x] outputs [@z] {
    plan.command "fill" [] -> [@a] {kernel_attrs = {value = 1.0 : f64}}
    plan.command "scale" [@a] -> [@b] {kernel_attrs = {factor = 2.0 : f64}}
    plan.command "reshape" [@b] -> [@bview]
    plan.command "fill" [] -> [@c] {kernel_attrs = {value = 3.0 : f64}}
    plan.command "add" [@bview, @bview] -> [@bview]
    plan.command "add" [@c, @c] -> [@c]
  }
  plan.buffer @other : tensor<512xf32> in @activations
  plan.program @second inputs [@x] outputs [@z] {
    plan.command "fill" [] -> [@other] {kernel_attrs = {value = 0.0 : f64}}
    plan.command "copy" [@x] -> [@z]
  }
}
