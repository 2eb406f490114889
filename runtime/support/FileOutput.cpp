//===- FileOutput.cpp - Files written whole, and JSON text -------*- C++ -*-===//

#include "runtime/support/FileOutput.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlperf::rt {

Status writeFileAtomically(const std::string &path, const std::vector<std::string_view> &chunks) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return Status(StatusCode::kNotFound, "cannot create " + temp + ": " + std::strerror(errno),
                  __FILE__, __LINE__);
  }
  bool ok = true;
  for (std::string_view chunk : chunks) {
    const char *cursor = chunk.data();
    size_t left = chunk.size();
    while (ok && left > 0) {
      ssize_t written = ::write(fd, cursor, left);
      if (written < 0 && errno == EINTR) {
        continue;
      }
      ok = written > 0;
      cursor += written > 0 ? written : 0;
      left -= written > 0 ? static_cast<size_t>(written) : 0;
    }
  }
  ok = ok && ::fsync(fd) == 0;
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(ok ? errno : savedErrno);
    std::remove(temp.c_str());
    return Status(StatusCode::kInternal, "cannot write " + path + ": " + reason, __FILE__,
                  __LINE__);
  }
  return Status::ok();
}

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value)) {
    return "null";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

} // namespace mlperf::rt
