//===- StepTimeTest.cpp - The step-time model on hand-built plans ---------===//
//
// Each cost against its closed form, and the simulation of streams, events, calls and
// pipeline transfers against schedules worked out by hand.

#include "compiler/Analysis/StepTime.h"

#include "runtime/plan.pb.h"
#include "runtime/plan/PlanBuilding.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlperf;

namespace {

/// A device with round figures so every expected time is easy to write down.
DeviceSpeed roundDevice() {
  DeviceSpeed d;
  d.name = "round";
  d.peakBf16 = d.peakF32 = d.peakFp8 = 1e12;
  d.gemmEfficiency = d.fp8GemmEfficiency = 1.0;
  d.gemmKnee = 0; // no shape penalty
  d.attentionEfficiency = 0.5;
  d.memoryBandwidth = 1e9;
  d.commandSeconds = 0;
  d.intraNodeBandwidth = 1e9;
  d.interNodeBandwidth = 1e8;
  d.intraNodeLatency = 1e-6;
  d.interNodeLatency = 1e-5;
  d.collectiveSeconds = 0;
  return d;
}

struct PlanBuilder {
  plan::Plan plan;
  uint32_t buffer(std::vector<int64_t> shape, plan::DType dtype = plan::BF16) {
    plan::Buffer *b = plan.add_buffers();
    b->set_id(plan.buffers_size() - 1);
    b->set_name("b" + std::to_string(b->id()));
    b->set_dtype(dtype);
    int64_t n = dtype == plan::F32 ? 4 : 2;
    for (int64_t d : shape) {
      b->add_shape(d);
      n *= d;
    }
    b->set_size(n);
    b->set_offset(static_cast<uint64_t>(b->id()) * 1000000);
    b->set_memory_class(plan::ACTIVATIONS);
    return b->id();
  }
  plan::Program *program(const std::string &name, uint32_t streams = 1) {
    plan::Program *p = plan.add_programs();
    p->set_name(name);
    p->set_streams(streams);
    return p;
  }
  static plan::Command *command(plan::Program *p, const std::string &op,
                                std::vector<uint32_t> operands, std::vector<uint32_t> results,
                                uint32_t stream = 0) {
    return rt::addCommand(*p, op, operands, results, stream);
  }
  static void attribute(plan::Command *c, const std::string &name, const std::string &value) {
    plan::Attribute *a = c->add_attributes();
    a->set_name(name);
    a->set_s(value);
  }
  static void attribute(plan::Command *c, const std::string &name, int64_t value) {
    plan::Attribute *a = c->add_attributes();
    a->set_name(name);
    a->set_i(value);
  }
  void mesh(int64_t nodes, int64_t gpus, int64_t dp, int64_t tp, int64_t pp) {
    plan::Mesh *m = plan.mutable_mesh();
    m->set_nodes(nodes);
    m->set_gpus_per_node(gpus);
    m->set_dp(dp);
    m->set_tp(tp);
    m->set_pp(pp);
    m->set_vp(1);
  }
};

TEST(StepTime, GemmAttentionAndMemoryCosts) {
  PlanBuilder b;
  uint32_t x = b.buffer({128, 256}), w = b.buffer({256, 512}), y = b.buffer({128, 512});
  plan::Program *p = b.program("train_step");
  plan::Command *mm = PlanBuilder::command(p, "matmul", {x, w}, {y});
  CommandCost cost = commandCost(b.plan, *mm, roundDevice(), rt::MeshShape(), 0);
  EXPECT_EQ(cost.kind, CostKind::kGemm);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 128 * 256 * 512);
  EXPECT_DOUBLE_EQ(cost.seconds, cost.flops / 1e12);

  // The knee: each dim d counts d / (d + knee).
  DeviceSpeed kneed = roundDevice();
  kneed.gemmKnee = 128;
  cost = commandCost(b.plan, *mm, kneed, rt::MeshShape(), 0);
  EXPECT_NEAR(cost.seconds, 2.0 * 128 * 256 * 512 / (1e12 * 0.5 * (256.0 / 384) * (512.0 / 640)),
              1e-15);

