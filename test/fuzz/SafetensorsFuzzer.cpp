//===- SafetensorsFuzzer.cpp - libFuzzer harness for safetensors files ------===//
//
// Checkpoints and weight files are untrusted input: any bytes must give OK or an error.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlperf::rt::TensorFile file;
  mlperf::rt::Status status = mlperf::rt::parseSafetensors(
      std::string(reinterpret_cast<const char *>(data), size), "fuzz", file);
  (void)status;
  return 0;
}
