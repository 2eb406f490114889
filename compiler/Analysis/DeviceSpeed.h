//===- DeviceSpeed.h - The device figures of the step-time model -*- C++ -*-===//
//
// What the step-time model (StepTime.h) knows of a device: peak FLOP/s per precision with
// the fraction a GEMM of each shape reaches, fused attention, memory bandwidth, per-command
// and per-collective costs, NVLink and InfiniBand. One table of built-in devices with their
// sources (DeviceSpeed.cpp); `--calibrate FILE` replaces the figures by measured
// microbenchmarks (docs/cost-model.md: the file format).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_DEVICESPEED_H
#define MLPERFC_COMPILER_ANALYSIS_DEVICESPEED_H

#include "runtime/support/Status.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf {

/// A measured speed: `work` (FLOPs, or bytes moved) done in `seconds`.
struct SpeedPoint {
  double work = 0, seconds = 0;
};

struct DeviceSpeed {
  std::string name;   // "h100", "cpu"
  std::string source; // where the figures come from (printed with every prediction)
  /// Dense peak FLOP/s by element type of the GEMM operands.
  double peakBf16 = 0, peakFp8 = 0, peakF32 = 0;
  /// The fraction of peak a large GEMM reaches, and the dim size below which a GEMM loses
  /// efficiency as d / (d + knee) per dim (tile quantization, too few waves).
  double gemmEfficiency = 0, gemmKnee = 0;
  double fp8GemmEfficiency = 0; // the same for fp8 operands
  /// Fused attention forward and backward: fraction of the bf16 peak.
  double attentionEfficiency = 0;
  /// Bytes per second memory-bound kernels reach, and each command's fixed cost (a kernel
  /// launch inside a CUDA graph; a command's dispatch on the CPU backend).
  double memoryBandwidth = 0, commandSeconds = 0;
  /// Collective bus bandwidth per GPU (bytes/s) inside a node (NVLink) and across nodes
  /// (the GPU's share of InfiniBand), the latency of one ring or tree step on each, and the
  /// fixed cost of a collective (launch, synchronization).
  double intraNodeBandwidth = 0, interNodeBandwidth = 0;
  double intraNodeLatency = 0, interNodeLatency = 0, collectiveSeconds = 0;
  /// Measured points that replace the curves above when given (--calibrate): GEMM FLOPs
  /// by operand type, fused attention FLOPs, bytes of memory-bound commands; sorted by work.
  std::vector<SpeedPoint> gemmBf16, gemmF32, gemmFp8, attention, memory;
  /// Per op (kind "op" in the file): the bytes of a command's distinct buffers against its
  /// measured seconds, used for that op instead of the memory-bound curve.
  std::map<std::string, std::vector<SpeedPoint>> ops;
};

/// The built-in devices: h100, h200, b200 (datasheets and published measurements) and
/// cpu (this project's CPU backend on a 2-core machine). `names` lists them for errors.
rt::Status builtinDeviceSpeed(std::string_view name, DeviceSpeed &speed);
std::string builtinDeviceNames();

/// Replaces `speed`'s figures by the measurements in a calibration file (JSON: the format
/// in docs/cost-model.md, written by `mlperf-run --calibrate-out` and the device check).
rt::Status loadCalibration(const std::string &path, DeviceSpeed &speed);
/// The same from the file's text (tests, fuzzing).
rt::Status parseCalibration(std::string_view json, DeviceSpeed &speed);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_DEVICESPEED_H
