//===- FileInput.cpp - Reading files in place -------------------*- C++ -*-===//

#include "runtime/support/FileInput.h"

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace mlperf::rt {

bool readAt(int fd, void *buffer, size_t size, uint64_t offset) {
  auto *cursor = static_cast<char *>(buffer);
  while (size > 0) {
    ssize_t got = ::pread(fd, cursor, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      return false;
    }
    cursor += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

bool isRegularFile(const std::string &path) {
  struct stat info{};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

} // namespace mlperf::rt
