// RUN: mlperf-opt %s --split-input-file | mlperf-opt | FileCheck %s

// Tests that the mesh, the sharding attribute and every collective round-trip.
// CHECK-LABEL: module
// CHECK: dist.mesh @mesh {axes = ["dp", "tp", "pp"], gpus_per_node = 4 : i64, nodes = 1 : i64, shape = array<i64: 2, 2, 1>, zero = 1 : i64}
// CHECK: func.func @step(%{{.*}}: tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}"dp"{{\]\]}}>}
// CHECK: %[[F:.+]] = dist.all_reduce_start %{{.*}} over @mesh ["dp"] : tensor<4x8xbf16> -> !dist.future<tensor<4x8xbf16>>
// CHECK: dist.done %[[F]] : !dist.future<tensor<4x8xbf16>> -> tensor<4x8xbf16>
// CHECK: dist.reduce_scatter_start %{{.*}} over @mesh ["dp"] : tensor<16xf32> -> !dist.future<tensor<8xf32>>
// CHECK: dist.all_gather_start %{{.*}} over @mesh ["dp", "tp"] : tensor<8xf32> -> !dist.future<tensor<32xf32>>
// CHECK: dist.all_to_all_start %{{.*}} over @mesh ["tp"] : tensor<4x8xbf16> -> !dist.future<tensor<4x8xbf16>>
// CHECK: %[[S:.+]] = dist.send_start %{{.*}} to @mesh "pp" shift 1 : tensor<4x8xbf16> -> !dist.future<none>
// CHECK: dist.done %[[S]] : !dist.future<none>
// CHECK: dist.recv_start from @mesh "pp" shift -1 : !dist.future<tensor<4x8xbf16>>
module {
  dist.mesh @mesh {axes = ["dp", "tp", "pp"], shape = array<i64: 2, 2, 1>, nodes = 1 : i64,
                   gpus_per_node = 4 : i64, zero = 1 : i64}
  func.func @step(%state: tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [["dp"]]>},
                  %x: tensor<4x8xbf16>, %flat: tensor<16xf32>) -> tensor<4x8xbf16> {
    %f = dist.all_reduce_start %x over @mesh ["dp"] : tensor<4x8xbf16> -> !dist.future<tensor<4x8xbf16>>
    %sum = dist.done %f : !dist.future<tensor<4x8xbf16>> -> tensor<4x8xbf16>
    %rs = dist.reduce_scatter_start %flat over @mesh ["dp"] : tensor<16xf32> -> !dist.future<tensor<8xf32>>
    %shard = dist.done %rs : !dist.future<tensor<8xf32>> -> tensor<8xf32>
    %ag = dist.all_gather_start %shard over @mesh ["dp", "tp"] : tensor<8xf32> -> !dist.future<tensor<32xf32>>
    %all = dist.done %ag : !dist.future<tensor<32xf32>> -> tensor<32xf32>
    %a2a = dist.all_to_all_start %sum over @mesh ["tp"] : tensor<4x8xbf16> -> !dist.future<tensor<4x8xbf16>>
    %exchanged = dist.done %a2a : !dist.future<tensor<4x8xbf16>> -> tensor<4x8xbf16>
    %s = dist.send_start %exchanged to @mesh "pp" shift 1 : tensor<4x8xbf16> -> !dist.future<none>
    dist.done %s : !dist.future<none>
    %r = dist.recv_start from @mesh "pp" shift -1 : !dist.future<tensor<4x8xbf16>>
    %received = dist.done %r : !dist.future<tensor<4x8xbf16>> -> tensor<4x8xbf16>
    return %received : tensor<4x8xbf16>
  }
}
