//===- PlanLoader.h - Read and validate execution plans --------*- C++ -*-===//
//
// A plan file is untrusted input: `loadPlan` rejects, with a message naming the problem, any
// plan whose version differs from this runtime's, whose buffers do not fit their arenas or
// their own shapes, or whose commands name unknown ops, wrong arities or missing buffers.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_PLAN_PLANLOADER_H
#define MLPERFC_RUNTIME_PLAN_PLANLOADER_H

#include "runtime/dist/Mesh.h"
#include "runtime/plan.pb.h"
#include "runtime/plan/PlanOps.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// Bytes per element of a plan dtype (0 for DTYPE_UNSPECIFIED).
int64_t planDTypeBytes(plan::DType dtype);

/// The attribute `name` of `command`, or null.
const plan::Attribute *findAttribute(const plan::Command &command, std::string_view name);

/// The bytes of `command`'s distinct operand and result buffers: what a memory-bound kernel
/// moves (the step-time model and the backend calibration measure commands by it).
uint64_t commandBytes(const plan::Plan &plan, const plan::Command &command);

/// The mesh a plan was compiled for; a plan without one is a single rank (1x1).
MeshShape planMesh(const plan::Plan &plan);

Status validatePlan(const plan::Plan &plan);

/// The file of pipeline stage `stage` for a plan written to `path` (mlperfc compile -o
/// plan.pb with pp > 1 writes plan.stage0.pb, plan.stage1.pb, ...).
std::string stagePlanPath(const std::string &path, int64_t stage);

/// The parameters among the plan's train state (state tensors with role "param").
int64_t parameterCount(const plan::Plan &plan);

/// The shape of the (tensor-parallel local) tensor `state` stands for: its buffer's shape, or
/// for a ZeRO-3 parameter shard the shape it is a shard of (`unsharded_shape`).
std::vector<int64_t> stateLocalShape(const plan::Plan &plan, const plan::StateTensor &state);

/// What the plan computes, as "crc32:xxxxxxxx": the CRC-32 of its deterministic serialization
/// without the producer, the compile options and the commands' origins (a newer compiler, or other
/// options, that write the same plan give the same value). Checkpoints record it so that a resume
/// continues with the plan that trained them.
std::string planFingerprint(const plan::Plan &plan);

/// The first difference between two plans in what their fingerprints cover, as a field path
/// and both values ("modified: model.seq_len: 64 -> 32", and how many more), or "" when equal.
std::string planDifference(const plan::Plan &expected, const plan::Plan &found);

/// The bytes of a plan file: `plan` serialized (its file_crc32 cleared) and signed with the
/// CRC-32 of those bytes as the last field, which loadPlan verifies.
std::string signPlan(const plan::Plan &plan);

/// Reads `path`, checks its CRC-32 (signPlan), parses and validates it.
Status loadPlan(const std::string &path, plan::Plan &plan);

/// loadPlan on the bytes of a plan file (errors name it `path`).
Status parsePlan(const std::string &bytes, const std::string &path, plan::Plan &plan);

/// The pipeline stages' plans of one compile (validated; `stages[k]` runs stage k) agree on
/// their transfers: in every step program, the messages stage a sends to stage b with one tag
/// are, in order and size, those stage b receives from stage a with that tag. A schedule
/// whose send has no matching receive would hang or mix up activations at run time.
Status checkStageTransfers(const std::vector<plan::Plan> &stages);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_PLAN_PLANLOADER_H
