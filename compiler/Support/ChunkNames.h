//===- ChunkNames.h - Names of a pipeline rank's chunk functions -*- C++ -*-===//
//
// A rank of an interleaved pipeline holds several model chunks; dist-pipeline names chunk c's
// forward `@forward` (c = 0) or `@"forward.chunk<c>"`, and every function derived from it
// carries the same suffix (`@"forward_backward.chunk1"`, `@"backward_from_stash.chunk1"`).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_SUPPORT_CHUNKNAMES_H
#define MLPERFC_COMPILER_SUPPORT_CHUNKNAMES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlperf {

/// "" for chunk 0, ".chunk<c>" otherwise.
inline std::string chunkSuffix(int64_t chunk) {
  return chunk == 0 ? std::string() : ".chunk" + std::to_string(chunk);
}

/// The chunk of a function named `<base>` (0) or `<base>.chunk<c>` (c > 0); -1 for any other
/// name.
inline int64_t chunkOfName(llvm::StringRef name, llvm::StringRef base) {
  if (!name.consume_front(base)) {
    return -1;
  }
  int64_t chunk = 0;
  if (name.empty()) {
    return 0;
  }
  return name.consume_front(".chunk") && !name.getAsInteger(10, chunk) && chunk > 0 ? chunk : -1;
}

} // namespace mlperf

#endif // MLPERFC_COMPILER_SUPPORT_CHUNKNAMES_H
