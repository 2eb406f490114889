//===- CompileRecord.cpp - The compile options a plan records ----*- C++ -*-===//

#include "compiler/Audit/CompileRecord.h"

#include "runtime/plan/PlanLoader.h"

namespace mlperf {

void recordCompileOptions(const TrainStepOptions &options, const std::string &device,
                          plan::Plan &plan) {
  plan::CompileOptions &record = *plan.mutable_compile_options();
  record.set_fuse_attention(options.fuseAttention);
  record.set_fuse_swiglu(options.fuseSwiglu);
  record.set_fuse_cross_entropy(options.fuseCrossEntropy);
  record.set_fuse_add_rms_norm(options.fuseAddRMSNorm);
  record.set_fuse_rope_qk(options.fuseRopeQK);
  record.set_recompute(options.recompute);
  record.clear_recompute_budgets();
  for (int64_t budget : options.recomputeBudgets) {
    record.add_recompute_budgets(budget);
  }
  record.set_device(device);
  record.set_bucket_bytes(options.bucketBytes);
  record.set_unscheduled(!options.schedule);
  record.set_schedule_memory_limit(options.scheduleMemoryLimit);
  record.set_max_outstanding(options.maxOutstanding);
  if (options.precision == "fp8") {
    record.set_fp8_recipe(options.fp8Recipe);
  } else {
    record.clear_fp8_recipe();
  }
}

rt::Status compileOptionsOf(const plan::Plan &plan, const std::string &path,
                            TrainStepOptions &options, std::string &device) {
  if (!plan.has_compile_options()) {
    return rt::Status(rt::StatusCode::kInvalidArgument,
                      path + " records no compile options (written by " + plan.producer() +
                          " before plans recorded them, or by another producer): compile it "
                          "again with mlperfc compile");
  }
  const plan::CompileOptions &record = plan.compile_options();
  options = TrainStepOptions();
  options.precision = plan.model().precision();
  options.accumulationSteps = plan.model().gradient_accumulation_steps();
  options.fuseAttention = record.fuse_attention();
  options.fuseSwiglu = record.fuse_swiglu();
  options.fuseCrossEntropy = record.fuse_cross_entropy();
  options.fuseAddRMSNorm = record.fuse_add_rms_norm();
  options.fuseRopeQK = record.fuse_rope_qk();
  options.recompute = record.recompute().empty() ? "none" : record.recompute();
  options.recomputeBudgets.assign(record.recompute_budgets().begin(),
                                  record.recompute_budgets().end());
  options.mesh = rt::planMesh(plan);
  options.mesh.microBatch = plan.model().micro_batch_size();
  device = record.device();
  options.bucketBytes = record.bucket_bytes();
  options.schedule = !record.unscheduled();
  options.scheduleMemoryLimit = record.schedule_memory_limit();
  options.maxOutstanding = record.max_outstanding() > 0 ? record.max_outstanding() : 4;
  options.fp8Recipe = record.fp8_recipe().empty() ? "delayed" : record.fp8_recipe();
  return rt::Status::ok();
}

} // namespace mlperf
