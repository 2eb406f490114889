//===- IndexedDataset.h - Megatron/NeMo indexed datasets -------*- C++ -*-===//
//
// The MMIDIDX format the MLPerf LLM references read: `<prefix>.bin` holds the tokens of all
// documents back to back; `<prefix>.idx` holds
//   magic "MMIDIDX\0\0", version (u64 = 1), dtype code (u8), sequence count S (u64),
//   document-index count D (u64), sequence lengths (i32 x S), sequence byte offsets into .bin
//   (i64 x S), document index (i64 x D: document j spans sequences [doc[j], doc[j+1])).
// Little-endian. Tokens are read on demand (pread), never the whole file: a rank reads only
// its share.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DATA_INDEXEDDATASET_H
#define MLPERFC_RUNTIME_DATA_INDEXEDDATASET_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::rt {

/// Megatron's dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32,
/// 8 uint16. Token files use the integer ones.
enum class TokenType : uint8_t {
  kUInt8 = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUInt16 = 8
};

class IndexedDataset {
public:
  IndexedDataset() = default;
  IndexedDataset(IndexedDataset &&other) noexcept;
  IndexedDataset &operator=(IndexedDataset &&other) noexcept;
  IndexedDataset(const IndexedDataset &) = delete;
  IndexedDataset &operator=(const IndexedDataset &) = delete;
  ~IndexedDataset();

  /// Opens and validates `<prefix>.idx` and `<prefix>.bin`: magic, version, dtype, every
  /// count and offset against the file sizes. A malformed file is DATA_LOSS naming the problem.
  static Status open(const std::string &prefix, IndexedDataset &dataset);

  int64_t numDocuments() const;
  /// Tokens in document `document` (the sum of its sequences); 0 outside [0, numDocuments).
  int64_t documentLength(int64_t document) const;
  int64_t numTokens() const { return totalTokens; }
  TokenType tokenType() const { return type; }

  /// Appends `count` tokens of `document` starting at `offset` to `out`.
  Status readDocument(int64_t document, int64_t offset, int64_t count,
                      std::vector<int64_t> &out) const;

private:
  std::string prefix;
  int binFd = -1;
  TokenType type = TokenType::kUInt8;
  int64_t tokenBytes = 1;
  std::vector<int32_t> sequenceLengths;
  std::vector<int64_t> sequenceOffsets;
  std::vector<int64_t> documentIndex;
  int64_t totalTokens = 0;
};

/// Writes documents as `<prefix>.bin` and `<prefix>.idx` (one sequence per document). Each file
/// is written to a temporary name and renamed, so neither is ever half-written; the pair is not
/// replaced atomically (write a new dataset under a fresh prefix). Fails if a token does not
/// fit `type`.
Status writeIndexedDataset(const std::string &prefix,
                           const std::vector<std::vector<int64_t>> &documents, TokenType type);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DATA_INDEXEDDATASET_H
