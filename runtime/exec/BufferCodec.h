//===- BufferCodec.h - Host tensors in and out of plan buffer bytes -*- C++ -*-===//
//
// A plan buffer holds its elements in the plan dtype's storage (bf16 as its 16 stored bits,
// fp8 as OCP encodings, i32 narrowed), as a GPU holds them. Every backend's write and read go
// through these two functions: the CPU backend on its arenas, the CUDA backend on a host
// staging copy, so both store the same bits for the same host tensor.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_EXEC_BUFFERCODEC_H
#define MLPERFC_RUNTIME_EXEC_BUFFERCODEC_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/plan.pb.h"
#include "runtime/support/Status.h"

#include <cstdint>

namespace mlperf::rt {

/// Writes `value` into `bytes` (buffer.size() of them) in the buffer's dtype, rounding floats to
/// nearest even. Fails, writing nothing, when the dtype class or shape differs from the
/// buffer's, or an integer does not fit an i32 buffer.
Status encodeBuffer(const plan::Buffer &buffer, const HostTensor &value, uint8_t *bytes);

/// Reads `bytes` of `buffer` into `value` (its own storage, resized; dtype and shape set).
void decodeBuffer(const plan::Buffer &buffer, const uint8_t *bytes, HostTensor &value);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_EXEC_BUFFERCODEC_H
