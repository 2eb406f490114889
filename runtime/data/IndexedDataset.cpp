//===- IndexedDataset.cpp - Megatron/NeMo indexed datasets -----*- C++ -*-===//

#include "runtime/data/IndexedDataset.h"

#include "runtime/support/FileInput.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace mlperf::rt {
namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr size_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

int64_t bytesOf(TokenType type) {
  switch (type) {
  case TokenType::kUInt8:
  case TokenType::kInt8:
    return 1;
  case TokenType::kInt16:
  case TokenType::kUInt16:
    return 2;
  case TokenType::kInt32:
    return 4;
  case TokenType::kInt64:
    return 8;
  }
  return 0;
}

bool fits(TokenType type, int64_t value) {
  switch (type) {
  case TokenType::kUInt8:
    return value >= 0 && value <= 255;
  case TokenType::kInt8:
    return value >= -128 && value <= 127;
  case TokenType::kInt16:
    return value >= -32768 && value <= 32767;
  case TokenType::kUInt16:
    return value >= 0 && value <= 65535;
  case TokenType::kInt32:
    return value >= std::numeric_limits<int32_t>::min() &&
           value <= std::numeric_limits<int32_t>::max();
  case TokenType::kInt64:
    return true;
  }
  return false;
}

int64_t decode(TokenType type, const unsigned char *p) {
  uint64_t raw = 0;
  int64_t bytes = bytesOf(type);
  for (int64_t i = bytes - 1; i >= 0; --i) {
    raw = (raw << 8) | p[i];
  }
  switch (type) {
  case TokenType::kInt8:
    return static_cast<int8_t>(raw);
  case TokenType::kInt16:
    return static_cast<int16_t>(raw);
  case TokenType::kInt32:
    return static_cast<int32_t>(raw);
  case TokenType::kInt64:
    return static_cast<int64_t>(raw);
  default:
    return static_cast<int64_t>(raw);
  }
}

Status corrupt(const std::string &file, const std::string &what) {
  return Status(StatusCode::kDataLoss, file + ": not a valid indexed dataset: " + what);
}

/// Writes `data` to `path` via a temporary file and rename.
Status writeFileAtomically(const std::string &path, const std::string &data) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return Status(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kInternal,
                  "cannot create " + temp + ": " + std::strerror(errno));
  }
  const char *cursor = data.data();
  size_t left = data.size();
  bool ok = true;
  while (ok && left > 0) {
    ssize_t written = ::write(fd, cursor, left);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    ok = written > 0;
    if (ok) {
      cursor += written;
      left -= static_cast<size_t>(written);
    }
  }
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    return Status(StatusCode::kInternal, "cannot write " + path + ": " + reason);
  }
  return Status::ok();
}

void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

} // namespace

IndexedDataset::IndexedDataset(IndexedDataset &&other) noexcept { *this = std::move(other); }

IndexedDataset &IndexedDataset::operator=(IndexedDataset &&other) noexcept {
  if (this != &other) {
    if (binFd >= 0) {
      ::close(binFd);
    }
    prefix = std::move(other.prefix);
    binFd = other.binFd;
    other.binFd = -1;
    type = other.type;
    tokenBytes = other.tokenBytes;
    sequenceLengths = std::move(other.sequenceLengths);
    sequenceOffsets = std::move(other.sequenceOffsets);
    documentIndex = std::move(other.documentIndex);
    totalTokens = other.totalTokens;
  }
  return *this;
}

IndexedDataset::~IndexedDataset() {
  if (binFd >= 0) {
    ::close(binFd);
  }
}

