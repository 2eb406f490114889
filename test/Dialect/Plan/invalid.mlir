// RUN: mlperf-opt %s --split-input-file --verify-diagnostics

// Tests that a plan must have this compiler's format version.
// expected-error @below {{'plan.plan' op has format version 11, this compiler writes 10}}
plan.plan @p attributes {format_version = 11 : i64, model = {}} {
}

// -----

// Tests that arenas name a known memory class (an enum: persistent or activations).
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  // expected-error @below {{expected string or keyword containing one of the following enum values for attribute 'memory_class' [persistent, activations]}}
  plan.arena @s scratch
}

// -----

// Tests that buffers have a static tensor type the runtime stores.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  // expected-error @below {{type must be a static tensor (no empty dims) of f32, bf16, f8E4M3FN, f8E5M2, i32, i64 or f64, got 'tensor<4xf16>'}}
  plan.buffer @x : tensor<4xf16> in @persistent
}

// -----

// Tests that a buffer's arena exists.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  // expected-error @below {{arena @nowhere is not a plan.arena}}
  plan.buffer @x : tensor<4xf32> in @nowhere
}

// -----

// Tests that offsets are non-negative.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  // expected-error @below {{offset must be non-negative}}
  plan.buffer @x : tensor<4xf32> in @persistent at -256
}

// -----

// Tests that a view has its source's arena and no more than its bytes (a view may be a prefix).
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{must view a buffer of the same arena with at least its bytes}}
  plan.buffer @v : tensor<8xf32> in @persistent view of @x
}

// -----

// Tests that commands name kernels of the runtime's table.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    // expected-error @below {{kernel "launch_rocket" is not an op the runtime executes}}
    plan.command "launch_rocket" [@x] -> [@x]
  }
}

// -----

// Tests that commands have their kernel's arity.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    // expected-error @below {{kernel "add" cannot take 1 operands and 1 results}}
    plan.command "add" [@x] -> [@x]
  }
}

// -----

// Tests that commands read and write buffers.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    // expected-error @below {{operand @y is not a plan.buffer}}
    plan.command "scale" [@y] -> [@x] {kernel_attrs = {factor = 2.0 : f64}}
  }
}

// -----

// Tests that program inputs are buffers.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{input @persistent is not a plan.buffer}}
  plan.program @f inputs [@persistent] outputs [@x] {
  }
}

// -----

// Tests that parameters name buffers.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{gradient @g is not a plan.buffer}}
  plan.parameter "w" {value = @x, grad = @g, init = "zeros"}
}

// -----

// Tests that a sharded state tensor says over which axis and into how many shards.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{needs both shard_axis and shard_count, or neither}}
  plan.state "optimizer.master.w" @x {role = "master", param = "w", shard_axis = "dp"}
}

// -----

// Tests that a view views a buffer, not another view (placement follows one level).
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.buffer @v : tensor<2x2xf32> in @persistent view of @x
  // expected-error @below {{views @v, itself a view: view the source buffer instead}}
  plan.buffer @w : tensor<4xf32> in @persistent view of @v
}

// -----

// Tests that there is one arena per memory class.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @a activations
  // expected-error @below {{is a second arena of memory class "activations": one per class}}
  plan.arena @b activations
}

// -----

// Tests that buffers have no empty dims (the runtime refuses them).
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  // expected-error @below {{type must be a static tensor (no empty dims)}}
  plan.buffer @x : tensor<0x4xf32> in @persistent
}

// -----

// Tests that program outputs outlive the program: persistent, not activation bytes.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.buffer @t : tensor<4xf32> in @activations
  // expected-error @below {{output @t must be in the persistent arena}}
  plan.program @f inputs [@x] outputs [@t] {
    plan.command "copy" [@x] -> [@t]
  }
}

// -----

// Tests that a command runs on one of its program's streams.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    // expected-error @below {{'plan.command' op is on stream 1 of a program with 1}}
    plan.command "copy" [@x] -> [@x] {stream = 1 : i64}
  }
}

// -----

// Tests that an event command names its event.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] attributes {streams = 2 : i64} {
    // expected-error @below {{kernel "event_record" needs an integer 'event'}}
    plan.command "event_record" [] -> []
  }
}

// -----

// Tests that a wait follows another stream's record of its event.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] attributes {streams = 2 : i64} {
    // expected-error @below {{'plan.command' op waits for event 3, which no other stream recorded before it}}
    plan.command "event_wait" [] -> [] {event = 3 : i64, stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 3 : i64}
  }
}

// -----

// Tests that programs have one or two streams.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{'plan.program' op has 3 streams; plans have a compute and a communication stream}}
  plan.program @f inputs [@x] outputs [@x] attributes {streams = 3 : i64} {
    plan.command "copy" [@x] -> [@x]
  }
}

// -----

// Tests that a command never reads what another stream writes without an event between them:
// the collective's result is read on stream 0 before stream 0 waits for it.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.buffer @y : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] attributes {streams = 2 : i64} {
    plan.command "event_record" [] -> [] {event = 0 : i64}
    plan.command "event_wait" [] -> [] {event = 0 : i64, stream = 1 : i64}
    plan.command "copy" [@x] -> [@y] {stream = 1 : i64}
    plan.command "event_record" [] -> [] {event = 1 : i64, stream = 1 : i64}
    // expected-error @below {{'plan.command' op on stream 0 reads buffer @y while command 2 ("copy") on stream 1 writes buffer @y, and no event orders them (a missing event_wait)}}
    plan.command "copy" [@y] -> [@x]
    plan.command "event_wait" [] -> [] {event = 1 : i64}
  }
}

// -----

// Tests that a call names an earlier program of the plan (so calls never recurse).
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    // expected-error @below {{'plan.command' op calls @g, which is no earlier program of the plan}}
    plan.command "call" [] -> [] {kernel_attrs = {program = "g"}}
  }
}

// -----

// Tests that a program with roles gives one per input and output.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  // expected-error @below {{'plan.program' op needs one role per input and per output}}
  plan.program @f inputs [@x] outputs [@x] attributes {input_roles = ["tokens", "labels"]} {
    plan.command "copy" [@x] -> [@x]
  }
}