  // Causal attention: 4 B H S Sk D / 2 at half the peak; the backward 2.5x.
  uint32_t q = b.buffer({1, 8, 64, 32}), k = b.buffer({1, 2, 64, 32}), o = b.buffer({1, 8, 64, 32});
  plan::Command *attention = PlanBuilder::command(p, "attention", {q, k, k}, {o});
  PlanBuilder::attribute(attention, "causal", int64_t{1});
  cost = commandCost(b.plan, *attention, roundDevice(), rt::MeshShape(), 0);
  double forward = 4.0 * 8 * 64 * 64 * 32 / 2;
  EXPECT_DOUBLE_EQ(cost.flops, forward);
  EXPECT_DOUBLE_EQ(cost.seconds, forward / 0.5e12);
  attention->set_op("attention_grad");
  EXPECT_DOUBLE_EQ(commandCost(b.plan, *attention, roundDevice(), rt::MeshShape(), 0).flops,
                   2.5 * forward);

  // Memory-bound: every distinct buffer once.
  plan::Command *add = PlanBuilder::command(p, "add", {y, y}, {y});
  cost = commandCost(b.plan, *add, roundDevice(), rt::MeshShape(), 0);
  EXPECT_EQ(cost.kind, CostKind::kMemory);
  EXPECT_DOUBLE_EQ(cost.seconds, 128.0 * 512 * 2 / 1e9);
  // A reshape onto its operand's bytes moves nothing.
  uint32_t view = b.buffer({512, 128});
  b.plan.mutable_buffers(view)->set_offset(b.plan.buffers(y).offset());
  plan::Command *reshape = PlanBuilder::command(p, "reshape", {y}, {view});
  EXPECT_EQ(commandCost(b.plan, *reshape, roundDevice(), rt::MeshShape(), 0).seconds, 0.0);
}

TEST(StepTime, CollectivesFollowTheRingAndTreeModels) {
  DeviceSpeed d = roundDevice();
  rt::MeshShape node; // one node of 8: the ring over NVLink
  node.nodes = 1;
  node.gpusPerNode = 8;
  node.dp = 8;
  double bytes = 8e6;
  CollectiveTime ring = collectiveTime("all_reduce", bytes, rt::MeshAxis::kDP, node, 0, d);
  EXPECT_EQ(ring.ranks, 8);
  EXPECT_EQ(ring.nodes, 1);
  EXPECT_STREQ(ring.algorithm, "ring");
  EXPECT_DOUBLE_EQ(ring.seconds, 2 * (7.0 / 8 * bytes / 1e9 + 7 * 1e-6));
  EXPECT_DOUBLE_EQ(collectiveTime("reduce_scatter", bytes, rt::MeshAxis::kDP, node, 0, d).seconds,
                   7.0 / 8 * bytes / 1e9 + 7 * 1e-6);
  // tp groups inside a node, dp across: with tp = 8 on 8-GPU nodes each dp group has one
  // GPU per node and runs at the InfiniBand figures.
  rt::MeshShape cluster;
  cluster.nodes = 64;
  cluster.gpusPerNode = 8;
  cluster.tp = 8;
  cluster.dp = 64;
  CollectiveTime tp = collectiveTime("all_reduce", bytes, rt::MeshAxis::kTP, cluster, 0, d);
  EXPECT_EQ(tp.nodes, 1);
  CollectiveTime dp = collectiveTime("all_reduce", bytes, rt::MeshAxis::kDP, cluster, 0, d);
  EXPECT_EQ(dp.ranks, 64);
  EXPECT_EQ(dp.nodes, 64);
  double ringAcross = 2 * (63.0 / 64 * bytes / 1e8 + 63 * 1e-5);
  double treeAcross = 2 * bytes / 1e8 + 2 * (6 * 1e-5 + 0);
  EXPECT_DOUBLE_EQ(dp.seconds, std::min(ringAcross, treeAcross));
  // Small messages: the tree's logarithmic latency wins; reduce-scatter has no tree, so its
  // latency grows with the group (the effect behind Fernandez et al.'s FSDP crossover).
  EXPECT_STREQ(collectiveTime("all_reduce", 1e3, rt::MeshAxis::kDP, cluster, 0, d).algorithm,
               "tree");
  double small64 = collectiveTime("reduce_scatter", 1e3, rt::MeshAxis::kDP, cluster, 0, d).seconds;
  cluster.nodes = 256;
  cluster.dp = 256;
  double small256 = collectiveTime("reduce_scatter", 1e3, rt::MeshAxis::kDP, cluster, 0, d).seconds;
  EXPECT_GT(small256, 3.9 * small64);
}

