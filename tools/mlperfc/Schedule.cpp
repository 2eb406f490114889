//===- Schedule.cpp - mlperfc schedule -------------------------*- C++ -*-===//
//
// The static pipeline schedule each stage's step is built in (runtime/dist/PipelineSchedule.h,
// tg-train-step) for a
// number of stages, virtual stages and micro-batches: each rank's order of passes and the
// bubble fraction it leaves, against the textbook formula.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Analysis/PipelineSchedule.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand scheduleCommand("schedule",
                               "Show a pipeline schedule (1F1B or interleaved) and its bubble");

static cl::opt<int64_t> schedulePP("pp", cl::sub(scheduleCommand), cl::Required,
                                   cl::desc("Pipeline stages (ranks)"), cl::cat(mlperfcCategory()));
static cl::opt<int64_t> scheduleVP("vp", cl::sub(scheduleCommand), cl::init(1),
                                   cl::desc("Model chunks per rank (1: 1F1B, more: interleaved)"),
                                   cl::cat(mlperfcCategory()));
static cl::opt<int64_t>
    scheduleMicroBatches("micro-batches", cl::sub(scheduleCommand), cl::Required,
                         cl::desc("Micro-batches per step on one data-parallel rank"),
                         cl::cat(mlperfcCategory()));
static cl::opt<double> scheduleBackwardCost(
    "backward-cost", cl::sub(scheduleCommand), cl::init(2.0),
    cl::desc("A backward pass's time in forward passes (2; 3 with full recomputation)"),
    cl::cat(mlperfcCategory()));
static cl::opt<bool> scheduleOrder("order", cl::sub(scheduleCommand),
                                   cl::desc("Print every rank's order of passes"),
                                   cl::cat(mlperfcCategory()));

int runSchedule() {
  std::vector<std::vector<PipelineOp>> schedule;
  rt::Status status = pipelineSchedule(schedulePP, scheduleVP, scheduleMicroBatches, schedule);
  PipelineTiming timing;
  if (status.isOk() && scheduleBackwardCost <= 0) {
    status = rt::Status(rt::StatusCode::kInvalidArgument, "--backward-cost must be positive");
  }
  if (status.isOk()) {
    status = simulatePipeline(schedule, schedulePP, scheduleVP, 1.0 / scheduleVP,
                              scheduleBackwardCost / scheduleVP, timing);
  }
  if (!status.isOk()) {
    llvm::WithColor::error(llvm::errs(), "mlperfc schedule") << status.message() << "\n";
    return 1;
  }
  llvm::outs() << (scheduleVP == 1 ? "1F1B" : "interleaved 1F1B") << ": pp=" << schedulePP
               << " vp=" << scheduleVP << ", " << scheduleMicroBatches << " micro-batches\n";
  llvm::outs() << llvm::format(
      "  step %.1f forward-pass times, each rank busy %.1f: bubble %.4f of the step "
      "(textbook (p-1)/(v*m+p-1) = %.4f)\n",
      timing.makespan, timing.busy, timing.bubbleFraction,
      textbookBubbleFraction(schedulePP, scheduleVP, scheduleMicroBatches));
  if (scheduleOrder) {
    for (size_t rank = 0; rank < schedule.size(); ++rank) {
      llvm::outs() << "  rank " << rank << ":";
      for (const PipelineOp &op : schedule[rank]) {
        llvm::outs() << " " << (op.forward ? "F" : "B") << op.microBatch;
        if (scheduleVP > 1) {
          llvm::outs() << "." << op.chunk;
        }
      }
      llvm::outs() << "\n";
    }
  }
  return 0;
}

} // namespace mlperf::cli
