// block_runner.cpp: fibers, the block barrier, warp collectives and their diagnostics.
#include "block_runner.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "env.h"
#include "simt/cpu/counters_hooks.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace bctx = boost::context::detail;

// The path every barrier and collective takes: inlined, so that a waiting fiber's stack stays shallow.
#define SIMT_HOT __attribute__((always_inline)) inline

namespace simt::detail {

thread_local constinit Thread* t_thread = nullptr;
thread_local constinit uint3 t_block_idx = {0, 0, 0};
thread_local constinit dim3 t_block_dim = {1, 1, 1};
thread_local constinit dim3 t_grid_dim = {1, 1, 1};

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

bool same_site(const char* f1, int l1, const char* f2, int l2) {
  return l1 == l2 && (f1 == f2 || std::strcmp(f1, f2) == 0);
}

namespace {
thread_local BlockRunner* t_runner = nullptr;

std::string who() {
  std::string s = format("block (%u,%u,%u)", t_block_idx.x, t_block_idx.y, t_block_idx.z);
  if (t_thread) s += format(" thread (%u,%u,%u)", t_thread->tid.x, t_thread->tid.y, t_thread->tid.z);
  return s;
}


// AddressSanitizer must be told when the stack changes under it.
inline void asan_enter(void** save, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(save, bottom, size);
#else
  (void)save, (void)bottom, (void)size;
#endif
}
inline void asan_entered(void* save, const void** old_bottom, size_t* old_size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(save, old_bottom, old_size);
#else
  (void)save, (void)old_bottom, (void)old_size;
#endif
}
}  // namespace

// cp.async: the copies of groups older than the newest `pending` land now.
void wait_async_copies(int pending) {
  Thread& t = *t_thread;
  size_t keep = 0;
  for (AsyncCopy& c : t.copies) {
    if (c.group < t.committed_groups - pending)
      std::memcpy(c.dst, c.bytes, static_cast<size_t>(c.size));
    else
      t.copies[keep++] = c;
  }
  t.copies.resize(keep);
}

size_t stack_bytes() {
#if defined(__SANITIZE_ADDRESS__)
  const long kb = 1024;  // instrumented frames are larger
#else
  const long kb = 256;
#endif
  // Below 16 KiB the emulator's own frames leave no room to report a kernel that overflows its
  // stack (a segmentation fault with no word on x86-64, measured); 1 GiB a fiber at most.
  return static_cast<size_t>(env_number("SIMT_STACK_KB", kb, 16, 1L << 20)) * 1024;
}

BlockRunner::BlockRunner() : stack_size_(stack_bytes()) {}

BlockRunner::~BlockRunner() {
  for (auto& f : fibers_) munmap(f->stack - 4096, stack_size_ + 4096);
}

BlockRunner* BlockRunner::current() { return t_runner; }

void BlockRunner::prepare(int n, dim3 block_dim, size_t dyn_smem) {
  while (static_cast<int>(fibers_.size()) < n) {
    auto f = std::make_unique<Fiber>();
    void* m = mmap(nullptr, stack_size_ + 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("simt: cannot map a fiber stack");
      std::abort();
    }
    mprotect(m, 4096, PROT_NONE);  // a stack overflow faults instead of corrupting a neighbour
    f->stack = static_cast<char*>(m) + 4096;
    fibers_.push_back(std::move(f));
  }
  n_ = live_ = n;
  state_.assign(static_cast<size_t>(n), State::ready);
  exited_ = arrived_ = 0;
  failed_ = false;
  barriers_released_ = 0;
  mbarriers_.clear();
  for (NamedBarrier& b : named_) b = NamedBarrier{};
  warps_.assign(static_cast<size_t>((n + 31) / 32), Warp{});
  register_records_.assign((warps_.size() + 3) / 4, {});
  wgmma_records_.assign((warps_.size() + 3) / 4, {});
  for (int i = 0; i < n; ++i) {
    Fiber& f = *fibers_[static_cast<size_t>(i)];
    Thread& t = f.t;
    const unsigned u = static_cast<unsigned>(i);
    t.tid = make_uint3(u % block_dim.x, (u / block_dim.x) % block_dim.y, u / (block_dim.x * block_dim.y));
    t.linear = u;
    t.lane = u % 32;
    t.warp = u / 32;
    t.copies.clear();
    t.committed_groups = 0;
    t.mbarrier = nullptr;
    warps_[t.warp].present |= 1u << t.lane;
    warps_[t.warp].lanes[t.lane] = &t;
#if defined(__SANITIZE_ADDRESS__)
    __asan_unpoison_memory_region(f.stack, stack_size_);  // frames of an abandoned block
#endif
    // Stacks lie a power of two apart, so their tops would all fall in the same cache sets; a
    // different offset per fiber spreads them (a barrier touches every fiber's stack top).
    const size_t color = (static_cast<size_t>(i) * 320) % 16384;
    f.ctx = bctx::make_fcontext(f.stack + stack_size_ - color, stack_size_ - color, &BlockRunner::entry);
  }
  // Dynamic shared memory, 1024-byte aligned (a 128-byte swizzle's pattern: simt/tma.cuh),
  // poisoned: a read of what was never written gives NaN (0xFFFF... is NaN in fp32, fp16 and bf16)
  // or -1.
  if (smem_store_.size() < dyn_smem + 1024) smem_store_.resize(dyn_smem + 1024);
  const auto base = reinterpret_cast<uintptr_t>(smem_store_.data());
  smem_ = reinterpret_cast<unsigned char*>((base + 1023) & ~uintptr_t{1023});
  smem_bytes_ = dyn_smem;
  std::memset(smem_, 0xFF, dyn_smem);
}

bool BlockRunner::run(uint3 block_idx, dim3 block_dim, size_t dyn_smem, KernelBody body, const Schedule& s) {
  t_runner = this;
  t_block_idx = block_idx;
  body_ = body;
  lenient_exit_ = s.lenient_exit;
  const int n = static_cast<int>(block_dim.x * block_dim.y * block_dim.z);
  prepare(n, block_dim, dyn_smem);

  order_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order_[static_cast<size_t>(i)] = s.order == Order::reverse ? n - 1 - i : i;
  shuffle_ = s.order == Order::shuffle;
  // Seeded by block, so a shuffled run is reproducible whatever worker runs the block.
  rng_.seed(s.seed * 2654435761u + block_idx.x + 65599u * (block_idx.y + 65599u * block_idx.z));
  if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
  cursor_ = n - 1;  // so that the first fiber resumed is order_[0]
  counters::block_begin(block_idx, n, smem_, dyn_smem);

  // The fibers pass control among themselves; it comes back here when none can run.
  Fiber* first = next_ready();
  current_ = first;
  t_thread = &first->t;
  jump(first->ctx, first->stack, stack_size_, &sched_fake_stack_, &sched_ctx_);
  if (!failed_ && live_ > 0) {
    error_ = deadlock_report();
    failed_ = true;
  } else if (!failed_) {
    error_ = mbarrier_unfinished();
    if (error_.empty()) error_ = registers_unfinished();
    if (error_.empty()) error_ = wgmma_unfinished();
    failed_ = !error_.empty();
  }
  t_thread = nullptr;
  current_ = nullptr;
  counters::block_end();
  return !failed_;
}

SIMT_HOT Fiber* BlockRunner::next_ready() {
  bool wrapped = false;
  for (;;) {
    if (++cursor_ == n_) {  // a new pass over the block
      if (wrapped) {  // a whole pass found nobody: done, or deadlocked
        cursor_ = n_ - 1;
        return nullptr;
      }
      wrapped = true;
      cursor_ = 0;
      if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
    }
    const size_t i = static_cast<size_t>(order_[static_cast<size_t>(cursor_)]);
    if (state_[i] == State::ready) return fibers_[i].get();
  }
}

// Saves the running context in *from and continues `to`. When something jumps back here, the
// jumper passed the slot for its own context: fill it, so that it can be resumed in turn.
SIMT_HOT void BlockRunner::jump(bctx::fcontext_t to, const void* to_stack, size_t to_size, void** fake_stack,
                       bctx::fcontext_t* from) {
  asan_enter(fake_stack, to_stack, to_size);
  const bctx::transfer_t t = bctx::jump_fcontext(to, from);
  asan_entered(fake_stack ? *fake_stack : nullptr, nullptr, nullptr);
  *static_cast<bctx::fcontext_t*>(t.data) = t.fctx;
}

void BlockRunner::entry(bctx::transfer_t t) {
  BlockRunner* r = t_runner;
  *static_cast<bctx::fcontext_t*>(t.data) = t.fctx;
  // A block's first fiber is entered from the runner: learn the runner's stack for AddressSanitizer.
  const void* bottom = nullptr;
  size_t size = 0;
  asan_entered(nullptr, &bottom, &size);
  if (t.data == &r->sched_ctx_) r->sched_stack_bottom_ = bottom, r->sched_stack_size_ = size;
  r->fiber_main();
}

void BlockRunner::fiber_main() {
  Fiber& me = *current_;
  body_.invoke(body_.call);
  on_exit(me);
  state_[me.t.linear] = State::done;
  leave(me);
}

// Whoever continues a fiber makes it current first.
SIMT_HOT void BlockRunner::wait(Fiber& f) {
  if (Fiber* next = next_ready()) {
    current_ = next;
    t_thread = &next->t;
    jump(next->ctx, next->stack, stack_size_, &f.asan_fake_stack, &f.ctx);
  } else {
    jump(sched_ctx_, sched_stack_bottom_, sched_stack_size_, &f.asan_fake_stack, &f.ctx);
  }
}

void BlockRunner::block(Fiber& f, State why) {
  state_[f.t.linear] = why;
  wait(f);
}

void BlockRunner::leave(Fiber&) {
  bctx::fcontext_t discard = nullptr;  // never resumed
  if (Fiber* next = failed_ ? nullptr : next_ready()) {
    current_ = next;
    t_thread = &next->t;
    jump(next->ctx, next->stack, stack_size_, nullptr, &discard);
  } else {
    jump(sched_ctx_, sched_stack_bottom_, sched_stack_size_, nullptr, &discard);
  }
  __builtin_unreachable();
}

void BlockRunner::fail(const char* fmt, ...) {
  {  // nothing of this frame may outlive the switch below: the fiber is never resumed
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    error_ = who() + ": " + buf;
  }
  failed_ = true;
  Fiber& f = *current_;
  state_[f.t.linear] = State::done;
  leave(f);  // the block is abandoned
}

void BlockRunner::on_exit(Fiber& f) {
  wait_async_copies(0);  // copies in flight still land, as on the GPU
  Warp& w = warps_[f.t.warp];
  w.exited |= 1u << f.t.lane;
  if (w.exited == w.present) counters::warp_exited(f.t.warp);
  for (unsigned id = 1; id < 16; ++id) named_warp_check(id, f.t.warp);  // its other lanes may be all that is left
  if (!w.wgmma.empty())  // its accumulators are gone
    fail("lane %u of warp %u returned with %zu wgmma in flight (the first issued at %s:%d): wgmma_commit and "
         "wgmma_wait<0> first",
         f.t.lane, f.t.warp, w.wgmma.size(), w.wgmma[0].file, w.wgmma[0].line);
  --live_;
  ++exited_;
  for (const Pending& p : w.pending)
    if (p.arrived && (p.expect >> f.t.lane & 1u))
      fail("lane %u returned while lanes 0x%08x of warp %u wait for it at %s (%s:%d)", f.t.lane,
                  p.arrived, f.t.warp, p.what, p.file, p.line);
  if (arrived_ > 0) {
    if (!lenient_exit_)
      fail("returned while %d thread(s) wait at %s (%s:%d); a barrier after some threads have "
                  "returned is undefined in CUDA (guard the work instead of returning early, or set "
                  "SIMT_LENIENT_EXIT=1)",
                  arrived_, bar_what_, bar_file_, bar_line_);
    if (arrived_ == live_) release_barrier();  // exited threads count as arrived
  }
}

void BlockRunner::release_barrier() {
  int warps = 0;
  for (const Warp& w : warps_) warps += (w.present & ~w.exited) != 0;
  counters::barrier_release(warps);
  result_[static_cast<int>(Barrier::plain)] = 0;
  result_[static_cast<int>(Barrier::count)] = count_;
  result_[static_cast<int>(Barrier::all)] = all_;
  result_[static_cast<int>(Barrier::any)] = any_;
  arrived_ = 0;
  ++barriers_released_;
  for (State& st : state_)
    if (st == State::at_barrier) st = State::ready;
}

void BlockRunner::barrier_after_exit(const char* what, const char* file, int line) {
  fail("%s (%s:%d) reached after %d thread(s) of the block returned; this is undefined in CUDA "
              "(guard the work instead of returning early, or set SIMT_LENIENT_EXIT=1)",
              what, file, line, exited_);
}
void BlockRunner::divergent_barrier(const char* what, const char* file, int line) {
  fail("divergent __syncthreads: this thread is at %s (%s:%d) while %d thread(s) wait at %s (%s:%d)", what,
              file, line, arrived_, bar_what_, bar_file_, bar_line_);
}

int BlockRunner::barrier(Barrier kind, int pred, const char* what, const char* file, int line) {
  Fiber& f = *current_;
  if (exited_ > 0 && !lenient_exit_) [[unlikely]]
    barrier_after_exit(what, file, line);
  counters::barrier_arrive(f.t.linear);
  if (arrived_ == 0) {
    bar_what_ = what;
    bar_file_ = file;
    bar_line_ = line;
    count_ = 0;
    all_ = 1;
    any_ = 0;
  } else if (!same_site(bar_file_, bar_line_, file, line)) [[unlikely]] {
    divergent_barrier(what, file, line);
  }
  const int p = pred != 0;
  count_ += p;
  all_ &= p;
  any_ |= p;
  if (++arrived_ == live_) {  // the last one in releases the others and runs on
    release_barrier();
  } else {
    state_[f.t.linear] = State::at_barrier;
    wait(f);
  }
  return result_[static_cast<int>(kind)];
}

void BlockRunner::collective(unsigned mask, const char* what, const char* file, int line, CollectiveFn fn,
                             const void* arg) {
  Fiber& f = *current_;
  f.t.file = file;
  f.t.line = line;
  counters::collective_arrive(f.t.linear);
  Warp& w = warps_[f.t.warp];
  const unsigned bit = 1u << f.t.lane, expect = mask & w.present;
  if (!(mask & bit))
    fail("%s (%s:%d): the calling lane %u is not in mask 0x%08x", what, file, line, f.t.lane, mask);
  if (expect & w.exited)
    fail("%s (%s:%d): mask 0x%08x names lane(s) 0x%08x that have returned", what, file, line, mask,
                expect & w.exited);
  Pending* slot = nullptr;
  for (Pending& p : w.pending) {
    if (!p.arrived || !(p.expect & expect)) continue;
    // __syncwarp may be reached from different places; every other collective must match.
    const bool same = p.fn == fn && (fn == &no_op || same_site(p.file, p.line, file, line));
    if (p.expect != expect || !same)
      fail("divergent warp collective in warp %u: lane %u is at %s (%s:%d, mask 0x%08x) while lanes "
                  "0x%08x wait at %s (%s:%d, mask 0x%08x)",
                  f.t.warp, f.t.lane, what, file, line, mask, p.arrived, p.what, p.file, p.line, p.expect);
    slot = &p;
    break;
  }
  if (!slot) {
    for (Pending& p : w.pending)
      if (!p.arrived) {
        slot = &p;
        break;
      }
    if (!slot) fail("%s (%s:%d): more than 4 partial-mask collectives at once in warp %u", what, file, line, f.t.warp);
    *slot = Pending{0, expect, what, file, line, fn, arg};
  }
  slot->arrived |= bit;
  if (slot->arrived != slot->expect) {
    state_[f.t.linear] = State::at_collective;
    wait(f);
    return;
  }
  // The last lane in computes every lane's result, wakes the others, and runs on.
  fn(w.lanes, slot->expect, slot->arg);
  counters::collective_done(what, f.t.warp, slot->expect == (w.present & ~w.exited));
  const unsigned done = slot->arrived;
  slot->arrived = 0;
  for (int l = 0; l < 32; ++l)
    if ((done >> l & 1u) && l != static_cast<int>(f.t.lane))
      state_[w.lanes[l]->linear] = State::ready;
}

unsigned BlockRunner::active_mask() const {
  const Warp& w = warps_[current_->t.warp];
  return w.present & ~w.exited;
}

std::string BlockRunner::deadlock_report() const {
  std::string s = format("deadlock in block (%u,%u,%u):", t_block_idx.x, t_block_idx.y, t_block_idx.z);
  if (arrived_) s += format("\n  %d thread(s) wait at %s (%s:%d)", arrived_, bar_what_, bar_file_, bar_line_);
  for (size_t w = 0; w < warps_.size(); ++w)
    for (const Pending& p : warps_[w].pending)
      if (p.arrived)
        s += format("\n  warp %zu: lanes 0x%08x wait at %s (%s:%d) for lanes 0x%08x", w, p.arrived, p.what, p.file,
                    p.line, p.expect & ~p.arrived);
  s += mbarrier_report();
  s += named_report();
  if (exited_) s += format("\n  %d thread(s) have returned", exited_);
  return s;
}

// ---- the entry points the built-ins call ------------------------------------------------------------
int block_barrier(Barrier kind, int pred, const char* what, const char* file, int line) {
  return t_runner->barrier(kind, pred, what, file, line);
}
void warp_collective(unsigned mask, const char* what, const char* file, int line, CollectiveFn fn,
                     const void* arg) {
  t_runner->collective(mask, what, file, line, fn, arg);
}
unsigned active_mask() { return t_runner->active_mask(); }
void mbarrier_init(void* bar, unsigned count, const char* file, int line) {
  t_runner->mbarrier_init(bar, count, file, line);
}
uint64_t mbarrier_arrive(void* bar, unsigned tx_bytes, const char* what, const char* file, int line) {
  return t_runner->mbarrier_arrive(bar, tx_bytes, what, file, line);
}
void mbarrier_tx(void* bar, long long delta, const char* what, const char* file, int line) {
  t_runner->mbarrier_tx(bar, delta, what, file, line);
}
void mbarrier_wait_parity(void* bar, unsigned parity, const char* file, int line) {
  t_runner->mbarrier_wait_parity(bar, parity, file, line);
}
void named_barrier(unsigned id, unsigned threads, bool wait, const char* file, int line) {
  t_runner->named_barrier(id, threads, wait, file, line);
}
void tma_load(void* dst, const void* map, int rank, const int* coords, void* bar, const char* file, int line) {
  t_runner->tma_load(dst, map, rank, coords, bar, file, line);
}
void register_change(unsigned warp, bool inc, unsigned regs, const char* file, int line) {
  t_runner->register_change(warp, inc, regs, file, line);
}
void* dynamic_smem_base() { return t_runner->dynamic_smem(); }
void kernel_error(const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t_runner->fail("%s [%s:%d]", buf, file, line);
}

std::string current_thread_name() { return t_thread ? who() : std::string(); }

}  // namespace simt::detail
