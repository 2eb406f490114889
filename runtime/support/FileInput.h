//===- FileInput.h - Reading files in place ---------------------*- C++ -*-===//
//
// The reads the dataset and checkpoint readers share: positioned reads of exactly the bytes
// asked for (datasets and weights are read where they are, never whole), and whether a path
// is a regular file.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_SUPPORT_FILEINPUT_H
#define MLPERFC_RUNTIME_SUPPORT_FILEINPUT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlperf::rt {

/// Reads `size` bytes at `offset` of `fd` (pread, retried on EINTR and short reads); false
/// when the file ends first or the read fails.
bool readAt(int fd, void *buffer, size_t size, uint64_t offset);

/// Whether `path` names a regular file (following links).
bool isRegularFile(const std::string &path);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_SUPPORT_FILEINPUT_H
