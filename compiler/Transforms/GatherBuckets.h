//===- GatherBuckets.h - Several dp all-gathers as one ----------*- C++ -*-===//
//
// ZeRO-1 gathers each updated parameter shard after the optimizer, ZeRO-3 each parameter
// before its reads; one collective per parameter pays the collective's latency hundreds of
// times a step. packGathers replaces a group of them by one gather of the shards'
// concatenation, viewed as [dp, columns] (row r is rank r's concatenation) and split along
// dim 1 into [dp, n/dp] pieces, each of which, flattened, is one gathered tensor: data
// movement only, so exact.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_TRANSFORMS_GATHERBUCKETS_H
#define MLPERFC_COMPILER_TRANSFORMS_GATHERBUCKETS_H

#include "dialects/Dist/IR/DistOps.h"

#include "llvm/ADT/SmallVector.h"

#include <utility>

namespace mlperf {

/// One all-gather over a mesh axis: its start and the done that waits for it.
using Gather = std::pair<dist::AllGatherStartOp, dist::DoneOp>;

/// Whether `start` gathers a 1-D f32 or bf16 shard along dim 0 over the single axis `axis`
/// and is waited for by one dist.done with a result (what packGathers can pack); the done.
dist::DoneOp packableGather(dist::AllGatherStartOp start, llvm::StringRef axis);

/// Replaces `gathers` (packable, one element type, in one block in program order, the same
/// mesh axis of `members` ranks) by one gather, built where every shard is available: before
/// the first start when all shards are computed before it, else after the last start, moving
/// after it the ops in between that read a gathered tensor. Returns false, changing nothing,
/// when a shard depends on a tensor of the group.
bool packGathers(llvm::SmallVectorImpl<Gather> &gathers, int64_t members);

} // namespace mlperf

#endif // MLPERFC_COMPILER_TRANSFORMS_GATHERBUCKETS_H
