//===- Safetensors.h - safetensors files -----------------------*- C++ -*-===//
//
// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
// mapping names to {dtype, shape, data_offsets} plus optional "__metadata__" strings, then the
// raw little-endian data. Parameters are stored under their Hugging Face names so weights move
// between mlperfc and other frameworks unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CHECKPOINT_SAFETENSORS_H
#define MLPERFC_RUNTIME_CHECKPOINT_SAFETENSORS_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/support/Status.h"

#include <map>
#include <string>

namespace mlperf::rt {

struct TensorFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes atomically: to "<path>.tmp.<pid>", flushed and fsync'ed, then renamed over `path`,
/// so a crash never leaves a truncated file under the final name. The metadata gets a
/// "checksum" entry (CRC-32 of the other metadata and of every tensor's name and bytes).
Status writeSafetensors(const std::string &path, const TensorFile &file);

/// Reads and validates every field (header size, strict JSON: no duplicate keys, control
/// characters, leading zeros or invalid UTF-8; dtypes, offsets inside the file, no overlaps,
/// sizes matching shapes, the data section covered exactly) and, when the file carries one,
/// its checksum. A malformed file is DATA_LOSS naming the problem. Files of other writers
/// (Hugging Face weights) have no checksum and are read as they are.
Status readSafetensors(const std::string &path, TensorFile &file);

/// readSafetensors on the bytes of a file (errors name it `path`).
Status parseSafetensors(const std::string &bytes, const std::string &path, TensorFile &file);

/// Whether `file` (as read) carried a checksum: every file mlperfc writes does.
bool hasChecksum(const TensorFile &file);

/// Removes "<path>.tmp.<pid>" files whose writer process no longer exists (a save killed
/// mid-write); returns how many.
int removeStaleTemporaries(const std::string &path);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CHECKPOINT_SAFETENSORS_H
