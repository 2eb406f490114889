// RUN: mlperf-opt %s --split-input-file --verify-diagnostics

// Tests that a mesh's ranks must be the cluster's.
// expected-error @below {{'dist.mesh' op has 4 ranks but the cluster 1x8 has 8}}
dist.mesh @mesh {axes = ["dp", "tp"], shape = array<i64: 2, 2>, nodes = 1 : i64, gpus_per_node = 8 : i64}

// -----

// Tests that axis names are known.
// expected-error @below {{'dist.mesh' op axis 'xp' is not one of dp, tp, pp, cp, ep}}
dist.mesh @mesh {axes = ["xp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}

// -----

// Tests that an axis is named once.
// expected-error @below {{'dist.mesh' op names axis 'dp' twice}}
dist.mesh @mesh {axes = ["dp", "dp"], shape = array<i64: 2, 1>, nodes = 1 : i64, gpus_per_node = 2 : i64}

// -----

// Tests that every axis has a size.
// expected-error @below {{'dist.mesh' op has 2 axes but 1 sizes}}
dist.mesh @mesh {axes = ["dp", "tp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<16xf32>) {
    // Tests that a collective names an axis of its mesh.
    // expected-error @below {{'dist.all_reduce_start' op mesh @mesh has no axis 'tp'}}
    %f = dist.all_reduce_start %x over @mesh ["tp"] : tensor<16xf32> -> !dist.future<tensor<16xf32>>
    %y = dist.done %f : !dist.future<tensor<16xf32>> -> tensor<16xf32>
    return
  }
}

// -----

tg.model @m {
  func.func @f(%x: tensor<16xf32>) {
    // Tests that a collective names a mesh.
    // expected-error @below {{'dist.all_reduce_start' op @nowhere is not a dist.mesh}}
    %f = dist.all_reduce_start %x over @nowhere ["dp"] : tensor<16xf32> -> !dist.future<tensor<16xf32>>
    %y = dist.done %f : !dist.future<tensor<16xf32>> -> tensor<16xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<16xf32>) {
    // Tests that a reduce-scatter's result is its group's slice.
    // expected-error @below {{'dist.reduce_scatter_start' op must produce a future of 'tensor<8xf32>', not of 'tensor<16xf32>'}}
    %f = dist.reduce_scatter_start %x over @mesh ["dp"] : tensor<16xf32> -> !dist.future<tensor<16xf32>>
    %y = dist.done %f : !dist.future<tensor<16xf32>> -> tensor<16xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 4>, nodes = 1 : i64, gpus_per_node = 4 : i64}
  func.func @f(%x: tensor<6xf32>) {
    // Tests that a reduce-scatter splits dim 0 evenly.
    // expected-error @below {{'dist.reduce_scatter_start' op dim 0 (6) is not divisible by the group of 4 ranks}}
    %f = dist.reduce_scatter_start %x over @mesh ["dp"] : tensor<6xf32> -> !dist.future<tensor<1xf32>>
    %y = dist.done %f : !dist.future<tensor<1xf32>> -> tensor<1xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<8xf32>) {
    // Tests that an all-gather concatenates the group's tensors.
    // expected-error @below {{'dist.all_gather_start' op must produce a future of 'tensor<16xf32>', not of 'tensor<8xf32>'}}
    %f = dist.all_gather_start %x over @mesh ["dp"] : tensor<8xf32> -> !dist.future<tensor<8xf32>>
    %y = dist.done %f : !dist.future<tensor<8xf32>> -> tensor<8xf32>
    return
  }
}

// -----

func.func @f(%x: tensor<8xf32>, %f: !dist.future<tensor<8xf32>>) -> tensor<4xf32> {
  // Tests that done yields what its future carries.
  // expected-error @below {{'dist.done' op must yield exactly what its future carries ('tensor<8xf32>')}}
  %y = dist.done %f : !dist.future<tensor<8xf32>> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["pp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<8xf32>) {
    // Tests that a send goes somewhere.
    // expected-error @below {{'dist.send_start' op needs a non-zero shift and produces !dist.future<none>}}
    %s = dist.send_start %x to @mesh "pp" shift 0 : tensor<8xf32> -> !dist.future<none>
    dist.done %s : !dist.future<none>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["pp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f() {
    // Tests that a message tag is one every MPI supports.
    // expected-error @below {{'dist.recv_start' op tag 40000 is outside [0, 32767]}}
    %r = dist.recv_start from @mesh "pp" shift 1 {tag = 40000} : !dist.future<tensor<8xf32>>
    %x = dist.done %r : !dist.future<tensor<8xf32>> -> tensor<8xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<8xf32>) -> tensor<3xf32> {
    // Tests that a local shard is this rank's 1/G of a 1-D tensor.
    // expected-error @below {{'dist.local_shard' op keeps 1/2 of a 1-D tensor: 'tensor<8xf32>' -> 'tensor<3xf32>' is not that}}
    %s = dist.local_shard %x over @mesh "dp" : tensor<8xf32> -> tensor<3xf32>
    return %s : tensor<3xf32>
  }
}

// -----

// Tests that every axis has at least one rank.
// expected-error @below {{'dist.mesh' op axis 'tp' has size 0}}
dist.mesh @mesh {axes = ["dp", "tp"], shape = array<i64: 2, 0>, nodes = 1 : i64, gpus_per_node = 2 : i64}

// -----

// Tests that the strategy has at least one virtual pipeline stage.
// expected-error @below {{'dist.mesh' op needs vp >= 1 and zero 0, 1, 2 or 3}}
dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64, vp = 0 : i64}

// -----

// Tests that hybrid sharding's groups tile dp and shard ZeRO state.
// expected-error @below {{'dist.mesh' op hsdp 3 needs zero 1, 2 or 3 and a divisor of dp 4 from 2 to dp / 2}}
dist.mesh @mesh {axes = ["dp"], shape = array<i64: 4>, nodes = 1 : i64, gpus_per_node = 4 : i64, zero = 1 : i64, hsdp = 3 : i64}

// -----

// expected-error @below {{'dist.mesh' op hsdp 2 needs zero 1, 2 or 3 and a divisor of dp 4 from 2 to dp / 2}}
dist.mesh @mesh {axes = ["dp"], shape = array<i64: 4>, nodes = 1 : i64, gpus_per_node = 4 : i64, hsdp = 2 : i64}

// -----

// Tests that ZeRO is a stage the compiler knows.
// expected-error @below {{'dist.mesh' op needs vp >= 1 and zero 0, 1, 2 or 3}}
dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64, zero = 4 : i64}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<16xf32>) {
    // Tests that a collective runs over at least one axis.
    // expected-error @below {{'dist.all_reduce_start' op needs at least one mesh axis}}
    %f = dist.all_reduce_start %x over @mesh [] : tensor<16xf32> -> !dist.future<tensor<16xf32>>
    %y = dist.done %f : !dist.future<tensor<16xf32>> -> tensor<16xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<16xf32>) {
    // Tests that an all-reduce keeps the element type.
    // expected-error @below {{'dist.all_reduce_start' op must produce a tensor like 'tensor<16xf32>'}}
    %f = dist.all_reduce_start %x over @mesh ["dp"] : tensor<16xf32> -> !dist.future<tensor<16xf16>>
    %y = dist.done %f : !dist.future<tensor<16xf16>> -> tensor<16xf16>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["dp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f(%x: tensor<16xf32>) {
    // Tests that a reduce-scatter splits a dim the tensor has.
    // expected-error @below {{'dist.reduce_scatter_start' op needs a tensor with a dim 1 to split or gather}}
    %f = dist.reduce_scatter_start %x over @mesh ["dp"] {dim = 1 : i64} : tensor<16xf32> -> !dist.future<tensor<8xf32>>
    %y = dist.done %f : !dist.future<tensor<8xf32>> -> tensor<8xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["ep"], shape = array<i64: 4>, nodes = 1 : i64, gpus_per_node = 4 : i64}
  func.func @f(%x: tensor<6x8xf32>) {
    // Tests that an all-to-all splits dim 0 into one slice per member.
    // expected-error @below {{'dist.all_to_all_start' op dim 0 of 'tensor<6x8xf32>' must split into 4 slices}}
    %f = dist.all_to_all_start %x over @mesh ["ep"] : tensor<6x8xf32> -> !dist.future<tensor<6x8xf32>>
    %y = dist.done %f : !dist.future<tensor<6x8xf32>> -> tensor<6x8xf32>
    return
  }
}

// -----

tg.model @m {
  dist.mesh @mesh {axes = ["pp"], shape = array<i64: 2>, nodes = 1 : i64, gpus_per_node = 2 : i64}
  func.func @f() {
    // Tests that a receive comes from somewhere.
    // expected-error @below {{'dist.recv_start' op needs a non-zero shift and produces a future of a tensor}}
    %r = dist.recv_start from @mesh "pp" shift 0 : !dist.future<tensor<8xf32>>
    %x = dist.done %r : !dist.future<tensor<8xf32>> -> tensor<8xf32>
    return
  }
}

// -----

func.func @f(%f: !dist.future<tensor<8xf32>>) -> !dist.future<tensor<8xf32>> {
  // Tests that a future is waited for once and used for nothing else.
  // expected-error @below {{'dist.done' op must be the only use of its future}}
  %y = dist.done %f : !dist.future<tensor<8xf32>> -> tensor<8xf32>
  return %f : !dist.future<tensor<8xf32>>
}
