//===- Safetensors.cpp - safetensors files ---------------------*- C++ -*-===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/support/Checksum.h"
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

struct DTypeName {
  DType dtype;
  const char *name;
};
constexpr DTypeName kDTypeNames[] = {{DType::kF32, "F32"},          {DType::kBF16, "BF16"},
                                     {DType::kF8E4M3FN, "F8_E4M3"}, {DType::kF8E5M2, "F8_E5M2"},
                                     {DType::kI32, "I32"},          {DType::kI64, "I64"}};

const char *safetensorsName(DType dtype) {
  for (const DTypeName &entry : kDTypeNames) {
    if (entry.dtype == dtype) {
      return entry.name;
    }
  }
  return "?";
}

/// The JSON subset of safetensors headers: objects, arrays, strings and integers.
struct Json {
  enum class Kind { kObject, kArray, kString, kInteger } kind = Kind::kInteger;
  std::vector<std::pair<std::string, Json>> members;
  std::vector<Json> elements;
  std::string text;
  int64_t integer = 0;

  const Json *find(const std::string &key) const {
    for (const auto &[name, value] : members) {
      if (name == key) {
        return &value;
      }
    }
    return nullptr;
  }
};

class JsonParser {
public:
  explicit JsonParser(const std::string &input) : input(input) {}