/// compute (stream 0) and an all-reduce (stream 1) that overlaps it; the compute stream
/// waits for the reduction only at the end.
TEST(StepTime, StreamsOverlapAndEventsOrder) {
  PlanBuilder b;
  b.mesh(1, 2, 2, 1, 1);
  uint32_t x = b.buffer({1000, 1000}), g = b.buffer({1000000}), y = b.buffer({1000, 1000});
  plan::Program *p = b.program("train_step", 2);
  PlanBuilder::command(p, "add", {x}, {x});                               // 2 MB: 2 ms
  plan::Command *ar = PlanBuilder::command(p, "all_reduce", {g}, {g}, 1); // 2 MB: 2 ms + 2 us
  PlanBuilder::attribute(ar, "axis", std::string("dp"));
  plan::Command *record = PlanBuilder::command(p, "event_record", {}, {}, 1);
  record->set_event(0);
  PlanBuilder::command(p, "add", {y}, {y}); // 2 ms
  plan::Command *wait = PlanBuilder::command(p, "event_wait", {}, {}, 0);
  wait->set_event(0);
  PlanBuilder::command(p, "add", {g}, {g}); // 2 ms
  StepPrediction prediction;
  rt::Status status = predictStep({&b.plan}, roundDevice(), prediction, true);
  ASSERT_TRUE(status.isOk()) << status.toString();
  double allReduce = 2 * (0.5 * 2e6 / 1e9 + 1e-6);
  EXPECT_NEAR(prediction.stepSeconds, 0.006, 1e-12); // hidden behind 4 ms of compute
  EXPECT_NEAR(prediction.stages[0].compute, 0.006, 1e-12);
  EXPECT_NEAR(prediction.stages[0].communication, allReduce, 1e-12);
  EXPECT_NEAR(prediction.stages[0].exposed[0], 0.0, 1e-12);
  EXPECT_EQ(prediction.timeline.size(), 4u);

  // The compute stream needs the reduction before any compute can hide it: all exposed, and
  // the parts still add up to the step.
  PlanBuilder exposed;
  exposed.mesh(1, 2, 2, 1, 1);
  uint32_t grad = exposed.buffer({1000000}), other = exposed.buffer({1000, 1000});
  plan::Program *q = exposed.program("train_step", 2);
  PlanBuilder::attribute(PlanBuilder::command(q, "all_reduce", {grad}, {grad}, 1), "axis",
                         std::string("dp"));
  PlanBuilder::command(q, "event_record", {}, {}, 1)->set_event(3);
  PlanBuilder::command(q, "event_wait", {}, {}, 0)->set_event(3);
  PlanBuilder::command(q, "add", {other}, {other}); // 2 ms
  status = predictStep({&exposed.plan}, roundDevice(), prediction);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_NEAR(prediction.stepSeconds, allReduce + 0.002, 1e-12);
  EXPECT_NEAR(prediction.stages[0].exposed[static_cast<int>(rt::MeshAxis::kDP)], allReduce, 1e-12);
  double parts = prediction.stages[0].compute + prediction.stages[0].exposed[0] +
                 prediction.stages[0].bubble + prediction.stages[0].recompute;
  EXPECT_NEAR(parts, prediction.stepSeconds, 1e-12);
}

