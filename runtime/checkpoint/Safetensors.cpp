//===- Safetensors.cpp - safetensors files ---------------------*- C++ -*-===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/checkpoint/Json.h"
#include "runtime/support/Checksum.h"
#include "runtime/support/FileInput.h"
#include "runtime/support/FileOutput.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <utility>
#include <vector>

namespace mlperf::rt {
namespace {

using checkpoint_json::Json;
using checkpoint_json::JsonParser;

// Headers are small (names and shapes); a huge one means a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

/// CRC-32 (zlib) of the metadata (every entry but this one, by key) and of every tensor's name
/// and bytes (by name): what a reader recomputes to detect any edit or corruption.
constexpr const char *kChecksumKey = "checksum";

void addMetadata(Checksum &sum, const std::map<std::string, std::string> &metadata) {
  for (const auto &[key, value] : metadata) {
    if (key != kChecksumKey) {
      sum.add(key);
      sum.add(value);
    }
  }
}

Status dataLoss(const std::string &path, const std::string &what) {
  return Status(StatusCode::kDataLoss, path + ": not a valid safetensors file: " + what);
}

void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

uint64_t readLittleEndian(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) {
    value = (value << 8) | bytes[i];
  }
  return value;
}

} // namespace

Status writeSafetensors(const std::string &path, const TensorFile &file) {
  std::string data;
  // The tensors' bytes first: the checksum in the metadata covers them.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  Checksum sum;
  addMetadata(sum, file.metadata);
  for (const auto &[name, tensor] : file.tensors) {
    uint64_t begin = data.size();
    int64_t bytes = dtypeBytes(tensor.dtype);
    size_t held = isFloat(tensor.dtype) ? tensor.values.size() : tensor.ints.size();
    if (held != static_cast<size_t>(tensor.numElements()) || tensor.external) {
      return Status(StatusCode::kInternal, "cannot write " + path + ": tensor '" + name + "' (" +
                                               tensor.describe() + ") holds " +
                                               std::to_string(held) + " values");
    }
    for (int64_t i = 0; i < tensor.numElements(); ++i) {
      uint64_t bits = isFloat(tensor.dtype) ? encodeBits(tensor.dtype, tensor.values[i])
                                            : static_cast<uint64_t>(tensor.ints[i]);
      appendLittleEndian(data, bits, static_cast<int>(bytes));
    }
    ranges.emplace_back(begin, data.size());
    sum.add(name);
    sum.add(data.data() + begin, data.size() - begin);
  }
  std::map<std::string, std::string> metadata = file.metadata;
  metadata[kChecksumKey] = sum.hex();
  // The metadata always comes first (it holds at least the checksum), each tensor after it.
  std::string header = "{\"__metadata__\":{";
  bool firstEntry = true;
  for (const auto &[key, value] : metadata) {
    header += (firstEntry ? "" : ",") + jsonQuote(key) + ":" + jsonQuote(value);
    firstEntry = false;
  }
  header += "}";
  size_t index = 0;
  for (const auto &[name, tensor] : file.tensors) {
    auto [begin, end] = ranges[index++];
    header += "," + jsonQuote(name) + ":{\"dtype\":\"" + dtypeInfo(tensor.dtype).safetensorsName +
              "\",\"shape\":[";
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      header += (d ? "," : "") + std::to_string(tensor.shape[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' '); // align the data to 8 bytes

  std::string prefix;
  appendLittleEndian(prefix, header.size(), 8);
  return writeFileAtomically(path, {prefix, header, data});
}

Status readSafetensors(const std::string &path, TensorFile &file) {
  file = TensorFile();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(StatusCode::kNotFound, "cannot open " + path + ": " + std::strerror(errno));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parseSafetensors(bytes, path, file);
}

namespace {

/// The header of a file whose data section has `dataSize` bytes: every entry and the metadata,
/// validated (dtypes, shapes, offsets inside the data, no overlaps, the data covered exactly).
Status parseHeader(const std::string &header, uint64_t dataSize, const std::string &path,
                   std::map<std::string, SafetensorsEntry> &entries,
                   std::map<std::string, std::string> &metadata) {
  entries.clear();
  metadata.clear();
  Json root;
  JsonParser parser(header);
  if (!parser.parse(root)) {
    return dataLoss(path, "header is not JSON: " + parser.error());
  }
  if (root.kind != Json::Kind::kObject) {
    return dataLoss(path, "header is not a JSON object");
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto &[name, entry] : root.members) {
    if (name == "__metadata__") {
      for (const auto &[key, value] : entry.members) {
        if (value.kind != Json::Kind::kString) {
          return dataLoss(path, "metadata value of '" + key + "' is not a string");
        }
        metadata[key] = value.text;
      }
      continue;
    }
    const Json *dtype = entry.find("dtype");
    const Json *shape = entry.find("shape");
    const Json *offsets = entry.find("data_offsets");
    if (entry.kind != Json::Kind::kObject || !dtype || !shape || !offsets ||
        dtype->kind != Json::Kind::kString || shape->kind != Json::Kind::kArray ||
        offsets->kind != Json::Kind::kArray || offsets->elements.size() != 2) {
      return dataLoss(path, "tensor '" + name + "' lacks dtype, shape or data_offsets");
    }
    SafetensorsEntry tensor;
    const DTypeInfo *known = dtypeWithSafetensorsName(dtype->text);
    if (known) {
      tensor.dtype = known->type;
    } else {
      return dataLoss(path, "tensor '" + name + "' has unsupported dtype " + dtype->text);
    }
    for (const Json &dim : shape->elements) {
      if (dim.kind != Json::Kind::kInteger || dim.integer < 0 || dim.integer > (int64_t{1} << 40)) {
        return dataLoss(path, "tensor '" + name + "' has an invalid shape");
      }
      tensor.shape.push_back(dim.integer);
    }
    if (offsets->elements[0].kind != Json::Kind::kInteger ||
        offsets->elements[1].kind != Json::Kind::kInteger) {
      return dataLoss(path, "tensor '" + name + "' has non-integer data_offsets");
    }
    // Element and byte counts must not overflow: a forged shape could otherwise wrap to a
    // small size that passes the range check.
    uint64_t elements = 1, expected = 0;
    for (int64_t dim : tensor.shape) {
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements)) {
        return dataLoss(path, "tensor '" + name + "' has a shape whose size overflows");
      }
    }
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtypeBytes(tensor.dtype)),
                               &expected) ||
        elements > static_cast<uint64_t>(INT64_MAX)) {
      return dataLoss(path, "tensor '" + name + "' has a shape whose size overflows");
    }
    int64_t begin = offsets->elements[0].integer, end = offsets->elements[1].integer;
    if (begin < 0 || end < begin || static_cast<uint64_t>(end) > dataSize ||
        static_cast<uint64_t>(end - begin) != expected) {
      HostTensor shown;
      shown.dtype = tensor.dtype;
      shown.shape = tensor.shape;
      return dataLoss(path, "tensor '" + name + "' has data_offsets [" + std::to_string(begin) +
                                ", " + std::to_string(end) + ") that do not hold " +
                                shown.describe() + " inside the " + std::to_string(dataSize) +
                                "-byte data section");
    }
    tensor.begin = static_cast<uint64_t>(begin);
    tensor.end = static_cast<uint64_t>(end);
    ranges.emplace_back(begin, end);
    if (!entries.emplace(name, std::move(tensor)).second) {
      return dataLoss(path, "tensor '" + name + "' appears twice");
    }
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto &[begin, end] : ranges) {
    if (begin < covered) {
      return dataLoss(path, "tensor data ranges overlap");
    }
    if (begin > covered) {
      return dataLoss(path, "data bytes [" + std::to_string(covered) + ", " +
                                std::to_string(begin) + ") belong to no tensor");
    }
    covered = end;
  }
  if (covered != dataSize) {
    return dataLoss(path, std::to_string(dataSize - covered) +
                              " bytes after the last tensor's data belong to no tensor");
  }
  return Status::ok();
}

