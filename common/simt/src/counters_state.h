// counters_state.h: the state of the counters (simt/counters.h) that every instrumented access
// reaches: counters.cpp keeps it, tsan_callbacks.cpp feeds it. An access costs a few compares
// when it is not a kernel's global or shared access, a bit set in a bitmap when its block is not
// sampled, and one 16-byte record appended to its lane's stream when it is.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "simt/counters.h"
#include "simt/cpu/launch.h"

namespace simt::detail::counters {

// What an access is. Loads, stores and atomics come from the instrumentation; the others from the
// shim's hooks (cp.async, ldmatrix).
enum Kind : unsigned {
  kLd, kSt, kAtom, kCpSrc, kCpDst,
  kLdsmX1, kLdsmX2, kLdsmX4, kLdsmX1T, kLdsmX2T, kLdsmX4T,
};
enum Space : unsigned { kGlobal, kShared };

// One access in its lane's stream: the instruction (a return address, or a tag for the shim's
// sites) and, packed in `word`, the address (bits 0-47), size (48-55), kind (56-59) and space
// (60). A record with pc 0 is a marker: the accesses after it belong to epoch `word`.
struct Rec {
  uintptr_t pc;
  uint64_t word;
};
constexpr uint64_t kAddrMask = (uint64_t{1} << 48) - 1;
inline uint64_t pack(uintptr_t addr, unsigned size, Kind k, Space s) {
  return (addr & kAddrMask) | uint64_t{size} << 48 | uint64_t{k} << 56 | uint64_t{s} << 60;
}
inline uintptr_t addr_of(uint64_t w) { return w & kAddrMask; }
inline unsigned size_of(uint64_t w) { return (w >> 48) & 0xff; }
inline Kind kind_of(uint64_t w) { return static_cast<Kind>((w >> 56) & 0xf); }
inline Space space_of(uint64_t w) { return static_cast<Space>((w >> 60) & 1); }

// A cudaMalloc allocation: which of its 32-byte sectors the launch read and wrote, and of each
// sector read, the first and last block (linear index + 1; 0: none) that read it: whether other
// blocks read it too, and along which of the grid's dimensions (Counters::shared_sectors).
struct Alloc {
  uintptr_t lo = 0, hi = 0;
  size_t words = 0;  // 64-bit words per bitmap
  std::unique_ptr<std::atomic<uint64_t>[]> read, written;
  std::unique_ptr<std::atomic<uint32_t>[]> first_reader, last_reader;  // one per sector (words x 64)
};

struct Worker;

// What every access reads: constinit, so that reaching it is one instruction.
struct Hot {
  bool counting;  // inside a block of a counted launch
  bool sampled;   // ... whose requests are recorded
  uintptr_t smem_lo, smem_len;  // the block's dynamic shared memory
  uintptr_t tls_lo, tls_len;    // the executable's thread-local block: static __shared__
  uintptr_t skip_lo[4], skip_len[4];  // the emulator's own thread-locals in it (threadIdx, ...)
  uintptr_t last_lo[2], last_len[2];  // the two allocations hit last
  Alloc* last[2];
  // The launch's allocations, when there are few (else find_alloc searches them all).
  static constexpr int kFew = 16;
  int few;
  uintptr_t few_lo[kFew], few_len[kFew];
  Alloc* few_alloc[kFew];
  uint32_t block;  // the running block's linear index + 1
  uint64_t accesses;  // the running block's loads, stores, atomics, TMA rows, cp.async and ldmatrix rows so far (its work: block_end)
  Worker* worker;
  std::vector<Rec>* streams;  // the worker's, one per thread of the block (by linear index)
};
extern thread_local constinit Hot t_hot __attribute__((tls_model("initial-exec")));

Alloc* find_alloc(uintptr_t a);  // the launch's allocation holding a, or nullptr

__attribute__((always_inline)) inline void mark(Alloc* al, uintptr_t a, unsigned size, Kind k) {
  if (size == 0) return;
  const uintptr_t s0 = (a - al->lo) >> 5, s1 = (a + size - 1 - al->lo) >> 5;
  for (uintptr_t s = s0; s <= s1; ++s) {
    const uint64_t bit = uint64_t{1} << (s & 63);
    if (k != kSt) {
      std::atomic<uint64_t>& word = al->read[s >> 6];
      if (!(word.load(std::memory_order_relaxed) & bit)) word.fetch_or(bit, std::memory_order_relaxed);
      // The lowest and highest block to read it: a min and a max, whatever order the blocks ran in.
      const uint32_t b = t_hot.block;
      std::atomic<uint32_t>& lo = al->first_reader[s];
      for (uint32_t x = lo.load(std::memory_order_relaxed); (x == 0 || b < x) && !lo.compare_exchange_weak(x, b, std::memory_order_relaxed);) {
      }
      std::atomic<uint32_t>& hi = al->last_reader[s];
      for (uint32_t x = hi.load(std::memory_order_relaxed); b > x && !hi.compare_exchange_weak(x, b, std::memory_order_relaxed);) {
      }
    }
    if (k == kSt || k == kAtom) {
      std::atomic<uint64_t>& word = al->written[s >> 6];
      if (!(word.load(std::memory_order_relaxed) & bit)) word.fetch_or(bit, std::memory_order_relaxed);
    }
  }
}

// Which space an address of the running kernel is in. false: neither (the lane's stack, that is
// registers and local memory; the kernel's parameters; the emulator's state).
__attribute__((always_inline)) inline bool classify(Hot& h, uintptr_t a, Space& space, Alloc*& al) {
  for (int i = 0; i < 2; ++i)  // a kernel's loop often alternates between two tensors
    if (a - h.last_lo[i] < h.last_len[i]) {
      space = kGlobal, al = h.last[i];
      return true;
    }
  if (a - h.smem_lo < h.smem_len) {
    space = kShared;
    return true;
  }
  if (a - h.tls_lo < h.tls_len) {
    for (int i = 0; i < 4; ++i)
      if (a - h.skip_lo[i] < h.skip_len[i]) return false;
    space = kShared;
    return true;
  }
  al = nullptr;
  for (int i = 0; i < h.few; ++i)
    if (a - h.few_lo[i] < h.few_len[i]) {
      al = h.few_alloc[i];
      break;
    }
  if (al || (h.few < 0 && (al = find_alloc(a)) != nullptr)) {
    h.last[1] = h.last[0], h.last_lo[1] = h.last_lo[0], h.last_len[1] = h.last_len[0];
    h.last[0] = al, h.last_lo[0] = al->lo, h.last_len[0] = al->hi - al->lo;
    space = kGlobal;
    return true;
  }
  return false;
}

// One load, store or atomic of the running GPU thread, made by the instruction at pc.
__attribute__((always_inline)) inline void on_access(uintptr_t a, unsigned size, Kind k, uintptr_t pc) {
  Hot& h = t_hot;
  if (!h.counting) return;
  Space space;
  Alloc* al;
  if (!classify(h, a, space, al)) return;
  ++h.accesses;
  if (space == kGlobal) mark(al, a, size, k);
  if (h.sampled) h.streams[t_thread->linear].push_back(Rec{pc, pack(a, size, k, space)});
}

}  // namespace simt::detail::counters