TEST(StepTime, CallsAreBarriersAndAreSimulatedOnce) {
  PlanBuilder b;
  uint32_t x = b.buffer({1000, 1000});
  plan::Program *callee = b.program("forward_backward");
  PlanBuilder::command(callee, "add", {x}, {x}); // 2 ms
  plan::Command *recomputed = PlanBuilder::command(callee, "add", {x}, {x});
  recomputed->set_origin("tiny.mlir:12 (recomputed)");
  // A GEMM (1 ms) and its recomputed copy: only the original counts as `gemm`.
  uint32_t w = b.buffer({1000, 500}), y = b.buffer({1000, 500});
  PlanBuilder::command(callee, "matmul", {x, w}, {y});
  PlanBuilder::command(callee, "matmul", {x, w}, {y})->set_origin("tiny.mlir:13 (recomputed)");
  plan::Program *step = b.program("train_step");
  for (int m = 0; m < 3; ++m) {
    plan::Command *call = PlanBuilder::command(step, "call", {}, {});
    PlanBuilder::attribute(call, "program", std::string("forward_backward"));
    call->set_micro_batch(m);
  }
  StepPrediction prediction;
  rt::Status status = predictStep({&b.plan}, roundDevice(), prediction, true);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_NEAR(prediction.stepSeconds, 0.018, 1e-12);
  EXPECT_NEAR(prediction.stages[0].recompute, 0.009, 1e-12);
  EXPECT_NEAR(prediction.stages[0].compute, 0.009, 1e-12);
  EXPECT_NEAR(prediction.stages[0].gemm, 0.003, 1e-12);
  ASSERT_EQ(prediction.timeline.size(), 12u);
  EXPECT_EQ(prediction.timeline[11].microBatch, 2);
  EXPECT_NEAR(prediction.timeline[8].start, 0.012, 1e-12);
  EXPECT_EQ(prediction.timeline[1].name, "add tiny.mlir:12 (recomputed)");
}

/// Two stages, two micro-batches, forward only: stage 1 waits for stage 0's first send (the
/// pipeline's fill), then computes while stage 0 computes and sends the second.
TEST(StepTime, PipelineStagesWaitForTheirTransfers) {
  PlanBuilder stages[2];
  for (int s = 0; s < 2; ++s) {
    PlanBuilder &b = stages[s];
    b.mesh(1, 2, 1, 1, 2);
    b.plan.set_pipeline_stage(s);
    uint32_t x = b.buffer({1000, 1000});
    plan::Program *p = b.program("train_step");
    for (int m = 0; m < 2; ++m) {
      if (s == 1) {
        plan::Command *recv = PlanBuilder::command(p, "recv", {}, {x});
        PlanBuilder::attribute(recv, "axis", std::string("pp"));
        PlanBuilder::attribute(recv, "shift", int64_t{-1});
        PlanBuilder::attribute(recv, "tag", int64_t{m});
      }
      PlanBuilder::command(p, "add", {x}, {x}); // 2 ms
      if (s == 0) {
        plan::Command *send = PlanBuilder::command(p, "send", {x}, {});
        PlanBuilder::attribute(send, "axis", std::string("pp"));
        PlanBuilder::attribute(send, "shift", int64_t{1});
        PlanBuilder::attribute(send, "tag", int64_t{m});
      }
    }
  }
  StepPrediction prediction;
  rt::Status status = predictStep({&stages[0].plan, &stages[1].plan}, roundDevice(), prediction);
  ASSERT_TRUE(status.isOk()) << status.toString();
  double transfer = 2e6 / 1e9 + 1e-6; // 2 MB over NVLink
  EXPECT_NEAR(prediction.stages[0].step, 0.004, 1e-12);
  // Stage 1: waits 2 ms + transfer, computes 2 ms; the second message, sent at 4 ms, arrives
  // just as that ends; computes 2 ms.
  EXPECT_NEAR(prediction.stages[1].bubble, 0.002 + transfer, 1e-12);
  EXPECT_NEAR(prediction.stages[1].step, 0.002 + transfer + 0.004, 1e-12);
  EXPECT_EQ(prediction.criticalStage, 1u);

  // A receive nobody sends is reported, not waited for forever.
  plan::Command *stray = PlanBuilder::command(stages[1].plan.mutable_programs(0), "recv", {}, {0});
  PlanBuilder::attribute(stray, "axis", std::string("pp"));
  PlanBuilder::attribute(stray, "shift", int64_t{-1});
  PlanBuilder::attribute(stray, "tag", int64_t{7});
  status = predictStep({&stages[0].plan, &stages[1].plan}, roundDevice(), prediction);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("waits forever at command"), std::string::npos)
      << status.message();
}