/// The tensor `entry` describes, from its bytes (little-endian, as the file stores them).
HostTensor decodeTensor(const SafetensorsEntry &entry, const unsigned char *cursor) {
  HostTensor tensor;
  tensor.dtype = entry.dtype;
  tensor.shape = entry.shape;
  int bytesPerElement = static_cast<int>(dtypeBytes(tensor.dtype));
  if (isFloat(tensor.dtype)) {
    tensor.values.resize(tensor.numElements());
    for (float &value : tensor.values) {
      value = static_cast<float>(decodeBits(
          tensor.dtype, static_cast<uint32_t>(readLittleEndian(cursor, bytesPerElement))));
      cursor += bytesPerElement;
    }
  } else {
    tensor.ints.resize(tensor.numElements());
    for (int64_t &value : tensor.ints) {
      uint64_t raw = readLittleEndian(cursor, bytesPerElement);
      value = bytesPerElement == 4 ? static_cast<int32_t>(raw) : static_cast<int64_t>(raw);
      cursor += bytesPerElement;
    }
  }
  return tensor;
}

} // namespace

Status parseSafetensors(const std::string &bytes, const std::string &path, TensorFile &file) {
  file = TensorFile();
  if (bytes.size() < 8) {
    return dataLoss(path, "shorter than the 8-byte header length");
  }
  uint64_t headerSize = readLittleEndian(reinterpret_cast<const unsigned char *>(bytes.data()), 8);
  if (headerSize > kMaxHeaderBytes || headerSize > bytes.size() - 8) {
    return dataLoss(path, "header length " + std::to_string(headerSize) + " exceeds the file (" +
                              std::to_string(bytes.size()) + " bytes): truncated or corrupt");
  }
  const unsigned char *data =
      reinterpret_cast<const unsigned char *>(bytes.data()) + 8 + headerSize;
  std::map<std::string, SafetensorsEntry> entries;
  MLPERF_RETURN_IF_ERROR(parseHeader(bytes.substr(8, headerSize), bytes.size() - 8 - headerSize,
                                     path, entries, file.metadata));
  for (const auto &[name, entry] : entries) {
    file.tensors.emplace(name, decodeTensor(entry, data + entry.begin));
  }
  if (auto claimed = file.metadata.find(kChecksumKey); claimed != file.metadata.end()) {
    Checksum sum;
    addMetadata(sum, file.metadata);
    for (const auto &[name, entry] : entries) { // by name, as the writer adds them
      sum.add(name);
      sum.add(data + entry.begin, entry.end - entry.begin);
    }
    if (sum.hex() != claimed->second) {
      return dataLoss(path, "its checksum (" + claimed->second +
                                ") does not match its "
                                "metadata and data (" +
                                sum.hex() + "): edited or corrupted");
    }
  }
  return Status::ok();
}

