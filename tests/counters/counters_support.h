// counters_support.h: what the [counters] tests share.
#pragma once
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "simt/counters.h"
#include "support.h"  // the emulator's tests': Device, for_each_schedule

namespace counters_test {

using simt_tests::Device;

// The counters of the launches `run` makes, summed; every k-th block sampled.
inline simt::Counters count(const std::function<cudaError_t()>& run, int sample_blocks = 1) {
  simt::counters::start({sample_blocks});
  const cudaError_t e = run();
  simt::counters::stop();
  REQUIRE(e == cudaSuccess);
  simt::Counters sum;
  for (const simt::LaunchCounters& l : simt::counters::take()) sum += l.counters;
  return sum;
}

// Every field, so that a difference in any counter shows.
inline std::vector<double> fields(const simt::Counters& c) {
  std::vector<double> f = {c.launches, c.blocks, c.blocks_counted, c.dram_read_sectors, c.dram_write_sectors,
                           c.block_load_sectors, c.fill_sectors, c.drain_sectors, c.mma, c.mma_flop, c.mufu, c.barriers, c.shuffles, c.votes,
                           c.syncwarps, c.wgmma, c.wgmma_flop, c.producer_warps, c.ring_stages, c.ring_lag, c.ring_stage_bytes,
                           c.ring_tiles, c.ring_refills, c.grid_x, c.grid_y, c.grid_z};
  f.insert(f.end(), std::begin(c.shared_sectors), std::end(c.shared_sectors));
  f.insert(f.end(), std::begin(c.shared_reads), std::end(c.shared_reads));
  f.insert(f.end(), std::begin(c.reread_l1), std::end(c.reread_l1));
  f.insert(f.end(), std::begin(c.reread_l2), std::end(c.reread_l2));
  for (const simt::GlobalOps& g : c.global) f.insert(f.end(), {g.requests, g.lanes, g.bytes, g.sectors, g.lines});
  for (const simt::SharedOps& s : c.shared) f.insert(f.end(), {s.requests, s.wavefronts, s.ideal});
  return f;
}

// Runs `counted` in every schedule order with one and two workers, and checks that every field of
// what it returns is the same each time.
inline void same_in_every_schedule(const std::function<simt::Counters()>& counted) {
  std::vector<double> first;
  simt_tests::for_each_schedule([&] {
    const std::vector<double> f = fields(counted());
    if (first.empty())
      first = f;
    else
      for (size_t i = 0; i < f.size(); ++i) {
        INFO("field " << i);
        CHECK(f[i] == first[i]);
      }
  });
}

}  // namespace counters_test