Status IndexedDataset::open(const std::string &prefix, IndexedDataset &dataset) {
  std::string idxPath = prefix + ".idx", binPath = prefix + ".bin";
  int idxFd = ::open(idxPath.c_str(), O_RDONLY);
  if (idxFd < 0) {
    return Status(StatusCode::kNotFound, "cannot open " + idxPath + ": " + std::strerror(errno));
  }
  // Closes the index on every return below.
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } idxCloser{idxFd};
  struct stat idxStat{};
  ::fstat(idxFd, &idxStat);
  uint64_t idxBytes = static_cast<uint64_t>(idxStat.st_size);
  char header[kHeaderBytes];
  if (idxBytes < kHeaderBytes || !readAt(idxFd, header, kHeaderBytes, 0)) {
    return corrupt(idxPath, "shorter than the " + std::to_string(kHeaderBytes) + "-byte header");
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return corrupt(idxPath, "missing the MMIDIDX magic (is this a .bin file or another format?)");
  }
  auto u64 = [&](size_t at) {
    uint64_t value = 0;
    std::memcpy(&value, header + at, 8);
    return value;
  };
  if (u64(9) != 1) {
    return corrupt(idxPath, "unsupported version " + std::to_string(u64(9)) + " (expected 1)");
  }
  auto code = static_cast<uint8_t>(header[17]);
  if (code < 1 || code > 8 || code == 6 || code == 7) {
    return corrupt(idxPath, "dtype code " + std::to_string(code) + " is not an integer token type");
  }
  uint64_t sequences = u64(18), documents = u64(26);
  // Sizes checked against the file before anything is allocated; no product can overflow
  // because each count is first bounded by the file size.
  uint64_t body = idxBytes - kHeaderBytes;
  if (sequences > body / 12 || documents > body / 8 || sequences * 12 + documents * 8 > body) {
    return corrupt(idxPath, "declares " + std::to_string(sequences) + " sequences and " +
                                std::to_string(documents) +
                                " document-index entries, more than the " +
                                std::to_string(idxBytes) + "-byte file holds (truncated?)");
  }
  if (sequences * 12 + documents * 8 < body) {
    return corrupt(idxPath, std::to_string(body - sequences * 12 - documents * 8) +
                                " bytes follow the document index (a multimodal index with "
                                "sequence modes? only text datasets are supported)");
  }
  IndexedDataset out;
  out.prefix = prefix;
  out.type = static_cast<TokenType>(code);
  out.tokenBytes = bytesOf(out.type);
  out.sequenceLengths.resize(sequences);
  out.sequenceOffsets.resize(sequences);
  out.documentIndex.resize(documents);
  if ((sequences &&
       (!readAt(idxFd, out.sequenceLengths.data(), sequences * 4, kHeaderBytes) ||
        !readAt(idxFd, out.sequenceOffsets.data(), sequences * 8, kHeaderBytes + sequences * 4))) ||
      (documents &&
       !readAt(idxFd, out.documentIndex.data(), documents * 8, kHeaderBytes + sequences * 12))) {
    return corrupt(idxPath, "could not read the index arrays");
  }

  out.binFd = ::open(binPath.c_str(), O_RDONLY);
  if (out.binFd < 0) {
    return Status(StatusCode::kNotFound, "cannot open " + binPath + ": " + std::strerror(errno));
  }
  struct stat binStat{};
  ::fstat(out.binFd, &binStat);
  int64_t binBytes = binStat.st_size;
  for (uint64_t i = 0; i < sequences; ++i) {
    int64_t length = out.sequenceLengths[i], offset = out.sequenceOffsets[i];
    if (length < 0 || offset < 0) {
      return corrupt(idxPath, "sequence " + std::to_string(i) + " has a negative length or offset");
    }
    if (offset > binBytes || length > (binBytes - offset) / out.tokenBytes) {
      return corrupt(binPath, "sequence " + std::to_string(i) + " (" + std::to_string(length) +
                                  " tokens at byte " + std::to_string(offset) +
                                  ") lies outside the " + std::to_string(binBytes) +
                                  "-byte file (truncated?)");
    }
    out.totalTokens += length;
  }
  if (documents < 1 || out.documentIndex.front() != 0 ||
      out.documentIndex.back() != static_cast<int64_t>(sequences)) {
    return corrupt(idxPath, "the document index must run from 0 to the sequence count");
  }
  for (uint64_t j = 1; j < documents; ++j) {
    if (out.documentIndex[j] < out.documentIndex[j - 1]) {
      return corrupt(idxPath, "the document index decreases at entry " + std::to_string(j));
    }
  }
  dataset = std::move(out);
  return Status::ok();
}

