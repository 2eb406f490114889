//===- CommandCost.cpp - What one command of a plan costs --------*- C++ -*-===//

#include "compiler/Analysis/CommandCost.h"
#include "compiler/Analysis/ModelSummary.h"

#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanOps.h"

#include <algorithm>
#include <cmath>

namespace mlperf {

//===----------------------------------------------------------------------===//
// Command costs
//===----------------------------------------------------------------------===//

namespace {

/// Seconds for `work` by measured points: the rate (work per second) interpolated linearly
/// in log(work) between the neighbouring points, the end points' rate beyond them.
double fromPoints(const std::vector<SpeedPoint> &points, double work) {
  auto rate = [](const SpeedPoint &p) { return p.work / p.seconds; };
  if (work <= points.front().work) {
    // Below the smallest measurement the time does not shrink further than proportionally.
    return points.front().seconds * std::max(work / points.front().work, 0.0);
  }
  if (work >= points.back().work) {
    return work / rate(points.back());
  }
  auto upper = std::lower_bound(points.begin(), points.end(), work,
                                [](const SpeedPoint &p, double w) { return p.work < w; });
  auto lower = upper - 1;
  double t =
      (std::log(work) - std::log(lower->work)) / (std::log(upper->work) - std::log(lower->work));
  double r = std::exp(std::log(rate(*lower)) * (1 - t) + std::log(rate(*upper)) * t);
  return work / r;
}

double elements(const plan::Buffer &buffer) {
  double n = 1;
  for (int64_t dim : buffer.shape()) {
    n *= static_cast<double>(dim);
  }
  return n;
}

bool flag(const plan::Command &command, std::string_view name) {
  const plan::Attribute *a = rt::findAttribute(command, name);
  return a && a->value_case() == plan::Attribute::kI && a->i() != 0;
}

/// The size of the group along `axis` of the stage's first rank and the nodes it spans.
/// Members are `stride` ranks apart (tp fastest, then dp, then pp) from a first rank that
/// starts a node when the stage fills whole nodes; closed form, since a collective of a
/// 2048-rank group is costed thousands of times per plan.
std::pair<int64_t, int64_t> groupLayout(const rt::MeshShape &mesh, int64_t stage,
                                        rt::MeshAxis axis) {
  int64_t size = mesh.axisSize(axis);
  int64_t stride = 1;
  switch (axis) {
  case rt::MeshAxis::kTP:
    stride = 1;
    break;
  case rt::MeshAxis::kDP:
  case rt::MeshAxis::kDPShard: // consecutive data-parallel ranks
    stride = mesh.tp;
    break;
  case rt::MeshAxis::kDPReplicate: // one member per sharding group
    stride = mesh.tp * mesh.shardGroupSize();
    break;
  case rt::MeshAxis::kPP:
    stride = mesh.tp * mesh.dp;
    break;
  }
  int64_t perNode = std::max<int64_t>(1, mesh.gpusPerNode);
  int64_t first = std::clamp<int64_t>(stage, 0, mesh.pp - 1) * mesh.tp * mesh.dp;
  if (stride >= perNode) {
    return {size, size}; // every member on a node of its own
  }
  int64_t last = first + (size - 1) * stride;
  return {size, last / perNode - first / perNode + 1};
}

double gemmSeconds(double m, double n, double k, plan::DType dtype, const DeviceSpeed &speed) {
  double flops = 2.0 * m * n * k;
  const std::vector<SpeedPoint> &points = dtype == plan::F32 ? speed.gemmF32
                                          : dtype == plan::F8E4M3FN || dtype == plan::F8E5M2
                                              ? speed.gemmFp8
                                              : speed.gemmBf16;
  if (!points.empty()) {
    return fromPoints(points, flops);
  }
  bool fp8 = dtype == plan::F8E4M3FN || dtype == plan::F8E5M2;
  double peak = dtype == plan::F32 ? speed.peakF32 : fp8 ? speed.peakFp8 : speed.peakBf16;
  double efficiency = fp8 ? speed.fp8GemmEfficiency : speed.gemmEfficiency;
  for (double dim : {m, n, k}) {
    efficiency *= dim / (dim + speed.gemmKnee);
  }
  return flops / (peak * efficiency) + speed.commandSeconds;
}

double memorySeconds(double bytes, const DeviceSpeed &speed) {
  if (!speed.memory.empty()) {
    return fromPoints(speed.memory, bytes);
  }
  return bytes / speed.memoryBandwidth + speed.commandSeconds;
}

} // namespace

CollectiveTime collectiveTime(std::string_view op, double bytes, rt::MeshAxis axis,
                              const rt::MeshShape &mesh, int64_t stage, const DeviceSpeed &speed) {
  CollectiveTime result;
  auto [ranks, nodes] = groupLayout(mesh, stage, axis);
  result.ranks = ranks;
  result.nodes = nodes;
  if (ranks <= 1) {
    return result;
  }
  double p = static_cast<double>(ranks);
  bool across = nodes > 1;
  double bandwidth = across ? speed.interNodeBandwidth : speed.intraNodeBandwidth;
  double step = across ? speed.interNodeLatency : speed.intraNodeLatency;
  // A ring moves (p - 1) / p of the tensor per rank per pass in p - 1 steps; all-reduce is a
  // reduce-scatter pass and an all-gather pass.
  double passes = op == "all_reduce" ? 2.0 : 1.0;
  result.seconds =
      passes * ((p - 1) / p * bytes / bandwidth + (p - 1) * step) + speed.collectiveSeconds;
  if (op == "all_reduce" && across) {
    // NCCL's tree: a chain inside each node and a double binary tree across nodes, reduce up
    // and broadcast down; about the ring's bandwidth, logarithmic latency.
    double perNode = p / static_cast<double>(nodes);
    double tree = 2.0 * bytes / bandwidth +
                  2.0 * (std::ceil(std::log2(static_cast<double>(nodes))) * speed.interNodeLatency +
                         (perNode - 1) * speed.intraNodeLatency) +
                  speed.collectiveSeconds;
    if (tree < result.seconds) {
      result.seconds = tree;
      result.algorithm = "tree";
    }
  }
  return result;
}

namespace {

/// Bytes of a command's distinct operand and result buffers.
double touchedBytes(const plan::Plan &plan, const plan::Command &command) {
  return static_cast<double>(rt::commandBytes(plan, command));
}

} // namespace

CommandCost commandCost(const plan::Plan &plan, const plan::Command &command,
                        const DeviceSpeed &speed, const rt::MeshShape &mesh, int64_t stage) {
  CommandCost cost;
  auto measured = speed.ops.find(command.op());
  const std::string &op = command.op();
  auto operand = [&](int i) -> const plan::Buffer & { return plan.buffers(command.operands(i)); };
  auto result = [&](int i) -> const plan::Buffer & { return plan.buffers(command.results(i)); };
  // What the cost is made of: the plan op table's class (the loader checked the op exists).
  const rt::PlanOpSignature *signature = rt::findPlanOp(op);
  rt::OpCost kind = signature ? signature->cost : rt::OpCost::kMemory;
  if (kind == rt::OpCost::kNone) {
    return cost;
  }
  // The mesh axis a collective or transfer runs over (the loader checked the name).
  auto axisOf = [&](rt::MeshAxis fallback) {
    const plan::Attribute *name = rt::findAttribute(command, "axis");
    if (name) {
      rt::parseMeshAxis(name->s(), fallback);
    }
    return fallback;
  };
  if (kind == rt::OpCost::kCollective) {
    rt::MeshAxis axis = axisOf(rt::MeshAxis::kDP);
    const plan::Buffer &full = op == "all_gather" ? result(0) : operand(0);
    cost.kind = CostKind::kCollective;
    cost.axis = axis;
    cost.bytes = static_cast<double>(full.size());
    cost.seconds = collectiveTime(op, cost.bytes, axis, mesh, stage, speed).seconds;
    return cost;
  }
  if (kind == rt::OpCost::kTransfer) {
    const plan::Attribute *shift = rt::findAttribute(command, "shift");
    rt::MeshAxis axis = axisOf(rt::MeshAxis::kPP);
    const plan::Buffer &message = op == "send" ? operand(0) : result(0);
    cost.kind = CostKind::kTransfer;
    cost.axis = axis;
    cost.bytes = static_cast<double>(message.size());
    // Neighbours along pp are tp x dp ranks apart: on the same node only when a whole stage
    // fits in a node.
    int64_t distance =
        (shift ? std::abs(shift->i()) : 1) * (axis == rt::MeshAxis::kPP   ? mesh.tp * mesh.dp
                                              : axis == rt::MeshAxis::kDP ? mesh.tp
                                                                          : 1);
    bool across = distance >= mesh.gpusPerNode;
    cost.seconds = cost.bytes / (across ? speed.interNodeBandwidth : speed.intraNodeBandwidth) +
                   (across ? speed.interNodeLatency : speed.intraNodeLatency) +
                   speed.collectiveSeconds;
    return cost;
  }
  if (kind == rt::OpCost::kGemm) {
    const plan::Buffer &lhs = operand(0), &out = result(0);
    int rank = lhs.shape_size();
    int64_t k = flag(command, "transpose_lhs") ? lhs.shape(rank - 2) : lhs.shape(rank - 1);
    double n = static_cast<double>(out.shape(out.shape_size() - 1));
    double m = elements(out) / std::max(n, 1.0);
    if (op == "grouped_matmul_weight_grad") {
      // Every row [N, K] meets its gradient row [N, M] once, whichever expert it belongs to:
      // the same 2·N·K·M as the forward, not the size of the weights times K.
      const plan::Buffer &grad = operand(1);
      m = static_cast<double>(lhs.shape(0));
      n = static_cast<double>(grad.shape(grad.shape_size() - 1));
    }
    cost.kind = CostKind::kGemm;
    cost.flops = 2.0 * m * n * static_cast<double>(k);
    cost.seconds = gemmSeconds(m, n, static_cast<double>(k), lhs.dtype(), speed);
    return cost;
  }
  if (kind == rt::OpCost::kAttention) {
    // q [B, H, S, D], k [B, KV, Sk, D]: QK^T and PV, 2 x 2·B·H·S·Sk·D, halved when causal;
    // the backward recomputes the scores and takes four more products: 2.5x.
    const plan::Buffer &q = operand(0), &key = operand(1);
    double flops = 4.0 * elements(q) * static_cast<double>(key.shape(2));
    if (flag(command, "causal")) {
      const plan::Attribute *window = rt::findAttribute(command, "window");
      flops *= causalScoreShare(window ? std::optional<int64_t>(window->i()) : std::nullopt,
                                key.shape(2));
    }
    if (op == "attention_grad") {
      flops *= 2.5;
    }
    cost.kind = CostKind::kAttention;
    cost.flops = flops;
    cost.seconds = !speed.attention.empty() ? fromPoints(speed.attention, flops)
                                            : flops / (speed.peakBf16 * speed.attentionEfficiency) +
                                                  speed.commandSeconds;
    return cost;
  }
  if (kind == rt::OpCost::kLinearCrossEntropy) {
    // hidden [.., h] x weight [V, h]: the logits' GEMM (linear_cross_entropy and the linear_
    // pieces of a vocabulary-split loss); a gradient recomputes the logits and takes the
    // hidden and the weight gradients.
    const plan::Buffer &hidden = operand(0), &weight = operand(1);
    double h = static_cast<double>(hidden.shape(hidden.shape_size() - 1));
    double tokens = elements(hidden) / std::max(h, 1.0);
    double vocab = static_cast<double>(weight.shape(0));
    // The forward pieces compute the logits once, a gradient also both products of dlogits.
    const bool gradient = op.size() > 5 && op.compare(op.size() - 5, 5, "_grad") == 0;
    double products = gradient ? 3.0 : 1.0;
    cost.kind = CostKind::kGemm;
    cost.flops = products * 2.0 * tokens * h * vocab;
    cost.seconds = measured != speed.ops.end()
                       ? fromPoints(measured->second, touchedBytes(plan, command))
                       : products * gemmSeconds(tokens, vocab, h, weight.dtype(), speed);
    return cost;
  }
  // Everything else is memory-bound: the bytes of its operands and results, once each. A copy
  // or reshape whose result is its operand's bytes moves nothing.
  if (kind == rt::OpCost::kAliasable && command.operands_size() == 1 &&
      command.results_size() == 1) {
    const plan::Buffer &from = operand(0), &to = result(0);
    if (from.memory_class() == to.memory_class() && from.offset() == to.offset()) {
      return cost;
    }
  }
  cost.bytes = touchedBytes(plan, command);
  cost.kind = CostKind::kMemory;
  cost.seconds = measured != speed.ops.end() ? fromPoints(measured->second, cost.bytes)
                                             : memorySeconds(cost.bytes, speed);
  return cost;
}

} // namespace mlperf
