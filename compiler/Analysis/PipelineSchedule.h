//===- PipelineSchedule.h - Static pipeline schedules ----------*- C++ -*-===//
//
// The order in which each pipeline rank runs the forward and backward passes of its
// micro-batches: Megatron-LM's 1F1B (one model chunk per rank) and its interleaved variant
// (vp chunks per rank, virtual stage c·pp + r on rank r). tg-train-step builds each stage's
// step program in these orders, and `simulatePipeline` computes the bubble of a schedule from op
// costs and the data dependencies between stages, to compare against the textbook fractions.
// The compiler's: the plan carries the order, so the runtime needs no schedule.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_PIPELINESCHEDULE_H
#define MLPERFC_COMPILER_ANALYSIS_PIPELINESCHEDULE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf {

struct PipelineOp {
  bool forward = true;
  int64_t microBatch = 0;
  int64_t chunk = 0; // model chunk on this rank (virtual stage chunk · pp + rank)
};

/// Per pipeline rank, its passes in order. vp = 1: 1F1B (rank r warms up with
/// min(pp − r − 1, m) forwards); vp > 1: interleaved (m must be a multiple of pp).
rt::Status pipelineSchedule(int64_t pp, int64_t vp, int64_t microBatches,
                            std::vector<std::vector<PipelineOp>> &schedule);

/// The most micro-batches of model chunk `chunk` whose forward has run and whose backward has
/// not, at any point of one rank's schedule: how many copies of what the backward reads the
/// rank keeps across the pipeline window.
int64_t maxInFlight(const std::vector<PipelineOp> &rankSchedule, int64_t chunk);

struct PipelineTiming {
  double makespan = 0;       // time of one step's passes
  double busy = 0;           // per rank: the work it does (the same on every rank)
  double bubbleFraction = 0; // 1 − busy / makespan
};

/// Runs the schedule against its dependencies (a forward needs the previous virtual stage's
/// forward of the micro-batch, a backward the next virtual stage's backward and its own
/// forward), each pass taking `forwardCost` / `backwardCost` per chunk; fails on a schedule
/// that deadlocks.
rt::Status simulatePipeline(const std::vector<std::vector<PipelineOp>> &schedule, int64_t pp,
                            int64_t vp, double forwardCost, double backwardCost,
                            PipelineTiming &timing);

/// The textbook bubble fraction (p − 1) / (v·m + p − 1) (Narayanan et al. 2021: the bubble
/// is (p − 1)/v of m passes' time).
double textbookBubbleFraction(int64_t pp, int64_t vp, int64_t microBatches);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_PIPELINESCHEDULE_H
