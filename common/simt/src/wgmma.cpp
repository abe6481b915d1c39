// wgmma.cpp: wgmma.mma_async and its fence, commit and wait (simt/wgmma.cuh). A warpgroup's
// wgmma is four independent products, one per warp (its 16 rows of A and D, all of B), so each
// warp runs its part as a warp collective: the operands are read from shared memory when issued,
// and the accumulators written at the wait that completes the group. The warpgroup's agreement is
// checked by comparing each warp's k-th wgmma with the first warp's to get there.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "block_runner.h"
#include "simt/cpu/counters_hooks.h"
#include "simt/fragments.h"

namespace simt::detail {

namespace {

struct Descriptor {
  size_t start, lbo, sbo;
  unsigned span;  // the swizzle's, in bytes (0: none)
};

Descriptor decode(uint64_t desc) {
  static constexpr unsigned kSpan[4] = {0, 128, 64, 32};  // the field's encoding (WgmmaSwizzle)
  return {(desc & 0x3FFF) << 4, (desc >> 16 & 0x3FFF) << 4, (desc >> 32 & 0x3FFF) << 4, kSpan[desc >> 62]};
}

// The byte offset in dynamic shared memory of element (r, k) of an operand: r its row in M or N,
// k in 0..15 (the layouts of simt/wgmma.cuh).
size_t element_offset(const Descriptor& d, bool mn_major, int r, int k) {
  size_t o;
  if (!mn_major)
    o = d.span ? d.start + (r % 8) * d.span + (r / 8) * d.sbo + 2 * k
               : d.start + (r % 8) * 16 + (r / 8) * d.sbo + (k / 8) * d.lbo + (k % 8) * 2;
  else if (d.span)
    o = d.start + (r % (d.span / 2)) * 2 + (r / (d.span / 2)) * d.lbo + (k % 8) * d.span + (k / 8) * d.sbo;
  else
    o = d.start + (r % 8) * 2 + (r / 8) * d.sbo + (k % 8) * 16 + (k / 8) * d.lbo;
  return swizzled(o, d.span);
}

float widen(uint16_t bits, bool bf16) {
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(bits)) : __half2float(__ushort_as_half(bits));
}

}  // namespace

// Rows r0 .. r0 + rows - 1 of the operand `desc` describes, element (r, k) at out[(r - r0) * 16 + k].
void BlockRunner::wgmma_gather(uint64_t desc, bool mn_major, int r0, int rows, uint16_t* out, const char* operand,
                               const char* file, int line) {
  const Descriptor d = decode(desc);
  if (desc >> 49 & 7)
    fail("wgmma (%s:%d): %s's descriptor has a base offset (%u): not emulated (start a swizzled tile at its pattern's "
         "alignment instead)",
         file, line, operand, static_cast<unsigned>(desc >> 49 & 7));
  if (d.span) {
    const size_t pattern = 8 * d.span;
    const bool aligned = mn_major ? d.start % pattern == 0 : d.start % pattern + 32 <= d.span;
    if (!aligned)
      fail("wgmma (%s:%d): %s starts at dynamic shared memory + %zu: with a %u-byte swizzle its first row must start "
           "at a multiple of %zu bytes%s",
           file, line, operand, d.start, d.span, pattern,
           mn_major ? "" : " (its 16 columns, 32 bytes, within the row's span)");
  }
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < 16; ++k) {
      const size_t o = element_offset(d, mn_major, r0 + r, k);
      if (o + 2 > smem_bytes_)
        fail("wgmma (%s:%d): element (%d, %d) of %s lies at dynamic shared memory + %zu, past its %zu bytes (the "
             "descriptor: start %zu, leading byte offset %zu, stride byte offset %zu, swizzle %u)",
             file, line, r0 + r, k, operand, o, smem_bytes_, d.start, d.lbo, d.sbo, d.span);
      std::memcpy(&out[r * 16 + k], smem_ + o, 2);
    }
}

