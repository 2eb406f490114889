// RUN: mlperf-opt %s | mlperf-opt | FileCheck %s

// Tests that a plan prints and parses back unchanged.
// CHECK-LABEL: plan.plan @p attributes {format_version = 10 : i64, model = {name = "p"}}
// CHECK: plan.arena @persistent persistent {size = 512 : i64}
// CHECK: plan.buffer @x : tensor<4xbf16> in @persistent at 0
// CHECK: plan.buffer @v : tensor<2x2xbf16> in @persistent at 0 view of @x
// CHECK: plan.parameter "x" {grad = @x, init = "ones", value = @x}
// CHECK: plan.state "optimizer.master.x" @x {param = "x", role = "master", shard_axis = "dp", shard_count = 2 : i64}
// CHECK: plan.program @f inputs [@x] outputs [@v] {
// CHECK-NEXT: plan.command "reshape" [@x] -> [@v]
// CHECK-NEXT: plan.command "scale" [@v] -> [@v] {kernel_attrs = {factor = 5.000000e-01 : f64}}
plan.plan @p attributes {format_version = 10 : i64, model = {name = "p"}} {
  plan.arena @persistent persistent {size = 512 : i64}
  plan.buffer @x : tensor<4xbf16> in @persistent at 0
  plan.buffer @v : tensor<2x2xbf16> in @persistent at 0 view of @x
  plan.parameter "x" {value = @x, grad = @x, init = "ones"}
  plan.state "optimizer.master.x" @x {role = "master", param = "x", shard_axis = "dp", shard_count = 2}
  plan.program @f inputs [@x] outputs [@v] {
    plan.command "reshape" [@x] -> [@v]
    plan.command "scale" [@v] -> [@v] {kernel_attrs = {factor = 0.5 : f64}}
  }
}
