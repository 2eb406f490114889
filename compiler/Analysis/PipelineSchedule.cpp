//===- PipelineSchedule.cpp - Static pipeline schedules --------*- C++ -*-===//

#include "compiler/Analysis/PipelineSchedule.h"

#include <algorithm>
#include <map>

namespace mlperf {

using rt::Status;
using rt::StatusCode;

namespace {

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

} // namespace

Status pipelineSchedule(int64_t pp, int64_t vp, int64_t microBatches,
                        std::vector<std::vector<PipelineOp>> &schedule) {
  if (pp < 1 || vp < 1 || microBatches < 1) {
    return invalid("a pipeline schedule needs pp, vp and micro-batches >= 1");
  }
  schedule.assign(pp, {});
  if (vp == 1) {
    for (int64_t rank = 0; rank < pp; ++rank) {
      std::vector<PipelineOp> &ops = schedule[rank];
      int64_t warmup = std::min(pp - rank - 1, microBatches);
      for (int64_t m = 0; m < warmup; ++m) {
        ops.push_back({true, m, 0});
      }
      for (int64_t m = 0; m < microBatches - warmup; ++m) {
        ops.push_back({true, warmup + m, 0});
        ops.push_back({false, m, 0});
      }
      for (int64_t m = microBatches - warmup; m < microBatches; ++m) {
        ops.push_back({false, m, 0});
      }
    }
    return Status::ok();
  }
  if (microBatches % pp != 0) {
    return invalid("the interleaved schedule needs the micro-batches (" +
                   std::to_string(microBatches) + ") to be a multiple of pp=" + std::to_string(pp));
  }
  // Megatron-LM's interleaved order: the k-th forward of a rank is chunk (k / pp) mod vp of
  // micro-batch (k / (pp·vp))·pp + k mod pp; backwards visit the chunks in reverse.
  int64_t total = microBatches * vp;
  auto op = [&](int64_t k, bool forward) {
    int64_t chunk = (k / pp) % vp;
    return PipelineOp{forward, (k / (pp * vp)) * pp + k % pp, forward ? chunk : vp - 1 - chunk};
  };
  for (int64_t rank = 0; rank < pp; ++rank) {
    std::vector<PipelineOp> &ops = schedule[rank];
    int64_t warmup =
        microBatches == pp ? total : std::min(total, (pp - rank - 1) * 2 + (vp - 1) * pp);
    for (int64_t k = 0; k < warmup; ++k) {
      ops.push_back(op(k, true));
    }
    for (int64_t k = 0; k < total - warmup; ++k) {
      ops.push_back(op(warmup + k, true));
      ops.push_back(op(k, false));
    }
    for (int64_t k = total - warmup; k < total; ++k) {
      ops.push_back(op(k, false));
    }
  }
  return Status::ok();
}

int64_t maxInFlight(const std::vector<PipelineOp> &rankSchedule, int64_t chunk) {
  int64_t inFlight = 0, most = 0;
  for (const PipelineOp &op : rankSchedule) {
    if (op.chunk == chunk) {
      inFlight += op.forward ? 1 : -1;
      most = std::max(most, inFlight);
    }
  }
  return most;
}

Status simulatePipeline(const std::vector<std::vector<PipelineOp>> &schedule, int64_t pp,
                        int64_t vp, double forwardCost, double backwardCost,
                        PipelineTiming &timing) {
  int64_t stages = pp * vp;
  // Finish time of (forward?, micro-batch, virtual stage).
  std::map<std::tuple<bool, int64_t, int64_t>, double> finished;
  std::vector<size_t> next(pp, 0);
  std::vector<double> free(pp, 0.0), busy(pp, 0.0);
  size_t remaining = 0;
  for (const auto &ops : schedule) {
    remaining += ops.size();
  }
  while (remaining > 0) {
    bool progress = false;
    for (int64_t rank = 0; rank < pp; ++rank) {
      while (next[rank] < schedule[rank].size()) {
        const PipelineOp &op = schedule[rank][next[rank]];
        int64_t stage = op.chunk * pp + rank;
        std::vector<std::tuple<bool, int64_t, int64_t>> needs;
        if (op.forward && stage > 0) {
          needs.emplace_back(true, op.microBatch, stage - 1);
        }
        if (!op.forward) {
          needs.emplace_back(true, op.microBatch, stage);
          if (stage + 1 < stages) {
            needs.emplace_back(false, op.microBatch, stage + 1);
          }
        }
        double start = free[rank];
        bool ready = true;
        for (const auto &need : needs) {
          auto it = finished.find(need);
          if (it == finished.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) {
          break;
        }
        double cost = op.forward ? forwardCost : backwardCost;
        free[rank] = start + cost;
        busy[rank] += cost;
        finished[{op.forward, op.microBatch, stage}] = free[rank];
        ++next[rank];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      return Status(StatusCode::kInternal, "the pipeline schedule deadlocks");
    }
  }
  timing.makespan = *std::max_element(free.begin(), free.end());
  timing.busy = *std::max_element(busy.begin(), busy.end());
  timing.bubbleFraction = 1.0 - timing.busy / timing.makespan;
  return Status::ok();
}

double textbookBubbleFraction(int64_t pp, int64_t vp, int64_t microBatches) {
  return static_cast<double>(pp - 1) / static_cast<double>(vp * microBatches + pp - 1);
}

} // namespace mlperf
