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

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "simt/cpu/launch.h"

namespace simt::detail {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Whether two call sites (a kernel's file:line) are the same.
bool same_site(const char* f1, int l1, const char* f2, int l2);

enum class State : unsigned char { ready, at_barrier, at_collective, at_mbarrier, at_named_barrier, done };

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

// A TMA load read at issue, waiting to be written (simt/tma.cuh): by the first wait that sees
// the phase it was issued in complete.
struct StagedCopy {
  unsigned char* dst;
  std::vector<unsigned char> bytes;
  unsigned phase;
};

// An mbarrier's state (simt/mbarrier.cuh), by the address of its 8 bytes of shared memory.
struct Mbarrier {
  unsigned count = 0;    // arrivals per phase
  unsigned pending = 0;  // arrivals still to come in this phase
  long long tx = 0;      // transaction bytes expected and not yet completed in this phase
  long long expected = 0, completed = 0;  // this phase's bytes announced and done, for the messages
  unsigned phase = 0;
  const char* file = nullptr;  // where it was initialised
  int line = 0;
  unsigned initialiser = 0;      // the thread that initialised it
  unsigned long long since = 0;  // the block barriers released before the init
  std::vector<StagedCopy> staged;  // TMA loads completing on it, not yet written
};

// A named barrier (bar.sync / bar.arrive with an id, simt/named_barrier.cuh): counted in warps,
// as the hardware counts it. A warp arrives when all its lanes that have not returned did.
struct NamedBarrier {
  unsigned count = 0;    // threads expected in this use (a multiple of 32)
  unsigned warps = 0;    // the warps that have arrived in this use, a bit each (32 threads each)
  unsigned lanes[32] = {};  // by warp: the lanes that have arrived, until their warp is complete
  // By warp, while lanes[w] is not 0: the instruction its first lane arrived by (bar.sync or
  // bar.arrive, and where), which every other lane of the warp must execute too.
  const char* lane_file[32] = {};
  int lane_line[32] = {};
  bool lane_sync[32] = {};
  const char* file = nullptr;  // where the first of this use arrived
  int line = 0;
  unsigned long long uses = 0;  // completed: a waiter's use is over when this moves
};

// A setmaxnreg a warpgroup made, as its first warp to get there made it.
struct RegisterRecord {
  bool inc;
  unsigned regs, warp;
  const char* file;
  int line;
};

// A wgmma one warp issued (simt/wgmma.cuh): its operands as read then (16-bit values, [row][k]),
// where its lanes' accumulators are, its group (-1 until committed).
struct WgmmaOp {
  WgmmaShape shape{};
  bool accumulate = false;
  uint64_t desc_a = 0, desc_b = 0;
  std::array<uint16_t, 16 * 16> a;   // this warp's 16 rows of A
  std::array<uint16_t, 256 * 16> b;  // N rows of B
  float* d[32] = {};
  WgmmaInFlight* flight[32] = {};
  int group = -1;
  const char* file = nullptr;
  int line = 0;
};

// A warpgroup's wgmma as the first of its warps to issue each made it, until all 4 have.
struct WgmmaRecord {
  int n;
  bool bf16, a_in_registers, trans_a, trans_b, accumulate;
  uint64_t desc_a, desc_b;
  const char* file;
  int line;
  int seen;
};
struct WgmmaRecords {
  std::deque<WgmmaRecord> records;
  unsigned long long base = 0;  // the index of records.front() among the warpgroup's wgmma
};

// A 16-byte chunk's swizzle (TMA's and wgmma's): bits 4..6 of a dynamic shared memory offset XORed
// with its bits 7..9, 1, 2 or 3 of them for a span of 32, 64 or 128 bytes (0: none).
inline size_t swizzled(size_t o, unsigned span) { return span ? o ^ ((o >> 7) & (span / 16 - 1)) << 4 : o; }

struct Warp {
  unsigned present = 0, exited = 0;
  unsigned regs = 0;          // per thread since its last setmaxnreg (0: as compiled)
  unsigned reg_changes = 0;   // setmaxnreg made
  Pending pending[4];  // lanes with disjoint masks (two half-warps, say) may be in flight at once
  Thread* lanes[32] = {};
  std::vector<WgmmaOp> wgmma;  // issued and not yet waited for, in issue order
  unsigned wgmma_groups = 0;   // committed
  unsigned wgmma_waits = 0;
  unsigned long long wgmma_issued = 0;
  bool wgmma_fenced = false;  // a wgmma_fence since the last wait
};

// A fiber's stack: SIMT_STACK_KB KiB (default 256, 1024 under AddressSanitizer; env.h refuses a
// bad value). Read by every BlockRunner, and once with the schedule, before any launch (grid.cpp).
size_t stack_bytes();

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
  void mbarrier_init(void* bar, unsigned count, const char* file, int line);
  uint64_t mbarrier_arrive(void* bar, unsigned tx_bytes, const char* what, const char* file, int line);
  void mbarrier_tx(void* bar, long long delta, const char* what, const char* file, int line);
  void mbarrier_wait_parity(void* bar, unsigned parity, const char* file, int line);
  void named_barrier(unsigned id, unsigned threads, bool wait, const char* file, int line);
  void register_change(unsigned warp, bool inc, unsigned regs, const char* file, int line);
  void tma_load(void* dst, const void* map, int rank, const int* coords, void* bar, const char* file, int line);
  void* dynamic_smem() const { return smem_; }
  size_t dynamic_smem_bytes() const { return smem_bytes_; }
  // wgmma.cpp: one warp's part of a warpgroup's wgmma, fence, commit, wait.
  void wgmma_issue(Thread* const* lanes, const WgmmaShape& s);
  void wgmma_fence(unsigned warp) { warps_[warp].wgmma_fenced = true; }
  void wgmma_commit(unsigned warp);
  void wgmma_wait(unsigned warp, int pending, const char* file, int line);
  [[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  static BlockRunner* current();  // the runner of the calling OS thread, if inside a launch

 private:
  static void entry(boost::context::detail::transfer_t t);
  [[noreturn]] void fiber_main();
  // The running fiber f waits (its state_ says for what): the next runnable fiber in schedule
  // order runs, or, when there is none, the scheduler (the block is done, failed or deadlocked).
  void wait(Fiber& f);
  [[noreturn]] void leave(Fiber& f);  // f is done: switch away for good
  void block(Fiber& f, State why);    // wait(f) in `why`, for the other translation units (mbarrier.cpp)
  Fiber* next_ready();
  void jump(boost::context::detail::fcontext_t to, const void* to_stack, size_t to_size, void** fake_stack,
            boost::context::detail::fcontext_t* from);
  void on_exit(Fiber& f);
  void release_barrier();
  void prepare(int n, dim3 block_dim, size_t dyn_smem);
  std::string deadlock_report() const;
  // mbarrier.cpp: the barrier at `bar`, checked; its phase completed when all is in; its name.
  Mbarrier& mbarrier_at(void* bar, const char* what, const char* file, int line);
  void mbarrier_advance(const void* bar, Mbarrier& m);
  struct Name {
    char s[64];
  };
  Name mbarrier_name(const void* bar) const;
  std::string mbarrier_report() const;      // the waits, for the deadlock report
  void land_staged(Mbarrier& m);  // writes the TMA loads of its completed phases
  std::string mbarrier_unfinished() const;  // a transaction count not back to 0 at the block's end, or ""
  // named_barrier.cpp: once warp w's lanes at barrier id are all it has left, the warp arrives (and
  // may release the barrier).
  void named_warp_check(unsigned id, unsigned w);
  std::string named_report() const;
  std::string registers_unfinished() const;  // setmaxnreg.cpp: a warp of a warpgroup made fewer, or ""
  void wgmma_gather(uint64_t desc, bool mn_major, int r0, int rows, uint16_t* out, const char* operand,
                    const char* file, int line);
  std::string wgmma_unfinished() const;  // wgmma.cpp: warps of a warpgroup that issued different counts, or ""
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
  unsigned long long barriers_released_ = 0;
  std::unordered_map<const void*, Mbarrier> mbarriers_;
  NamedBarrier named_[16];
  std::vector<std::vector<RegisterRecord>> register_records_;  // by warpgroup, in the order made
  std::vector<WgmmaRecords> wgmma_records_;                     // by warpgroup
  // wgmma_wait's scratch: the operands as they are now, B widened (not on a fiber's stack, nor
  // freed by a frame that a failure abandons).
  std::array<uint16_t, 256 * 16> wgmma_now_;
  std::array<float, 256 * 16> wgmma_b_;

  std::vector<unsigned char> smem_store_;
  unsigned char* smem_ = nullptr;
  size_t smem_bytes_ = 0;

  std::vector<int> order_;  // resume order of the fibers
  int cursor_ = 0;          // position in order_ of the fiber that ran last
  bool shuffle_ = false;
  std::mt19937 rng_;
};

}  // namespace simt::detail
