//===- StepTime.cpp - What one training step of a plan costs ----*- C++ -*-===//

#include "compiler/Analysis/StepTime.h"

#include "runtime/plan/PlanLoader.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>

namespace mlperf {

using rt::Status;
using rt::StatusCode;

//===----------------------------------------------------------------------===//
// The device table
//===----------------------------------------------------------------------===//

namespace {

/// Hopper's figures, shared by H100 and H200 (same SM, clocks and NVLink; H200 has more and
/// faster HBM). Sources: NVIDIA H100/H200 datasheets (dense bf16 989 TFLOP/s, fp8 1979, NVLink
/// 900 GB/s bidirectional, NDR 400 Gb/s per GPU); cuBLAS 8192^3 bf16 measured at ~790 TFLOP/s
/// on an H200 of this project and cuBLASLt fp8 at ~1300 elsewhere; cuDNN fused attention
/// 529 (forward) / 518 (backward) TFLOP/s at seq 8k, head dim 128; nccl-tests all-reduce on
/// 8 x H100: ~470 GB/s bus bandwidth at >= 1 GB, ~20-25 us up to 1 MiB (all from
/// ../shared/reference/HARDWARE.md, reproduced in docs/cost-model.md). The per-step latency
/// across nodes (5 us: an InfiniBand hop plus NCCL's proxy) is an assumption, stated as one.
DeviceSpeed hopper(std::string name, double hbmBytesPerSecond, std::string hbmSource) {
  DeviceSpeed d;
  d.name = std::move(name);
  d.source = "datasheet peaks; GEMM 790/989 of peak at 8192^3 (measured on an H200), cuDNN "
             "attention 0.53 of peak, HBM " +
             hbmSource + ", NCCL 8-GPU bus 450 GB/s, IB 45 GB/s per GPU";
  d.peakBf16 = 989e12;
  d.peakFp8 = 1979e12;
  d.peakF32 = 67e12;
  // 0.80 of peak at 8192^3 with the knee factor (8192 / 8320)^3 = 0.955.
  d.gemmEfficiency = 0.80 / std::pow(8192.0 / (8192.0 + 128.0), 3);
  d.fp8GemmEfficiency = (1300.0 / 1979.0) / std::pow(8192.0 / (8192.0 + 128.0), 3);
  d.gemmKnee = 128;
  d.attentionEfficiency = 0.53;
  d.memoryBandwidth = hbmBytesPerSecond;
  d.commandSeconds = 3e-6; // a kernel boundary inside a CUDA graph
  d.intraNodeBandwidth = 450e9;
  d.interNodeBandwidth = 45e9; // 400 Gb/s NDR per GPU, ~90% reached
  d.intraNodeLatency = 0.8e-6; // 14 ring steps + 10 us = ~21 us on 8 GPUs (nccl-tests)
  d.interNodeLatency = 5e-6;
  d.collectiveSeconds = 10e-6;
  return d;
}

DeviceSpeed blackwell() {
  DeviceSpeed d = hopper("b200", 8e12 * 0.9, "8 TB/s x 0.9");
  d.source = "datasheet peaks (2250 bf16, 4500 fp8 TFLOP/s, 8 TB/s, NVLink 5 1800 GB/s) with "
             "Hopper's measured fractions (no B200 measurement yet)";
  d.peakBf16 = 2250e12;
  d.peakFp8 = 4500e12;
  d.peakF32 = 80e12;
  d.intraNodeBandwidth = 900e9;
  return d;
}

/// The CPU backend on this project's 2-core build machine: OpenBLAS fp32 GEMM ~54 GFLOP/s at
/// 1024^3 (HARDWARE.md); the rest are round figures to be replaced by `--calibrate` with the
/// file `mlperf-run --calibrate-out` measures.
DeviceSpeed cpu() {
  DeviceSpeed d;
  d.name = "cpu";
  d.source = "OpenBLAS fp32 GEMM 54 GFLOP/s on 2 cores (HARDWARE.md); other figures rough: "
             "calibrate with mlperf-run --calibrate-out";
  d.peakBf16 = d.peakF32 = d.peakFp8 = 54e9;
  d.gemmEfficiency = d.fp8GemmEfficiency = 1.0;
  d.gemmKnee = 32;
  d.attentionEfficiency = 0.3;
  d.memoryBandwidth = 4e9;
  d.commandSeconds = 10e-6;
  d.intraNodeBandwidth = d.interNodeBandwidth = 4e9;
  d.intraNodeLatency = d.interNodeLatency = 5e-6;
  d.collectiveSeconds = 20e-6;
  return d;
}

} // namespace

Status builtinDeviceSpeed(std::string_view name, DeviceSpeed &speed) {
  if (name == "h100") {
    speed = hopper("h100", 3.35e12 * 0.9, "3.35 TB/s x 0.9");
  } else if (name == "h200") {
    speed = hopper("h200", 4.3e12, "4.3 TB/s (copy measured on an H200)");
  } else if (name == "b200") {
    speed = blackwell();
  } else if (name == "cpu") {
    speed = cpu();
  } else {
    return Status(StatusCode::kInvalidArgument, "unknown device '" + std::string(name) +
                                                    "': the cost model knows " +
                                                    builtinDeviceNames());
  }
  return Status::ok();
}

std::string builtinDeviceNames() { return "h100, h200, b200 and cpu"; }

//===----------------------------------------------------------------------===//
// Calibration files
//===----------------------------------------------------------------------===//

Status parseCalibration(std::string_view text, DeviceSpeed &speed) {
  auto bad = [](const std::string &what) {
    return Status(StatusCode::kInvalidArgument, "calibration: " + what);
  };
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(llvm::StringRef(text));
  if (!parsed) {
    return bad("not JSON: " + llvm::toString(parsed.takeError()));
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    return bad("the file must hold one JSON object");
  }
  std::optional<llvm::StringRef> format = root->getString("format");
  if (!format || *format != "mlperfc-calibration-1") {
    return bad("\"format\" must be \"mlperfc-calibration-1\"");
  }
  const llvm::json::Array *measurements = root->getArray("measurements");
  if (!measurements) {
    return bad("no \"measurements\" array");
  }
  std::vector<SpeedPoint> memory;
  std::vector<double> commandSeconds;
  for (size_t i = 0; i < measurements->size(); ++i) {
    std::string where = "measurement " + std::to_string(i);
    const llvm::json::Object *m = (*measurements)[i].getAsObject();
    if (!m) {
      return bad(where + " is not an object");
    }
    std::optional<llvm::StringRef> kind = m->getString("kind");
    std::optional<double> seconds = m->getNumber("seconds");
    if (!kind || !seconds || !(*seconds > 0) || !std::isfinite(*seconds)) {
      return bad(where + " needs a \"kind\" and positive finite \"seconds\"");
    }
    auto number = [&](llvm::StringRef key, double &value) -> Status {
      std::optional<double> v = m->getNumber(key);
      if (!v || !(*v > 0) || !std::isfinite(*v)) {
        return bad(where + " (" + kind->str() + ") needs a positive \"" + key.str() + "\"");
      }
      value = *v;
      return Status::ok();
    };
    if (*kind == "gemm") {
      double mm = 0, n = 0, k = 0;
      MLPERF_RETURN_IF_ERROR(number("m", mm));
      MLPERF_RETURN_IF_ERROR(number("n", n));
      MLPERF_RETURN_IF_ERROR(number("k", k));
      std::optional<llvm::StringRef> dtype = m->getString("dtype");
      std::vector<SpeedPoint> *points = !dtype             ? nullptr
                                        : *dtype == "bf16" ? &speed.gemmBf16
                                        : *dtype == "f32"  ? &speed.gemmF32
                                        : *dtype == "fp8"  ? &speed.gemmFp8
                                                           : nullptr;
      if (!points) {
        return bad(where + " (gemm) needs \"dtype\": bf16, f32 or fp8");
      }
      points->push_back({2.0 * mm * n * k, *seconds});
    } else if (*kind == "attention") {
      double flops = 0;
      MLPERF_RETURN_IF_ERROR(number("flops", flops));
      speed.attention.push_back({flops, *seconds});
    } else if (*kind == "memory") {
      double bytes = 0;
      MLPERF_RETURN_IF_ERROR(number("bytes", bytes));
      memory.push_back({bytes, *seconds});
    } else if (*kind == "op") {
      double bytes = 0;
      MLPERF_RETURN_IF_ERROR(number("bytes", bytes));
      std::optional<llvm::StringRef> op = m->getString("op");
      if (!op || op->empty()) {
        return bad(where + " (op) needs \"op\": the plan op it measured");
      }
      speed.ops[op->str()].push_back({bytes, *seconds});
    } else if (*kind == "command") {
      commandSeconds.push_back(*seconds);
    } else if (*kind == "all_reduce") {
      double ranks = 0, bytes = 0, nodes = 1;
      MLPERF_RETURN_IF_ERROR(number("ranks", ranks));
      MLPERF_RETURN_IF_ERROR(number("bytes", bytes));
      if (m->get("nodes")) {
        MLPERF_RETURN_IF_ERROR(number("nodes", nodes));
      }
      if (ranks < 2) {
        return bad(where + " (all_reduce) needs at least 2 ranks");
      }
      // nccl-tests' bus bandwidth: 2 (p - 1) / p x bytes / time.
      double bus = 2.0 * (ranks - 1) / ranks * bytes / *seconds;
      (nodes > 1 ? speed.interNodeBandwidth : speed.intraNodeBandwidth) = bus;
    } else {
      return bad(where + " has unknown kind '" + kind->str() +
                 "' (gemm, attention, memory, op, command, all_reduce)");
    }
  }
  if (!commandSeconds.empty()) {
    std::sort(commandSeconds.begin(), commandSeconds.end());
    speed.commandSeconds = commandSeconds[commandSeconds.size() / 2];
  }
  speed.memory = std::move(memory);
  auto byWork = [](const SpeedPoint &a, const SpeedPoint &b) { return a.work < b.work; };
  for (std::vector<SpeedPoint> *points :
       {&speed.gemmBf16, &speed.gemmF32, &speed.gemmFp8, &speed.attention, &speed.memory}) {
    std::sort(points->begin(), points->end(), byWork);
  }
  for (auto &entry : speed.ops) {
    std::sort(entry.second.begin(), entry.second.end(), byWork);
  }
  if (std::optional<llvm::StringRef> device = root->getString("device")) {
    speed.name = device->str();
  }
  speed.source = "calibrated: " + std::to_string(measurements->size()) + " measurements" +
                 (root->getString("machine") ? " on " + root->getString("machine")->str() : "");
  return Status::ok();
}

Status loadCalibration(const std::string &path, DeviceSpeed &speed) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file) {
    return Status(StatusCode::kNotFound,
                  "cannot read calibration file '" + path + "': " + file.getError().message());
  }
  Status status = parseCalibration((*file)->getBuffer().str(), speed);
  if (!status.isOk()) {
    return Status(status.code(), "'" + path + "': " + status.message());
  }
  return Status::ok();
}

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
  int64_t stride = axis == rt::MeshAxis::kTP   ? 1
                   : axis == rt::MeshAxis::kDP ? mesh.tp
                                               : mesh.tp * mesh.dp;
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
  if (op == "event_record" || op == "event_wait" || op == "call") {
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
  if (op == "all_reduce" || op == "reduce_scatter" || op == "all_gather") {
    rt::MeshAxis axis = axisOf(rt::MeshAxis::kDP);
    const plan::Buffer &full = op == "all_gather" ? result(0) : operand(0);
    cost.kind = CostKind::kCollective;
    cost.axis = axis;
    cost.bytes = static_cast<double>(full.size());
    cost.seconds = collectiveTime(op, cost.bytes, axis, mesh, stage, speed).seconds;
    return cost;
  }
  if (op == "send" || op == "recv") {
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
  if (op == "matmul" || op == "fp8_matmul") {
    const plan::Buffer &lhs = operand(0), &out = result(0);
    int rank = lhs.shape_size();
    int64_t k = flag(command, "transpose_lhs") ? lhs.shape(rank - 2) : lhs.shape(rank - 1);
    double n = static_cast<double>(out.shape(out.shape_size() - 1));
    double m = elements(out) / std::max(n, 1.0);
    cost.kind = CostKind::kGemm;
    cost.flops = 2.0 * m * n * static_cast<double>(k);
    cost.seconds = gemmSeconds(m, n, static_cast<double>(k), lhs.dtype(), speed);
    return cost;
  }
  if (op == "attention" || op == "attention_grad") {
    // q [B, H, S, D], k [B, KV, Sk, D]: QK^T and PV, 2 x 2·B·H·S·Sk·D, halved when causal;
    // the backward recomputes the scores and takes four more products: 2.5x.
    const plan::Buffer &q = operand(0), &key = operand(1);
    double flops = 4.0 * elements(q) * static_cast<double>(key.shape(2));
    if (flag(command, "causal")) {
      flops *= 0.5;
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
  if (op == "linear_cross_entropy" || op == "linear_cross_entropy_grad") {
    // hidden [.., h] x weight [V, h]: the logits' GEMM; the gradient recomputes the logits and
    // takes the hidden and the weight gradients.
    const plan::Buffer &hidden = operand(0), &weight = operand(1);
    double h = static_cast<double>(hidden.shape(hidden.shape_size() - 1));
    double tokens = elements(hidden) / std::max(h, 1.0);
    double vocab = static_cast<double>(weight.shape(0));
    double products = op == "linear_cross_entropy" ? 1.0 : 3.0;
    cost.kind = CostKind::kGemm;
    cost.flops = products * 2.0 * tokens * h * vocab;
    cost.seconds = measured != speed.ops.end()
                       ? fromPoints(measured->second, touchedBytes(plan, command))
                       : products * gemmSeconds(tokens, vocab, h, weight.dtype(), speed);
    return cost;
  }
  // Everything else is memory-bound: the bytes of its operands and results, once each. A copy
  // or reshape whose result is its operand's bytes moves nothing.
  if ((op == "reshape" || op == "copy") && command.operands_size() == 1 &&
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

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

namespace {

bool recomputed(const plan::Command &command) {
  const std::string &origin = command.origin();
  return origin.size() >= 12 && origin.compare(origin.size() - 12, 12, "(recomputed)") == 0;
}

std::string eventName(const plan::Command &command) {
  if (command.op() == "call") {
    const plan::Attribute *callee = rt::findAttribute(command, "program");
    return "call @" + (callee ? callee->s() : std::string("?"));
  }
  return command.origin().empty() ? command.op() : command.op() + " " + command.origin();
}

/// What the communication stream last did before a point, to name what a wait for it waits
/// on: a collective over an axis, or a pipeline transfer.
struct Blame {
  bool transfer = true;
  rt::MeshAxis axis = rt::MeshAxis::kPP;
};

/// A sub-program's simulated run, in isolation (a call is a barrier, so its time does not
/// depend on the caller): reused for every call.
struct ProgramTime {
  double seconds = 0;
  StageTime parts;
  Blame lastCommunication;
  std::vector<TimelineEvent> timeline; // relative to the call's start
};

struct Message {
  double arrival = 0;
};

/// One program running on one stage: a cursor per stream over its commands in program
/// order (calls on both: a barrier).
struct Run {
  const plan::Plan *plan = nullptr;
  const plan::Program *program = nullptr;
  int64_t stage = 0;
  rt::MeshShape mesh;
  std::vector<int> lane[2];
  size_t next[2] = {0, 0};
  double time[2] = {0, 0};
  Blame blame; // the communication stream's last command
  std::unordered_map<int64_t, std::pair<double, Blame>> recorded;
  StageTime parts;
  std::vector<TimelineEvent> timeline;
  bool isolated = false; // a callee simulated on its own, for every call of it
  bool done() const { return next[0] == lane[0].size() && next[1] == lane[1].size(); }
};

class Simulator {
public:
  Simulator(const DeviceSpeed &speed, bool withTimeline)
      : speed(speed), withTimeline(withTimeline) {}

  Status start(Run &run, const plan::Plan &plan, const plan::Program &program, int64_t stage) {
    run.plan = &plan;
    run.program = &program;
    run.stage = stage;
    run.mesh = rt::planMesh(plan);
    for (int c = 0; c < program.commands_size(); ++c) {
      const plan::Command &command = program.commands(c);
      if (command.op() == "call") {
        run.lane[0].push_back(c);
        run.lane[1].push_back(c);
      } else {
        run.lane[command.stream() == 1 ? 1 : 0].push_back(c);
      }
    }
    return Status::ok();
  }

  /// Runs `runs` together until every one is done; receives wait for their sends.
  Status runAll(std::vector<Run> &runs) {
    while (true) {
      bool allDone = true, progress = false;
      for (Run &run : runs) {
        for (int lane = 0; lane < 2; ++lane) {
          while (run.next[lane] < run.lane[lane].size()) {
            bool advanced = false;
            MLPERF_RETURN_IF_ERROR(step(run, lane, advanced));
            if (!advanced) {
              break;
            }
            progress = true;
          }
        }
        allDone = allDone && run.done();
      }
      if (allDone) {
        break;
      }
      if (!progress) {
        for (Run &run : runs) {
          for (int lane = 0; lane < 2; ++lane) {
            if (run.next[lane] < run.lane[lane].size()) {
              int c = run.lane[lane][run.next[lane]];
              return Status(StatusCode::kInvalidArgument,
                            "the step cannot complete: program '" + run.program->name() +
                                "' of stage " + std::to_string(run.stage) +
                                " waits forever at command " + std::to_string(c) + " ('" +
                                run.program->commands(c).op() + "')");
            }
          }
        }
      }
    }
    for (Run &run : runs) {
      finish(run);
    }
    return Status::ok();
  }

private:
  const DeviceSpeed &speed;
  bool withTimeline;
  /// Messages in flight per (from stage, to stage, tag), in send order.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Message>> mailboxes;
  std::map<std::pair<const plan::Plan *, std::string>, ProgramTime> programTimes;

  void addParts(StageTime &to, const StageTime &from) {
    to.compute += from.compute;
    to.recompute += from.recompute;
    to.bubble += from.bubble;
    to.communication += from.communication;
    to.flops += from.flops;
    for (int a = 0; a < 3; ++a) {
      to.exposed[a] += from.exposed[a];
    }
  }

  /// The compute stream waited `seconds` for the communication stream.
  static void blameWait(StageTime &parts, const Blame &blame, double seconds) {
    if (seconds <= 0) {
      return;
    }
    (blame.transfer ? parts.bubble : parts.exposed[static_cast<int>(blame.axis)]) += seconds;
  }

  void record(Run &run, int lane, const plan::Command &command, double start, double seconds) {
    if (withTimeline && seconds > 0) {
      TimelineEvent event;
      event.stage = run.stage;
      event.stream = static_cast<uint32_t>(lane);
      event.start = start;
      event.seconds = seconds;
      event.name = eventName(command);
      event.program = run.program->name();
      event.microBatch = command.has_micro_batch() ? command.micro_batch() : -1;
      run.timeline.push_back(std::move(event));
    }
  }

  Status calleeTime(const Run &run, const plan::Command &command, const ProgramTime *&time) {
    const plan::Attribute *callee = rt::findAttribute(command, "program");
    if (!callee) {
      return Status(StatusCode::kInvalidArgument, "a call without a program attribute");
    }
    auto key = std::make_pair(run.plan, callee->s());
    auto it = programTimes.find(key);
    if (it == programTimes.end()) {
      const plan::Program *program = nullptr;
      for (const plan::Program &p : run.plan->programs()) {
        program = p.name() == callee->s() ? &p : program;
      }
      if (!program) {
        return Status(StatusCode::kInvalidArgument,
                      "call of unknown program '" + callee->s() + "'");
      }
      std::vector<Run> inner(1);
      MLPERF_RETURN_IF_ERROR(start(inner[0], *run.plan, *program, run.stage));
      inner[0].isolated = true;
      MLPERF_RETURN_IF_ERROR(runAll(inner));
      ProgramTime computed;
      computed.seconds = inner[0].parts.step;
      computed.parts = inner[0].parts;
      computed.lastCommunication = inner[0].blame;
      computed.timeline = std::move(inner[0].timeline);
      it = programTimes.emplace(key, std::move(computed)).first;
    }
    time = &it->second;
    return Status::ok();
  }

  /// Advances `lane` of `run` by one command if it can run now.
  Status step(Run &run, int lane, bool &advanced) {
    int c = run.lane[lane][run.next[lane]];
    const plan::Command &command = run.program->commands(c);
    const std::string &op = command.op();
    double &now = run.time[lane];
    if (op == "call") {
      int other = 1 - lane;
      if (run.next[other] >= run.lane[other].size() || run.lane[other][run.next[other]] != c) {
        return Status::ok(); // the other stream has not reached the barrier yet
      }
      const ProgramTime *callee = nullptr;
      MLPERF_RETURN_IF_ERROR(calleeTime(run, command, callee));
      double begin = std::max(run.time[0], run.time[1]);
      blameWait(run.parts, run.blame, run.time[1] - run.time[0]);
      addParts(run.parts, callee->parts);
      if (withTimeline) {
        for (const TimelineEvent &event : callee->timeline) {
          TimelineEvent shifted = event;
          shifted.start += begin;
          shifted.stage = run.stage;
          if (command.has_micro_batch() && shifted.microBatch < 0) {
            shifted.microBatch = command.micro_batch();
          }
          run.timeline.push_back(std::move(shifted));
        }
      }
      if (callee->parts.communication > 0) {
        run.blame = callee->lastCommunication;
      }
      run.time[0] = run.time[1] = begin + callee->seconds;
      ++run.next[0];
      ++run.next[1];
      advanced = true;
      return Status::ok();
    }
    if (op == "event_record") {
      run.recorded[command.event()] = {now, run.blame};
    } else if (op == "event_wait") {
      auto it = run.recorded.find(command.event());
      if (it == run.recorded.end()) {
        return Status::ok(); // recorded later on the other stream
      }
      double waited = it->second.first - now;
      if (lane == 0) {
        blameWait(run.parts, it->second.second, waited);
      }
      now = std::max(now, it->second.first);
    } else {
      CommandCost cost = commandCost(*run.plan, command, speed, run.mesh, run.stage);
      if (cost.kind == CostKind::kTransfer && cost.axis == rt::MeshAxis::kPP) {
        const plan::Attribute *shift = rt::findAttribute(command, "shift");
        const plan::Attribute *tag = rt::findAttribute(command, "tag");
        int64_t peer = run.stage + (shift ? shift->i() : 0);
        int64_t key = tag ? tag->i() : 0;
        if (op == "send") {
          // Sends are asynchronous (the runtime completes them in the background): the
          // stream only issues it; the message arrives after its transfer time.
          mailboxes[{run.stage, peer, key}].push_back({now + cost.seconds});
          cost.seconds = speed.commandSeconds;
        } else {
          auto box = mailboxes.find({peer, run.stage, key});
          if (box == mailboxes.end() || box->second.empty()) {
            if (run.isolated) {
              return Status(StatusCode::kInvalidArgument,
                            "program '" + run.program->name() + "' receives from pipeline stage " +
                                std::to_string(peer) +
                                " in isolation: the model simulates pipeline transfers in the "
                                "step programs only");
            }
            return Status::ok(); // the sender has not got there yet
          }
          double arrival = box->second.front().arrival;
          box->second.pop_front();
          if (arrival > now) {
            if (lane == 0) {
              run.parts.bubble += arrival - now;
            }
            now = arrival;
          }
          cost.seconds = speed.commandSeconds;
        }
      }
      double begin = now;
      now += cost.seconds;
      record(run, lane, command, begin, cost.seconds);
      run.parts.flops += cost.flops;
      if (lane == 1) {
        run.parts.communication += cost.seconds;
        if (cost.kind == CostKind::kCollective || cost.kind == CostKind::kTransfer) {
          run.blame = {cost.kind == CostKind::kTransfer, cost.axis};
        }
      } else if (cost.kind == CostKind::kCollective) {
        run.parts.exposed[static_cast<int>(cost.axis)] += cost.seconds;
      } else if (cost.kind == CostKind::kTransfer) {
        run.parts.bubble += cost.seconds;
      } else {
        (recomputed(command) ? run.parts.recompute : run.parts.compute) += cost.seconds;
      }
    }
    ++run.next[lane];
    advanced = true;
    return Status::ok();
  }

  /// The stage's end: the later stream; a communication tail the compute stream did not
  /// cover is exposed.
  void finish(Run &run) {
    blameWait(run.parts, run.blame, run.time[1] - run.time[0]);
    run.parts.step = std::max(run.time[0], run.time[1]);
  }
};

} // namespace

Status predictStep(const std::vector<const plan::Plan *> &stages, const DeviceSpeed &speed,
                   StepPrediction &prediction, bool withTimeline, std::string_view programName) {
  if (stages.empty()) {
    return Status(StatusCode::kInvalidArgument, "no plan to predict");
  }
  Simulator simulator(speed, withTimeline);
  std::vector<Run> runs(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    const plan::Program *program = nullptr;
    for (const plan::Program &p : stages[s]->programs()) {
      program = p.name() == programName ? &p : program;
    }
    if (!program) {
      return Status(StatusCode::kInvalidArgument, "the plan of stage " + std::to_string(s) +
                                                      " has no program '" +
                                                      std::string(programName) + "'");
    }
    int64_t stage = stages.size() > 1 ? static_cast<int64_t>(s) : stages[s]->pipeline_stage();
    MLPERF_RETURN_IF_ERROR(simulator.start(runs[s], *stages[s], *program, stage));
  }
  MLPERF_RETURN_IF_ERROR(simulator.runAll(runs));
  prediction = StepPrediction();
  for (size_t s = 0; s < runs.size(); ++s) {
    prediction.stages.push_back(runs[s].parts);
    if (runs[s].parts.step > prediction.stepSeconds) {
      prediction.stepSeconds = runs[s].parts.step;
      prediction.criticalStage = s;
    }
    if (withTimeline) {
      for (TimelineEvent &event : runs[s].timeline) {
        prediction.timeline.push_back(std::move(event));
      }
    }
  }
  return Status::ok();
}

} // namespace mlperf
