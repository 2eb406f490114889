//===- WeightSource.h - Named tensors a run starts from --------*- C++ -*-===//
//
// What `mlperf-run --init-from` and `--resume` read parameters from, one tensor at a time:
//  - a TensorFile already in memory (mlperfc's own checksummed train-state files);
//  - a CheckpointReader over a single safetensors file or a Hugging Face sharded checkpoint:
//    `model.safetensors.index.json` ({"metadata": {...}, "weight_map": {tensor: file}}) and
//    its `model-0000k-of-0000n.safetensors` files, given as the index, as the directory
//    holding it, or as the directory holding one `model.safetensors`. Only the headers are
//    read when it opens; each tensor's bytes when it is asked for, so a 70B checkpoint is
//    never in memory whole.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CHECKPOINT_WEIGHTSOURCE_H
#define MLPERFC_RUNTIME_CHECKPOINT_WEIGHTSOURCE_H

#include "runtime/checkpoint/Safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlperf::rt {

class WeightSource {
public:
  virtual ~WeightSource() = default;
  virtual bool contains(const std::string &name) const = 0;
  /// The tensor `name` (NOT_FOUND when the source has none).
  virtual Status read(const std::string &name, HostTensor &out) const = 0;
  /// Every tensor name, sorted.
  virtual std::vector<std::string> names() const = 0;
  virtual const std::map<std::string, std::string> &metadata() const = 0;
};

/// A TensorFile as a source (it must outlive this).
class TensorFileSource : public WeightSource {
public:
  explicit TensorFileSource(const TensorFile &file) : file(file) {}
  bool contains(const std::string &name) const override;
  Status read(const std::string &name, HostTensor &out) const override;
  std::vector<std::string> names() const override;
  const std::map<std::string, std::string> &metadata() const override { return file.metadata; }

private:
  const TensorFile &file;
};

class CheckpointReader : public WeightSource {
public:
  /// Opens `path` (a .safetensors file, an index .json, or a directory holding
  /// model.safetensors.index.json or model.safetensors). Every shard's header is read and
  /// checked against the index: a listed tensor missing from its file, a file's tensor the
  /// index does not list, a tensor in two files, a shard path that leaves the index's
  /// directory or a malformed index are errors naming the file.
  static Status open(const std::string &path, CheckpointReader &reader);

  bool contains(const std::string &name) const override { return fileOf.count(name) != 0; }
  Status read(const std::string &name, HostTensor &out) const override;
  std::vector<std::string> names() const override;
  /// The single file's metadata, or the index's string-valued "metadata" entries.
  const std::map<std::string, std::string> &metadata() const override { return meta; }
  /// "PATH (N tensors in F files)".
  std::string describe() const;
  int64_t numFiles() const { return static_cast<int64_t>(files.size()); }
  /// The file `open` resolved the path to: the safetensors file, or the index.
  const std::string &resolvedPath() const { return resolved; }

private:
  std::string path, resolved;
  std::vector<std::unique_ptr<SafetensorsReader>> files;
  std::map<std::string, size_t> fileOf;
  std::map<std::string, std::string> meta;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_CHECKPOINT_WEIGHTSOURCE_H
