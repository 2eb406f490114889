//===- DeviceSpeed.cpp - The device figures and calibration files -*- C++ -*-===//

#include "compiler/Analysis/DeviceSpeed.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

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

} // namespace mlperf
