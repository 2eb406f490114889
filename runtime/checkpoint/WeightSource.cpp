//===- WeightSource.cpp - Named tensors a run starts from ------*- C++ -*-===//

#include "runtime/checkpoint/WeightSource.h"

#include "runtime/checkpoint/Json.h"
#include "runtime/support/FileInput.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace mlperf::rt {
namespace {

using checkpoint_json::Json;
using checkpoint_json::JsonParser;

constexpr const char *kIndexName = "model.safetensors.index.json";
constexpr const char *kSingleName = "model.safetensors";

bool isDirectory(const std::string &path) {
  struct stat info{};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Status badIndex(const std::string &path, const std::string &what) {
  return Status(StatusCode::kDataLoss, path + ": not a valid safetensors index: " + what);
}

} // namespace

bool TensorFileSource::contains(const std::string &name) const {
  return file.tensors.count(name) != 0;
}

Status TensorFileSource::read(const std::string &name, HostTensor &out) const {
  auto it = file.tensors.find(name);
  if (it == file.tensors.end()) {
    return Status(StatusCode::kNotFound, "no tensor '" + name + "'");
  }
  out = it->second;
  return Status::ok();
}

std::vector<std::string> TensorFileSource::names() const {
  std::vector<std::string> out;
  for (const auto &entry : file.tensors) {
    out.push_back(entry.first);
  }
  return out;
}

Status CheckpointReader::open(const std::string &path, CheckpointReader &reader) {
  reader = CheckpointReader();
  reader.path = path;
  std::string file = path;
  if (isDirectory(path)) {
    if (isRegularFile(path + "/" + kIndexName)) {
      file = path + "/" + kIndexName;
    } else if (isRegularFile(path + "/" + kSingleName)) {
      file = path + "/" + kSingleName;
    } else {
      return Status(StatusCode::kNotFound, path + ": a directory without " +
                                               std::string(kIndexName) + " or " + kSingleName);
    }
  }
  reader.resolved = file;
  if (!endsWith(file, ".json")) {
    auto single = std::make_unique<SafetensorsReader>();
    MLPERF_RETURN_IF_ERROR(SafetensorsReader::open(file, *single));
    for (const auto &entry : single->entries()) {
      reader.fileOf[entry.first] = 0;
    }
    reader.meta = single->metadata();
    reader.files.push_back(std::move(single));
    return Status::ok();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Status(StatusCode::kNotFound, "cannot open " + file + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string contents = text.str(); // the parser refers to it
  Json root;
  JsonParser parser(contents);
  if (!parser.parse(root)) {
    return badIndex(file, "not JSON: " + parser.error());
  }
  const Json *weightMap = root.kind == Json::Kind::kObject ? root.find("weight_map") : nullptr;
  if (!weightMap || weightMap->kind != Json::Kind::kObject) {
    return badIndex(file, "no \"weight_map\" object");
  }
  if (const Json *metadata = root.find("metadata")) {
    for (const auto &[key, value] : metadata->members) {
      if (value.kind == Json::Kind::kString) {
        reader.meta[key] = value.text;
      }
    }
  }
  // Shards in the order the index first names them; each opened once.
  std::map<std::string, size_t> shardIndex;
  std::vector<std::string> shardNames;
  std::string directory = directoryOf(file);
  for (const auto &[tensor, shard] : weightMap->members) {
    if (shard.kind != Json::Kind::kString || shard.text.empty()) {
      return badIndex(file, "the file of '" + tensor + "' is not a file name");
    }
    if (shard.text.front() == '/' || shard.text.find("..") != std::string::npos) {
      return badIndex(file, "shard '" + shard.text + "' is outside the index's directory");
    }
    auto [it, added] = shardIndex.emplace(shard.text, shardNames.size());
    if (added) {
      shardNames.push_back(shard.text);
    }
    reader.fileOf[tensor] = it->second;
  }
  for (const std::string &shard : shardNames) {
    auto shardReader = std::make_unique<SafetensorsReader>();
    MLPERF_RETURN_IF_ERROR(SafetensorsReader::open(directory + "/" + shard, *shardReader));
    size_t index = reader.files.size();
    for (const auto &entry : shardReader->entries()) {
      auto listed = reader.fileOf.find(entry.first);
      if (listed == reader.fileOf.end()) {
        return badIndex(file,
                        "tensor '" + entry.first + "' of " + shard + " is not in the weight_map");
      }
      if (listed->second != index) {
        return badIndex(file, "tensor '" + entry.first + "' is in " + shard +
                                  " but the weight_map places it in " + shardNames[listed->second]);
      }
    }
    reader.files.push_back(std::move(shardReader));
  }
  for (const auto &[tensor, index] : reader.fileOf) {
    if (!reader.files[index]->entries().count(tensor)) {
      return badIndex(file, "tensor '" + tensor + "' is not in " + shardNames[index] +
                                ", where the weight_map places it");
    }
  }
  return Status::ok();
}

Status CheckpointReader::read(const std::string &name, HostTensor &out) const {
  auto it = fileOf.find(name);
  if (it == fileOf.end()) {
    return Status(StatusCode::kNotFound, path + ": no tensor '" + name + "'");
  }
  return files[it->second]->read(name, out);
}

std::vector<std::string> CheckpointReader::names() const {
  std::vector<std::string> out;
  for (const auto &entry : fileOf) {
    out.push_back(entry.first);
  }
  return out;
}

std::string CheckpointReader::describe() const {
  return path + " (" + std::to_string(fileOf.size()) + " tensors in " +
         std::to_string(files.size()) + (files.size() == 1 ? " file)" : " files)");
}

} // namespace mlperf::rt