void BlockRunner::wgmma_issue(Thread* const* lanes, const WgmmaShape& s) {
  const char* file = t_thread->file;
  const int line = t_thread->line;
  if (n_ % 128 != 0)
    fail("wgmma (%s:%d): the block's %d threads are not whole warpgroups (4 warps of 32)", file, line, n_);
  const unsigned w = lanes[0]->warp;
  Warp& warp = warps_[w];
  if (!warp.wgmma_fenced)
    fail("wgmma (%s:%d) in warp %u without a wgmma_fence since %s: registers written before it may not be what the "
         "tensor cores read",
         file, line, w, warp.wgmma_waits ? "its last wgmma_wait" : "the kernel's start");
  WgmmaLane lane[32];
  for (int l = 0; l < 32; ++l) std::memcpy(&lane[l], lanes[l]->in, sizeof(WgmmaLane));
  for (int l = 1; l < 32; ++l)
    if (lane[l].desc_a != lane[0].desc_a || lane[l].desc_b != lane[0].desc_b ||
        lane[l].accumulate != lane[0].accumulate)
      fail("wgmma (%s:%d): lanes 0 and %d of warp %u pass different descriptors or scale-d (0x%llx, 0x%llx, %d and "
           "0x%llx, 0x%llx, %d)",
           file, line, l, w, static_cast<unsigned long long>(lane[0].desc_a),
           static_cast<unsigned long long>(lane[0].desc_b), lane[0].accumulate,
           static_cast<unsigned long long>(lane[l].desc_a), static_cast<unsigned long long>(lane[l].desc_b),
           lane[l].accumulate);

  // The warpgroup's k-th wgmma must be the same in each of its warps.
  WgmmaRecords& group = wgmma_records_[w / 4];
  const WgmmaRecord mine{s.n,      s.bf16,          s.a_in_registers, s.trans_a, s.trans_b, lane[0].accumulate != 0,
                         lane[0].desc_a, lane[0].desc_b, file,             line,      1};
  const unsigned long long k = warp.wgmma_issued++;
  if (k - group.base == group.records.size()) {
    group.records.push_back(mine);
  } else {
    WgmmaRecord& first = group.records[k - group.base];
    if (first.n != mine.n || first.bf16 != mine.bf16 || first.a_in_registers != mine.a_in_registers ||
        first.trans_a != mine.trans_a || first.trans_b != mine.trans_b || first.accumulate != mine.accumulate ||
        first.desc_a != mine.desc_a || first.desc_b != mine.desc_b)
      fail("wgmma (%s:%d) in warp %u differs from the wgmma (%s:%d) another warp of its warpgroup issued as its wgmma "
           "%llu (shape, types, operands or descriptors): the 4 warps of a warpgroup issue the same wgmma",
           file, line, w, first.file, first.line, k + 1);
    ++first.seen;
    while (!group.records.empty() && group.records.front().seen == 4) {
      group.records.pop_front();
      ++group.base;
    }
  }

  // Built in place: a failure below leaves it to the warp, which the next block's prepare() resets.
  WgmmaOp& op = warp.wgmma.emplace_back();
  op.shape = s;
  op.accumulate = lane[0].accumulate != 0;
  op.desc_a = lane[0].desc_a;
  op.desc_b = lane[0].desc_b;
  op.file = file;
  op.line = line;
  const int r0 = 16 * static_cast<int>(w % 4);
  if (s.a_in_registers) {
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 8; ++i)
        std::memcpy(&op.a[frag::a_row(l, i) * 16 + frag::a_col(l, i)],
                    reinterpret_cast<const unsigned char*>(lane[l].a) + 2 * i, 2);
  } else {
    wgmma_gather(op.desc_a, s.trans_a, r0, 16, op.a.data(), "A", file, line);
  }
  wgmma_gather(op.desc_b, s.trans_b, 0, s.n, op.b.data(), "B", file, line);
  counters::wgmma(s.n, !s.a_in_registers);
  for (int l = 0; l < 32; ++l) {
    op.d[l] = lane[l].d;
    op.flight[l] = lane[l].flight;
    ++op.flight[l]->ops;
    op.flight[l]->file = file;
    op.flight[l]->line = line;
  }
}

void BlockRunner::wgmma_commit(unsigned w) {
  Warp& warp = warps_[w];
  for (WgmmaOp& op : warp.wgmma)
    if (op.group < 0) op.group = static_cast<int>(warp.wgmma_groups);
  ++warp.wgmma_groups;
}

void BlockRunner::wgmma_wait(unsigned w, int pending, const char* file, int line) {
  Warp& warp = warps_[w];
  warp.wgmma_fenced = false;
  ++warp.wgmma_waits;
  const long long done_below = static_cast<long long>(warp.wgmma_groups) - pending;
  size_t kept = 0;
  for (size_t i = 0; i < warp.wgmma.size(); ++i) {
    WgmmaOp& op = warp.wgmma[i];
    if (op.group < 0 || op.group >= done_below) {
      if (kept != i) warp.wgmma[kept] = op;
      ++kept;
      continue;
    }
    // The GPU reads the operands at some time before the wait: they must not change meanwhile.
    const int r0 = 16 * static_cast<int>(w % 4);
    const size_t b_words = static_cast<size_t>(op.shape.n) * 16;
    wgmma_gather(op.desc_b, op.shape.trans_b, 0, op.shape.n, wgmma_now_.data(), "B", op.file, op.line);
    bool changed = !std::equal(op.b.begin(), op.b.begin() + static_cast<long>(b_words), wgmma_now_.begin());
    if (!op.shape.a_in_registers) {
      wgmma_gather(op.desc_a, op.shape.trans_a, r0, 16, wgmma_now_.data(), "A", op.file, op.line);
      changed |= !std::equal(op.a.begin(), op.a.end(), wgmma_now_.begin());
    }
    if (changed)
      fail("wgmma (%s:%d): its shared-memory operands were written before the wgmma_wait (%s:%d) that completes it; "
           "a GPU may read either value",
           op.file, op.line, file, line);
    float A[16][16];
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 16; ++k) A[r][k] = widen(op.a[r * 16 + k], op.shape.bf16);
    for (size_t e = 0; e < b_words; ++e) wgmma_b_[e] = widen(op.b[e], op.shape.bf16);
    for (int l = 0; l < 32; ++l) {
      for (int e = 0; e < op.shape.n / 2; ++e) {
        const int r = frag::c_row(l, e & 3), c = frag::wgmma_d_col(l, e);
        // As mma.sync's emulation: exact products, one rounding (the tensor cores' order of
        // accumulation is unspecified; results agree to rounding).
        double acc = op.accumulate ? op.d[l][e] : 0.0;
        for (int k = 0; k < 16; ++k) acc += static_cast<double>(A[r][k]) * wgmma_b_[static_cast<size_t>(c) * 16 + k];
        op.d[l][e] = static_cast<float>(acc);
      }
      --op.flight[l]->ops;
    }
  }
  warp.wgmma.resize(kept);
}

