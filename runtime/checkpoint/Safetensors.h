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
#include <vector>

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

/// Where one tensor's bytes are in a file's data section.
struct SafetensorsEntry {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// A safetensors file opened to read tensors one at a time (with pread), for weights too
/// large to hold whole (a 70B checkpoint's shards). `open` reads and validates the header as
/// readSafetensors does; the checksum, which covers the whole file, is not verified (use
/// readSafetensors for mlperfc's own train-state files).
class SafetensorsReader {
public:
  SafetensorsReader() = default;
  SafetensorsReader(SafetensorsReader &&other) noexcept;
  SafetensorsReader &operator=(SafetensorsReader &&other) noexcept;
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;
  ~SafetensorsReader();

  static Status open(const std::string &path, SafetensorsReader &reader);
  const std::map<std::string, SafetensorsEntry> &entries() const { return tensors; }
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// The tensor `name` (NOT_FOUND when the file has none; DATA_LOSS if its bytes cannot be
  /// read).
  Status read(const std::string &name, HostTensor &out) const;

private:
  std::string path;
  int fd = -1;
  uint64_t dataStart = 0;
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> meta;
};

/// Whether `file` (as read) carried a checksum: every file mlperfc writes does.
bool hasChecksum(const TensorFile &file);

/// Removes "<path>.tmp.<pid>" files whose writer process no longer exists (a save killed
/// mid-write); returns how many.
int removeStaleTemporaries(const std::string &path);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CHECKPOINT_SAFETENSORS_H
