//===- PlanFuzzer.cpp - libFuzzer harness for the plan loader ---------------===//
//
// A plan file is untrusted input: any bytes must give OK or an error, never a crash, a
// sanitizer report or a hang.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlperf::plan::Plan plan;
  mlperf::rt::Status status =
      mlperf::rt::parsePlan(std::string(reinterpret_cast<const char *>(data), size), "fuzz", plan);
  (void)status;
  return 0;
}