// (A warp with wgmma in flight failed when its first lane returned: BlockRunner::on_exit.)
std::string BlockRunner::wgmma_unfinished() const {
  for (size_t w = 0; w < warps_.size(); ++w) {
    const Warp& first = warps_[w / 4 * 4];
    if (warps_[w].wgmma_issued != first.wgmma_issued) {
      const WgmmaRecords& g = wgmma_records_[w / 4];
      const WgmmaRecord* r = g.records.empty() ? nullptr : &g.records.front();
      return format("block (%u,%u,%u): warp %zu issued %llu wgmma and warp %zu of its warpgroup %llu%s%s%s: the 4 "
                    "warps of a warpgroup issue the same wgmma",
                    t_block_idx.x, t_block_idx.y, t_block_idx.z, w, warps_[w].wgmma_issued, w / 4 * 4,
                    first.wgmma_issued, r ? " (the first unmatched at " : "", r ? r->file : "",
                    r ? format(":%d)", r->line).c_str() : "");
    }
  }
  return {};
}

void wgmma_issue(Thread* const* lanes, unsigned mask, const void* shape) {
  require_arch(90, "wgmma.mma_async", t_thread->file, t_thread->line, true);
  if (mask != 0xffffffffu)
    kernel_error(t_thread->file, t_thread->line, "wgmma needs all 32 lanes of each warp (mask 0x%08x)", mask);
  BlockRunner::current()->wgmma_issue(lanes, *static_cast<const WgmmaShape*>(shape));
}
void wgmma_fence(Thread* const* lanes, unsigned mask, const void*) {
  if (mask != 0xffffffffu)
    kernel_error(t_thread->file, t_thread->line, "wgmma_fence needs all 32 lanes of each warp (mask 0x%08x)", mask);
  BlockRunner::current()->wgmma_fence(lanes[0]->warp);
}
void wgmma_commit(Thread* const* lanes, unsigned mask, const void*) {
  if (mask != 0xffffffffu)
    kernel_error(t_thread->file, t_thread->line, "wgmma_commit needs all 32 lanes of each warp (mask 0x%08x)", mask);
  BlockRunner::current()->wgmma_commit(lanes[0]->warp);
}
void wgmma_wait(Thread* const* lanes, unsigned mask, const void* pending) {
  if (mask != 0xffffffffu)
    kernel_error(t_thread->file, t_thread->line, "wgmma_wait needs all 32 lanes of each warp (mask 0x%08x)", mask);
  BlockRunner::current()->wgmma_wait(lanes[0]->warp, *static_cast<const int*>(pending), t_thread->file,
                                     t_thread->line);
}
uint32_t wgmma_smem_offset(const void* p, const char* file, int line) {
  BlockRunner& r = *BlockRunner::current();
  const auto* base = static_cast<const unsigned char*>(r.dynamic_smem());
  const auto* q = static_cast<const unsigned char*>(p);
  if (q < base || q >= base + r.dynamic_smem_bytes())
    kernel_error(file, line, "wgmma_desc: %p is not in the block's dynamic shared memory (the emulator's descriptors "
                 "address it alone)", p);
  if ((q - base) % 16 != 0)
    kernel_error(file, line, "wgmma_desc: dynamic shared memory + %zu is not 16-byte aligned", static_cast<size_t>(q - base));
  return static_cast<uint32_t>(q - base);
}
void wgmma_out_of_scope(const WgmmaInFlight& f) {
  kernel_error(f.file, f.line,
               "an accumulator of this wgmma went out of scope before the wgmma_wait that completes it (the wgmma "
               "would write registers that hold something else by then)");
}
void wgmma_early_access(const WgmmaInFlight& f) {
  kernel_error(f.file, f.line,
               "an accumulator of this wgmma was read, written or copied before the wgmma_wait that completes it (on "
               "a GPU it holds no defined value until then)");
}

}  // namespace simt::detail
