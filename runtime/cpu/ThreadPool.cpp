//===- ThreadPool.cpp - The CPU kernels' persistent threads ----*- C++ -*-===//

#include "runtime/cpu/ThreadPool.h"

#include <cstring>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

constexpr long kMaxThreads = 1024;

/// MLPERF_CPU_THREADS as a thread count, or 0 when unset or not an integer in [1, 1024].
long threadsFromEnvironment(const char **text) {
  const char *env = std::getenv("MLPERF_CPU_THREADS");
  *text = env;
  if (!env || !*env) {
    return 0;
  }
  char *end = nullptr;
  long value = std::strtol(env, &end, 10);
  return *end == '\0' && value >= 1 && value <= kMaxThreads ? value : 0;
}

/// Set while a thread runs a task: a parallelFor inside it runs serially.
thread_local bool insideTask = false;

class Pool {
public:
  static Pool &instance() {
    // Never destroyed: workers may be blocked waiting when the process exits.
    static Pool *pool = new Pool(cpuThreads() - 1);
    return *pool;
  }

  bool hasWorkers() const { return !workers.empty(); }

  /// Runs the job with the workers, or returns false when another thread has the pool.
  bool tryRun(int64_t tasks, void (*run)(const void *, int64_t), const void *body) {
    std::unique_lock<std::mutex> owner(busy, std::try_to_lock);
    if (!owner.owns_lock()) {
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = {run, body, tasks};
      next.store(0, std::memory_order_relaxed);
      remaining.store(tasks, std::memory_order_relaxed);
      ++generation;
      open = true;
    }
    wake.notify_all();
    claimTasks(job);
    std::unique_lock<std::mutex> lock(mutex);
    // Wait for the last task and for every worker to leave the job, so that none claims a
    // task of the next one with this job's body.
    done.wait(lock, [&] { return remaining.load() == 0 && inJob == 0; });
    open = false;
    if (failure) { // a task threw (std::bad_alloc): the caller gets it, after every task ended
      std::exception_ptr thrown = std::exchange(failure, nullptr);
      lock.unlock();
      std::rethrow_exception(thrown);
    }
    return true;
  }

private:
  struct Job {
    void (*run)(const void *, int64_t) = nullptr;
    const void *body = nullptr;
    int64_t tasks = 0;
  };

  explicit Pool(int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      workers.emplace_back([this] { workerLoop(); });
      workers.back().detach();
    }
  }

  void claimTasks(const Job &current) {
    insideTask = true;
    for (int64_t task; (task = next.fetch_add(1)) < current.tasks;) {
      try {
        current.run(current.body, task);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) {
          failure = std::current_exception();
        }
      }
      if (remaining.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_all();
      }
    }
    insideTask = false;
  }

  void workerLoop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return open && generation != seen; });
      seen = generation;
      Job current = job;
      ++inJob;
      lock.unlock();
      claimTasks(current);
      lock.lock();
      if (--inJob == 0) {
        done.notify_all();
      }
    }
  }

  std::mutex busy; // held by the thread whose job the workers run
  std::mutex mutex;
  std::condition_variable wake, done;
  Job job;
  uint64_t generation = 0;
  bool open = false;
  int64_t inJob = 0;
  std::exception_ptr failure; // the first exception a task of the current job threw
  std::atomic<int64_t> next{0}, remaining{0};
  std::vector<std::thread> workers;
};

} // namespace

int64_t cpuThreads() {
  static const int64_t threads = [] {
    const char *text = nullptr;
    if (long value = threadsFromEnvironment(&text)) {
      return static_cast<int64_t>(value);
    }
    return static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads;
}

Status checkCpuThreadsSetting() {
  const char *text = nullptr;
  if (threadsFromEnvironment(&text) == 0 && text && *text) {
    return Status(StatusCode::kInvalidArgument,
                  "MLPERF_CPU_THREADS='" + std::string(text) +
                      "' is not a thread count (an integer from 1 to " +
                      std::to_string(kMaxThreads) + "); unset it to use every hardware thread");
  }
  return Status::ok();
}

namespace detail {
void parallelForErased(int64_t tasks, void (*run)(const void *, int64_t), const void *body) {
  if (!insideTask && cpuThreads() > 1) {
    Pool &pool = Pool::instance();
    if (pool.hasWorkers() && pool.tryRun(tasks, run, body)) {
      return;
    }
  }
  // Serially in the caller (insideTask restored however it ends).
  struct Restore {
    bool saved = insideTask;
    ~Restore() { insideTask = saved; }
  } restore;
  insideTask = true;
  std::exception_ptr failure; // as on the pool: every task runs, the first exception rethrown
  for (int64_t task = 0; task < tasks; ++task) {
    try {
      run(body, task);
    } catch (...) {
      if (!failure) {
        failure = std::current_exception();
      }
    }
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}
} // namespace detail

void copyInParallel(void *to, const void *from, size_t bytes) {
  parallelChunks(static_cast<int64_t>(bytes), int64_t{1} << 18, [&](int64_t begin, int64_t end) {
    std::memcpy(static_cast<char *>(to) + begin, static_cast<const char *>(from) + begin,
                end - begin);
  });
}

} // namespace mlperf::rt::cpu