int64_t IndexedDataset::numDocuments() const {
  return documentIndex.empty() ? 0 : static_cast<int64_t>(documentIndex.size()) - 1;
}

int64_t IndexedDataset::documentLength(int64_t document) const {
  if (document < 0 || document >= numDocuments()) {
    return 0;
  }
  int64_t length = 0;
  for (int64_t s = documentIndex[document]; s < documentIndex[document + 1]; ++s) {
    length += sequenceLengths[s];
  }
  return length;
}

Status IndexedDataset::readDocument(int64_t document, int64_t offset, int64_t count,
                                    std::vector<int64_t> &out) const {
  if (document < 0 || document >= numDocuments() || offset < 0 || count < 0 ||
      offset + count > documentLength(document)) {
    return Status(StatusCode::kInvalidArgument, prefix + ": tokens [" + std::to_string(offset) +
                                                    ", " + std::to_string(offset + count) +
                                                    ") are outside document " +
                                                    std::to_string(document));
  }
  std::vector<unsigned char> buffer;
  for (int64_t s = documentIndex[document]; s < documentIndex[document + 1] && count > 0; ++s) {
    int64_t length = sequenceLengths[s];
    if (offset >= length) {
      offset -= length;
      continue;
    }
    int64_t take = std::min(count, length - offset);
    buffer.resize(static_cast<size_t>(take * tokenBytes));
    if (!readAt(binFd, buffer.data(), buffer.size(), sequenceOffsets[s] + offset * tokenBytes)) {
      return Status(StatusCode::kDataLoss, prefix + ".bin: read failed (truncated while open?)");
    }
    for (int64_t i = 0; i < take; ++i) {
      out.push_back(decode(type, buffer.data() + i * tokenBytes));
    }
    count -= take;
    offset = 0;
  }
  return Status::ok();
}

Status writeIndexedDataset(const std::string &prefix,
                           const std::vector<std::vector<int64_t>> &documents, TokenType type) {
  std::string bin, idx(kMagic, sizeof(kMagic));
  appendLittleEndian(idx, 1, 8);
  idx += static_cast<char>(type);
  appendLittleEndian(idx, documents.size(), 8);
  appendLittleEndian(idx, documents.size() + 1, 8);
  std::string lengths, offsets, docIndex;
  int64_t bytes = bytesOf(type);
  for (size_t d = 0; d < documents.size(); ++d) {
    if (documents[d].size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return Status(StatusCode::kInvalidArgument,
                    "document " + std::to_string(d) + " is longer than 2^31 tokens");
    }
    appendLittleEndian(lengths, documents[d].size(), 4);
    appendLittleEndian(offsets, bin.size(), 8);
    for (int64_t token : documents[d]) {
      if (!fits(type, token)) {
        return Status(StatusCode::kInvalidArgument, "token " + std::to_string(token) +
                                                        " in document " + std::to_string(d) +
                                                        " does not fit the dataset's token type");
      }
      appendLittleEndian(bin, static_cast<uint64_t>(token), static_cast<int>(bytes));
    }
  }
  for (size_t d = 0; d <= documents.size(); ++d) {
    appendLittleEndian(docIndex, d, 8);
  }
  idx += lengths + offsets + docIndex;
  // The .bin first: a reader that finds the new .idx also finds its data. The pair is not
  // replaced atomically: write a new dataset under a fresh prefix rather than over one that a
  // reader may be opening.
  MLPERF_RETURN_IF_ERROR(writeFileAtomically(prefix + ".bin", bin));
  Status status = writeFileAtomically(prefix + ".idx", idx);
  if (!status.isOk()) {
    std::remove((prefix + ".bin").c_str());
  }
  return status;
}

} // namespace mlperf::rt
