//===- VocabParallel.h - Cross-entropy over a vocabulary split over ranks -*- C++ -*-===//
//
// Megatron-LM's vocab-parallel cross-entropy: each rank holds a slice of the logits (or of
// the output layer's rows) and the loss combines the row maxima, sums of exponentials and
// label logits over the mesh axis. One definition for the CPU backend and the reference
// interpreter, which run the same per-rank programs.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_VOCABPARALLEL_H
#define MLPERFC_RUNTIME_CPU_VOCABPARALLEL_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/dist/Communicator.h"

#include <string>
#include <vector>

namespace mlperf::rt {

/// Whether `op` with a `vocab_shard_axis` attribute is one of the losses below.
bool isVocabParallelLoss(const std::string &op);

/// cross_entropy(_grad) or linear_cross_entropy(_grad) on this rank's slice of a vocabulary
/// split over `axis`; `attributes` are the op's (linear_cross_entropy needs `logits_type`).
/// Results are rounded to their dtypes.
Status runVocabParallelLoss(Communicator &communicator, MeshAxis axis, const std::string &op,
                            const OpAttributes &attributes,
                            const std::vector<const HostTensor *> &operands,
                            std::vector<HostTensor> &results);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CPU_VOCABPARALLEL_H
