//===- ThreadPool.h - The CPU kernels' persistent threads ------*- C++ -*-===//
//
// One pool of threads, started on first use and kept for the life of the process, runs every
// parallel CPU kernel: no kernel creates threads. Its size is the single knob
// MLPERF_CPU_THREADS (default: every hardware thread); the calling thread is one of them.
//
// Results never depend on the pool: a kernel splits its work into tasks that each write their
// own outputs and sum in a fixed order, so its bits are the same for any thread count and any
// timing (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_THREADPOOL_H
#define MLPERFC_RUNTIME_CPU_THREADPOOL_H

#include "runtime/support/Status.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace mlperf::rt::cpu {

/// The threads CPU kernels use: MLPERF_CPU_THREADS, else every hardware thread.
int64_t cpuThreads();

/// Fails, naming the variable, when MLPERF_CPU_THREADS is set to anything but an integer in
/// [1, 1024]. Tools call this before running a kernel; cpuThreads() falls back to the default
/// for a bad value.
Status checkCpuThreadsSetting();

namespace detail {
void parallelForErased(int64_t tasks, void (*run)(const void *body, int64_t task),
                       const void *body);
} // namespace detail

/// Runs body(task) for every task in [0, tasks) on the pool, the caller taking part, and
/// returns when all are done. Tasks run in any order on any thread; if some throw (only
/// std::bad_alloc in practice), the others still run and the first exception is rethrown to
/// the caller once all have ended. Called from inside a task,
/// or while another thread's parallelFor has the pool (the CPU backend's two streams), it runs
/// the tasks one after another in the calling thread.
template <typename Body> void parallelFor(int64_t tasks, const Body &body) {
  if (tasks <= 1) {
    if (tasks == 1) {
      body(int64_t{0});
    }
    return;
  }
  detail::parallelForErased(
      tasks, [](const void *b, int64_t task) { (*static_cast<const Body *>(b))(task); }, &body);
}

/// Runs body(begin, end) over [0, count) in chunks of at least `grain` elements (one chunk,
/// in the caller, when count < 2·grain): for element-wise work whose cost is per element.
template <typename Body> void parallelChunks(int64_t count, int64_t grain, const Body &body) {
  int64_t chunks = std::min(count / std::max<int64_t>(grain, 1), 4 * cpuThreads());
  if (chunks <= 1) {
    if (count > 0) {
      body(int64_t{0}, count);
    }
    return;
  }
  int64_t size = (count + chunks - 1) / chunks;
  parallelFor(chunks, [&](int64_t chunk) {
    int64_t begin = chunk * size, end = std::min(count, begin + size);
    if (begin < end) {
      body(begin, end);
    }
  });
}

/// memcpy on the pool: copies between the arenas and host tensors move as much memory as an
/// element-wise kernel.
void copyInParallel(void *to, const void *from, size_t bytes);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_THREADPOOL_H