  bool parse(Json &out) {
    if (!parseValue(out, 0)) {
      return false;
    }
    skipSpace();
    return pos == input.size() || fail("trailing characters");
  }
  const std::string &error() const { return message; }

private:
  bool fail(const std::string &what) {
    if (message.empty()) {
      message = what + " at header byte " + std::to_string(pos);
    }
    return false;
  }
  void skipSpace() {
    while (pos < input.size() && std::strchr(" \t\r\n", input[pos]) != nullptr) {
      ++pos;
    }
  }
  bool expect(char c) {
    skipSpace();
    if (pos < input.size() && input[pos] == c) {
      ++pos;
      return true;
    }
    return fail(std::string("expected '") + c + "'");
  }
  bool parseString(std::string &out) {
    if (!expect('"')) {
      return false;
    }
    while (pos < input.size() && input[pos] != '"') {
      char c = input[pos++];
      if (static_cast<unsigned char>(c) < 0x20) {
        return fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= input.size()) {
        return fail("unterminated escape");
      }
      char e = input[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        unsigned code = 0;
        for (int digit = 0; digit < 4; ++digit, ++pos) {
          char h = pos < input.size() ? input[pos] : '\0';
          int value = (h >= '0' && h <= '9')   ? h - '0'
                      : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                      : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                               : -1;
          if (value < 0) {
            return fail("bad \\u escape");
          }
          code = code * 16 + static_cast<unsigned>(value);
        }
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    if (!validUtf8(out)) {
      return fail("string is not UTF-8");
    }
    return expect('"');
  }
  static bool validUtf8(const std::string &text) {
    for (size_t i = 0; i < text.size();) {
      auto byte = static_cast<unsigned char>(text[i]);
      size_t length = byte < 0x80           ? 1
                      : (byte >> 5) == 0x6  ? 2
                      : (byte >> 4) == 0xE  ? 3
                      : (byte >> 3) == 0x1E ? 4
                                            : 0;
      if (length == 0 || i + length > text.size()) {
        return false;
      }
      for (size_t k = 1; k < length; ++k) {
        if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) {
          return false;
        }
      }
      i += length;
    }
    return true;
  }
  bool parseValue(Json &out, int depth) {
    if (depth > 8) {
      return fail("nesting too deep");
    }
    skipSpace();
    if (pos >= input.size()) {
      return fail("unexpected end");
    }
    char c = input[pos];
    if (c == '{') {
      out.kind = Json::Kind::kObject;
      ++pos;
      skipSpace();
      if (pos < input.size() && input[pos] == '}') {
        ++pos;
        return true;
      }
      do {
        std::string key;
        Json value;
        if (!parseString(key) || !expect(':') || !parseValue(value, depth + 1)) {
          return false;
        }
        if (out.find(key)) {
          return fail("key '" + key + "' appears twice in one object");
        }
        out.members.emplace_back(std::move(key), std::move(value));
        skipSpace();
      } while (pos < input.size() && input[pos] == ',' && ++pos);
      return expect('}');
    }
    if (c == '[') {
      out.kind = Json::Kind::kArray;
      ++pos;
      skipSpace();
      if (pos < input.size() && input[pos] == ']') {
        ++pos;
        return true;
      }
      do {
        Json value;
        if (!parseValue(value, depth + 1)) {
          return false;
        }
        out.elements.push_back(std::move(value));
        skipSpace();
      } while (pos < input.size() && input[pos] == ',' && ++pos);
      return expect(']');
    }
    if (c == '"') {
      out.kind = Json::Kind::kString;
      return parseString(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = pos++;
      while (pos < input.size() && input[pos] >= '0' && input[pos] <= '9') {
        ++pos;
      }
      size_t digits = pos - start - (c == '-' ? 1 : 0);
      if (digits == 0) {
        return fail("'-' without digits");
      }
      if (digits > 1 && input[pos - digits] == '0') {
        return fail("integer with a leading zero");
      }
      if (digits > 18) {
        return fail("integer too large");
      }
      out.kind = Json::Kind::kInteger;
      out.integer = std::stoll(input.substr(start, pos - start));
      return true;
    }
    return fail("unexpected character");
  }

  const std::string &input;
  size_t pos = 0;
  std::string message;
};

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
    header +=
        "," + jsonQuote(name) + ":{\"dtype\":\"" + safetensorsName(tensor.dtype) + "\",\"shape\":[";
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
  std::string header = bytes.substr(8, headerSize);
  const unsigned char *data =
      reinterpret_cast<const unsigned char *>(bytes.data()) + 8 + headerSize;
  uint64_t dataSize = bytes.size() - 8 - headerSize;

  Json root;
  JsonParser parser(header);
  if (!parser.parse(root)) {
    return dataLoss(path, "header is not JSON: " + parser.error());
  }
  if (root.kind != Json::Kind::kObject) {
    return dataLoss(path, "header is not a JSON object");
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::map<std::string, std::pair<uint64_t, uint64_t>> spanOf; // by name, for the checksum
  for (const auto &[name, entry] : root.members) {
    if (name == "__metadata__") {
      for (const auto &[key, value] : entry.members) {
        if (value.kind != Json::Kind::kString) {
          return dataLoss(path, "metadata value of '" + key + "' is not a string");
        }
        file.metadata[key] = value.text;
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
    HostTensor tensor;
    bool known = false;
    for (const DTypeName &candidate : kDTypeNames) {
      if (dtype->text == candidate.name) {
        tensor.dtype = candidate.dtype;
        known = true;
      }
    }
    if (!known) {
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
      return dataLoss(path, "tensor '" + name + "' has data_offsets [" + std::to_string(begin) +
                                ", " + std::to_string(end) + ") that do not hold " +
                                tensor.describe() + " inside the " + std::to_string(dataSize) +
                                "-byte data section");
    }
    ranges.emplace_back(begin, end);
    spanOf[name] = {static_cast<uint64_t>(begin), static_cast<uint64_t>(end)};
    int bytesPerElement = static_cast<int>(dtypeBytes(tensor.dtype));
    const unsigned char *cursor = data + begin;
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
    if (!file.tensors.emplace(name, std::move(tensor)).second) {
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
  if (auto claimed = file.metadata.find(kChecksumKey); claimed != file.metadata.end()) {
    Checksum sum;
    addMetadata(sum, file.metadata);
    for (const auto &[name, span] : spanOf) { // by name, as the writer adds them
      sum.add(name);
      sum.add(data + span.first, span.second - span.first);
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
