// RUN: mlperf-opt %s --split-input-file --plan-schedule="memory-limit=1048576" | FileCheck %s
// RUN: mlperf-opt %s --split-input-file --plan-schedule="memory-limit=1048576 max-outstanding=1" | FileCheck %s --check-prefix=ONE
// RUN: mlperf-opt %s --split-input-file --plan-schedule | FileCheck %s --check-prefix=TIGHT

// Tests plan-schedule's moves on a program as plan-from-tg emits it: the all-reduce of @g
// starts right after @g is written (above the independent fill of @t, not above the scale
// that writes @g), and stream 0 waits for it only before the first read of its result @h
// (after the fills of @t and @u, which do not touch it). The event pairs stay in order.
// CHECK-LABEL: plan.program @step
// CHECK:      plan.command "scale" [@x] -> [@g]
// CHECK-NEXT: plan.command "event_record" [] -> [] {event = 0 : i64}
// CHECK-NEXT: plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
// CHECK-NEXT: plan.command "all_reduce" [@g] -> [@h] {kernel_attrs = {axis = "dp"}, stream = 1 : i64}
// CHECK-NEXT: plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
// CHECK-NEXT: plan.command "fill" [] -> [@t]
// CHECK-NEXT: plan.command "fill" [] -> [@u]
// CHECK-NEXT: plan.command "event_wait" [] -> [] {event = 1 : i64}
// CHECK-NEXT: plan.command "add" [@h, @t] -> [@out]
// With the default limit (the unscheduled peak: @g, @h and @t, 768 bytes) the start still
// moves above the fill of @t (three buffers alive there either way), but the wait may not keep
// @g and @h alive over the fill of @u: a fourth buffer.
// TIGHT-LABEL: plan.program @step
// TIGHT:      plan.command "scale" [@x] -> [@g]
// TIGHT-NEXT: plan.command "event_record" [] -> [] {event = 0 : i64}
// TIGHT-NEXT: plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
// TIGHT-NEXT: plan.command "all_reduce" [@g] -> [@h]
// TIGHT-NEXT: plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
// TIGHT-NEXT: plan.command "fill" [] -> [@t]
// TIGHT-NEXT: plan.command "event_wait" [] -> [] {event = 1 : i64}
// TIGHT-NEXT: plan.command "fill" [] -> [@u]
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @x : tensor<64xf32> in @persistent
  plan.buffer @out : tensor<64xf32> in @persistent
  plan.buffer @g : tensor<64xf32> in @activations
  plan.buffer @h : tensor<64xf32> in @activations
  plan.buffer @t : tensor<64xf32> in @activations
  plan.buffer @u : tensor<64xf32> in @activations
  plan.program @step inputs [@x] outputs [@out] attributes {streams = 2 : i64} {
    plan.command "scale" [@x] -> [@g] {kernel_attrs = {factor = 2.0 : f64}}
    plan.command "fill" [] -> [@t] {kernel_attrs = {value = 1.0 : f64}}
    plan.command "event_record" [] -> [] {event = 0 : i64}
    plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
    plan.command "all_reduce" [@g] -> [@h] {kernel_attrs = {axis = "dp"}, stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
    plan.command "event_wait" [] -> [] {event = 1 : i64}
    plan.command "fill" [] -> [@u] {kernel_attrs = {value = 2.0 : f64}}
    plan.command "add" [@h, @t] -> [@out]
  }
}

// -----

// Two collectives: the second's start never moves above the first's (the communication stream
// keeps its order on every rank); with max-outstanding=1 the first's wait stays above the
// second's start; a command that writes the first's input (@g) stops its wait; a call is a
// barrier nothing crosses.
// CHECK-LABEL: plan.program @two
// CHECK:      plan.command "all_reduce" [@g] -> [@h]
// CHECK:      plan.command "all_reduce" [@k] -> [@l]
// CHECK:      plan.command "event_wait" [] -> [] {event = 1 : i64}
// CHECK-NEXT: plan.command "fill" [] -> [@g]
// CHECK:      plan.command "event_wait" [] -> [] {event = 3 : i64}
// CHECK-NEXT: plan.command "call" [] -> [] {kernel_attrs = {program = "callee"}}
// ONE-LABEL: plan.program @two
// ONE:      plan.command "all_reduce" [@g] -> [@h]
// ONE:      plan.command "event_wait" [] -> [] {event = 1 : i64}
// ONE:      plan.command "all_reduce" [@k] -> [@l]
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @x : tensor<64xf32> in @persistent
  plan.buffer @out : tensor<64xf32> in @persistent
  plan.buffer @g : tensor<64xf32> in @activations
  plan.buffer @h : tensor<64xf32> in @activations
  plan.buffer @k : tensor<64xf32> in @activations
  plan.buffer @l : tensor<64xf32> in @activations
  plan.buffer @m : tensor<64xf32> in @activations
  plan.program @callee inputs [@x] outputs [@out] {
    plan.command "copy" [@x] -> [@out]
  }
  plan.program @two inputs [@x] outputs [@out] attributes {streams = 2 : i64} {
    plan.command "scale" [@x] -> [@g] {kernel_attrs = {factor = 2.0 : f64}}
    plan.command "event_record" [] -> [] {event = 0 : i64}
    plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
    plan.command "all_reduce" [@g] -> [@h] {kernel_attrs = {axis = "dp"}, stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
    plan.command "event_wait" [] -> [] {event = 1 : i64}
    plan.command "scale" [@x] -> [@k] {kernel_attrs = {factor = 3.0 : f64}}
    plan.command "event_record" [] -> [] {event = 2 : i64}
    plan.command "event_wait" [] -> [] {event = 2 : i64, stream = 1 : i64}
    plan.command "all_reduce" [@k] -> [@l] {kernel_attrs = {axis = "dp"}, stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 3 : i64, stream = 1 : i64}
    plan.command "event_wait" [] -> [] {event = 3 : i64}
    plan.command "scale" [@x] -> [@m] {kernel_attrs = {factor = 4.0 : f64}}
    plan.command "fill" [] -> [@g] {kernel_attrs = {value = 0.0 : f64}}
    plan.command "call" [] -> [] {kernel_attrs = {program = "callee"}}
    plan.command "add" [@h, @l] -> [@out]
  }
}