SafetensorsReader::~SafetensorsReader() {
  if (fd >= 0) {
    ::close(fd);
  }
}

SafetensorsReader::SafetensorsReader(SafetensorsReader &&other) noexcept
    : path(std::move(other.path)), fd(other.fd), dataStart(other.dataStart),
      tensors(std::move(other.tensors)), meta(std::move(other.meta)) {
  other.fd = -1;
}

SafetensorsReader &SafetensorsReader::operator=(SafetensorsReader &&other) noexcept {
  if (this != &other) {
    if (fd >= 0) {
      ::close(fd);
    }
    path = std::move(other.path);
    fd = other.fd;
    dataStart = other.dataStart;
    tensors = std::move(other.tensors);
    meta = std::move(other.meta);
    other.fd = -1;
  }
  return *this;
}

Status SafetensorsReader::open(const std::string &path, SafetensorsReader &reader) {
  reader = SafetensorsReader();
  reader.path = path;
  reader.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader.fd < 0) {
    return Status(StatusCode::kNotFound, "cannot open " + path + ": " + std::strerror(errno));
  }
  off_t size = ::lseek(reader.fd, 0, SEEK_END);
  unsigned char length[8];
  if (size < 8 || !readAt(reader.fd, length, 8, 0)) {
    return dataLoss(path, "shorter than the 8-byte header length");
  }
  uint64_t headerSize = readLittleEndian(length, 8);
  if (headerSize > kMaxHeaderBytes || headerSize > static_cast<uint64_t>(size) - 8) {
    return dataLoss(path, "header length " + std::to_string(headerSize) + " exceeds the file (" +
                              std::to_string(size) + " bytes): truncated or corrupt");
  }
  std::string header(headerSize, '\0');
  if (!readAt(reader.fd, header.data(), headerSize, 8)) {
    return dataLoss(path, "the header cannot be read");
  }
  reader.dataStart = 8 + headerSize;
  return parseHeader(header, static_cast<uint64_t>(size) - reader.dataStart, path, reader.tensors,
                     reader.meta);
}

Status SafetensorsReader::read(const std::string &name, HostTensor &out) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    return Status(StatusCode::kNotFound, path + ": no tensor '" + name + "'");
  }
  std::vector<unsigned char> bytes(it->second.end - it->second.begin);
  if (!readAt(fd, bytes.data(), bytes.size(), dataStart + it->second.begin)) {
    return dataLoss(path, "tensor '" + name + "' cannot be read (truncated while open?)");
  }
  out = decodeTensor(it->second, bytes.data());
  return Status::ok();
}

bool hasChecksum(const TensorFile &file) { return file.metadata.count(kChecksumKey) != 0; }

int removeStaleTemporaries(const std::string &path) {
  std::string directory = ".", base = path;
  if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    directory = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
  const std::string prefix = base + ".tmp.";
  DIR *dir = ::opendir(directory.c_str());
  if (!dir) {
    return 0;
  }
  int removed = 0;
  while (const dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    // Only files of writers that are gone: a live process may be writing its own.
    if (*end != '\0' || pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) {
      continue;
    }
    if (std::remove((directory + "/" + name).c_str()) == 0) {
      ++removed;
    }
  }
  ::closedir(dir);
  return removed;
}

} // namespace mlperf::rt
