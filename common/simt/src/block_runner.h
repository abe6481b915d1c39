// block_runner.h: runs one thread block to completion on the calling OS thread.
//
// Every GPU thread of the block is a fiber (boost::context fcontext) with its own mmap'd stack. A
// fiber runs until it reaches a barrier or a warp collective it cannot complete, or returns; then
// it switches straight to the next runnable fiber, in the order the schedule asks for. The last
// fiber to reach a barrier releases the others and runs on. When no fiber is runnable and some
// have not returned, the block is deadlocked: control goes back to the runner, which reports who
// waits where instead of hanging.
#pragma once
#include <boost/context/detail/fcontext.hpp>

#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "simt/cpu/launch.h"

namespace simt::detail {

enum class State : unsigned char { ready, at_barrier, at_collective, done };

struct Fiber {
  Thread t;
  boost::context::detail::fcontext_t ctx = nullptr;
  char* stack = nullptr;  // lowest usable address; a guard page lies below it
  void* asan_fake_stack = nullptr;
};

// A warp collective being assembled.
struct Pending {
  unsigned arrived = 0, expect = 0;
  const char* what = nullptr;
  const char* file = nullptr;
  int line = 0;
  CollectiveFn fn = nullptr;
  const void* arg = nullptr;
};

struct Warp {
  unsigned present = 0, exited = 0;
  Pending pending[4];  // lanes with disjoint masks (two half-warps, say) may be in flight at once
  Thread* lanes[32] = {};
};

class BlockRunner {
 public:
  BlockRunner();
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Runs block `block_idx` of the current launch. Returns false and sets error() if the block
  // failed (a diagnostic, a kernel_error, a deadlock).
  bool run(uint3 block_idx, dim3 block_dim, size_t dyn_smem, KernelBody body, const Schedule& schedule);
  const std::string& error() const { return error_; }

  // Called from inside a fiber.
  int barrier(Barrier kind, int pred, const char* what, const char* file, int line);
  void collective(unsigned mask, const char* what, const char* file, int line, CollectiveFn fn, const void* arg);
  unsigned active_mask() const;
  void* dynamic_smem() const { return smem_; }
  [[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  static BlockRunner* current();  // the runner of the calling OS thread, if inside a launch

 private:
  static void entry(boost::context::detail::transfer_t t);
  [[noreturn]] void fiber_main();
  // The running fiber f waits (its state_ says for what): the next runnable fiber in schedule
  // order runs, or, when there is none, the scheduler (the block is done, failed or deadlocked).
  void wait(Fiber& f);
  [[noreturn]] void leave(Fiber& f);  // f is done: switch away for good
  Fiber* next_ready();
  void jump(boost::context::detail::fcontext_t to, const void* to_stack, size_t to_size, void** fake_stack,
            boost::context::detail::fcontext_t* from);
  void on_exit(Fiber& f);
  void release_barrier();
  void prepare(int n, dim3 block_dim, size_t dyn_smem);
  std::string deadlock_report() const;
  [[noreturn, gnu::cold, gnu::noinline]] void barrier_after_exit(const char* what, const char* file, int line);
  [[noreturn, gnu::cold, gnu::noinline]] void divergent_barrier(const char* what, const char* file, int line);

  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<State> state_;  // by linear thread id; dense, since every barrier scans it
  size_t stack_size_ = 0;
  Fiber* current_ = nullptr;
  boost::context::detail::fcontext_t sched_ctx_ = nullptr;
  const void* sched_stack_bottom_ = nullptr;  // for AddressSanitizer's fiber annotations
  size_t sched_stack_size_ = 0;
  void* sched_fake_stack_ = nullptr;

  KernelBody body_{};
  bool lenient_exit_ = false;
  bool failed_ = false;
  std::string error_;

  // The block being run.
  int n_ = 0, live_ = 0, exited_ = 0;
  std::vector<Warp> warps_;
  // The block barrier being assembled, and the results of the last one released.
  int arrived_ = 0, count_ = 0, all_ = 1, any_ = 0;
  const char* bar_what_ = nullptr;
  const char* bar_file_ = nullptr;
  int bar_line_ = 0;
  int result_[4] = {};

  std::vector<unsigned char> smem_store_;
  unsigned char* smem_ = nullptr;

  std::vector<int> order_;  // resume order of the fibers
  int cursor_ = 0;          // position in order_ of the fiber that ran last
  bool shuffle_ = false;
  std::mt19937 rng_;
};

}  // namespace simt::detail