TEST(StepTime, CalibrationReplacesTheFigures) {
  DeviceSpeed speed = roundDevice();
  rt::Status status = parseCalibration(R"({"format": "mlperfc-calibration-1", "device": "cpu",
      "measurements": [
        {"kind": "gemm", "dtype": "bf16", "m": 100, "n": 100, "k": 100, "seconds": 0.001},
        {"kind": "gemm", "dtype": "bf16", "m": 1000, "n": 1000, "k": 1000, "seconds": 0.1},
        {"kind": "memory", "bytes": 1000000, "seconds": 0.001},
        {"kind": "command", "seconds": 0.00002},
        {"kind": "all_reduce", "ranks": 2, "bytes": 1000000, "seconds": 0.001}]})",
                                       speed);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(speed.name, "cpu");
  EXPECT_DOUBLE_EQ(speed.commandSeconds, 2e-5);
  EXPECT_DOUBLE_EQ(speed.intraNodeBandwidth, 1e9); // 2 (p-1)/p x bytes / s
  // Between the two GEMM points the rate is interpolated linearly in log(FLOPs), from
  // 2e9 FLOP/s at 2e6 FLOPs to 2e10 FLOP/s at 2e9 FLOPs.
  PlanBuilder b;
  uint32_t x = b.buffer({1000, 1000}), w = b.buffer({1000, 1000}), y = b.buffer({1000, 1000});
  plan::Program *p = b.program("train_step");
  plan::Command *mm = PlanBuilder::command(p, "matmul", {x, w}, {y});
  EXPECT_NEAR(commandCost(b.plan, *mm, speed, rt::MeshShape(), 0).seconds, 0.1, 1e-12);
  uint32_t a = b.buffer({316, 1000}), c = b.buffer({316, 1000});
  plan::Command *mid = PlanBuilder::command(p, "matmul", {a, w}, {c});
  double flops = 2.0 * 316 * 1000 * 1000;
  double t = (std::log(flops) - std::log(2e6)) / (std::log(2e9) - std::log(2e6));
  double rate = std::exp(std::log(2e9) * (1 - t) + std::log(2e10) * t);
  EXPECT_NEAR(commandCost(b.plan, *mid, speed, rt::MeshShape(), 0).seconds, flops / rate, 1e-12);

  for (
      const char *bad :
      {"", "[]", R"({"format": "other", "measurements": []})",
       R"({"format": "mlperfc-calibration-1"})",
       R"({"format": "mlperfc-calibration-1", "measurements": [{"kind": "gemm"}]})",
       R"({"format": "mlperfc-calibration-1", "measurements": [{"kind": "gemm", "seconds": 1, "m": 1, "n": 1, "k": 1}]})",
       R"({"format": "mlperfc-calibration-1", "measurements": [{"kind": "warp", "seconds": 1}]})",
       R"({"format": "mlperfc-calibration-1", "measurements": [{"kind": "memory", "seconds": -1, "bytes": 4}]})"}) {
    DeviceSpeed untouched = roundDevice();
    EXPECT_FALSE(parseCalibration(bad, untouched).isOk()) << bad;
  }
}

TEST(StepTime, BuiltinDevices) {
  DeviceSpeed speed;
  for (const char *name : {"h100", "h200", "b200", "cpu"}) {
    ASSERT_TRUE(builtinDeviceSpeed(name, speed).isOk()) << name;
    EXPECT_GT(speed.peakBf16, 0);
    EXPECT_FALSE(speed.source.empty());
  }
  // H100 at 8192^3 bf16: the measured 790 TFLOP/s.
  ASSERT_TRUE(builtinDeviceSpeed("h100", speed).isOk());
  PlanBuilder b;
  uint32_t x = b.buffer({8192, 8192}), w = b.buffer({8192, 8192}), y = b.buffer({8192, 8192});
  plan::Command *mm = PlanBuilder::command(b.program("train_step"), "matmul", {x, w}, {y});
  double seconds = commandCost(b.plan, *mm, speed, rt::MeshShape(), 0).seconds;
  EXPECT_NEAR(2.0 * 8192.0 * 8192.0 * 8192.0 / seconds / 1e12, 790, 5);
  rt::Status unknown = builtinDeviceSpeed("tpu", speed);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.message().find("h100, h200, b200 and cpu"), std::string::npos);
}

} // namespace
