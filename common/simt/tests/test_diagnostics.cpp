// test_diagnostics.cpp: every mistake the emulator promises to report is reported, with the place
// it happened, as a launch error; none hangs. (cpu backend only: on a GPU these kernels hang.)
#include <cmath>
#include <string>

#include "buggy_kernels.h"
#include "simt/cpu/launch.h"
#include "support.h"

using namespace simt_tests;
using Catch::Matchers::Contains;

namespace {
// Launches the bug quietly and returns the error message of the launch.
std::string failure_of(Bug bug, size_t smem = 0) {
  simt::Schedule s = simt::schedule();
  const simt::Schedule saved = s;
  s.quiet = true;
  simt::set_schedule(s);
  Device<int> out(128), in(128);
  const cudaError_t e = run_buggy(bug, out.get(), in.get(), smem);
  simt::set_schedule(saved);
  REQUIRE(e != cudaSuccess);
  REQUIRE(cudaGetLastError() == e);          // reported once, like the runtime does
  REQUIRE(cudaGetLastError() == cudaSuccess);
  return simt::last_launch_error();
}
void with_quiet_schedules(const std::function<void()>& check) {
  for_each_schedule([&] { check(); });
}
}  // namespace

TEST_CASE("a __syncthreads in divergent code names both places", "[simt][diagnostics]") {
  with_quiet_schedules([] {
    const std::string m = failure_of(Bug::divergent_barrier);
    CHECK_THAT(m, Contains("divergent __syncthreads"));
    CHECK_THAT(m, Contains("buggy_kernels.cu:15"));
    CHECK_THAT(m, Contains("buggy_kernels.cu:17"));
  });
}

TEST_CASE("a barrier after some threads returned is an error by default", "[simt][diagnostics]") {
  with_quiet_schedules([] {
    const std::string m = failure_of(Bug::barrier_after_return);
    CHECK_THAT(m, Contains("returned"));
    CHECK_THAT(m, Contains("buggy_kernels.cu:24"));
  });
  // ... and counted as arrived when asked for (what the hardware does in practice).
  simt::Schedule s = simt::schedule();
  const simt::Schedule saved = s;
  s.lenient_exit = true;
  simt::set_schedule(s);
  Device<int> out(128), in(128);
  const cudaError_t e = run_buggy(Bug::barrier_after_return, out.get(), in.get());
  simt::set_schedule(saved);
  REQUIRE(e == cudaSuccess);
  const auto h = out.host();
  for (int t = 0; t < 64; ++t) REQUIRE(h[static_cast<size_t>(t)] == (t == 3 ? 0 : 1));
}

TEST_CASE("warp collectives: mismatched masks, a lane outside the mask, a lane that returned", "[simt][diagnostics]") {
  with_quiet_schedules([] {
    // Which lanes get there first decides how the mismatch shows (a divergence, or a mask that
    // names lanes which already left); the place is named either way.
    std::string m = failure_of(Bug::mismatched_masks);
    CHECK_THAT(m, Contains("__shfl_xor_sync (common/simt/tests/buggy_kernels.cu:30"));
    if (simt::schedule().order == simt::Order::reverse) CHECK_THAT(m, Contains("divergent warp collective"));
    m = failure_of(Bug::shuffle_outside_mask);
    CHECK_THAT(m, Contains("not in mask 0x0000ffff"));
    CHECK_THAT(m, Contains("buggy_kernels.cu:34"));
    m = failure_of(Bug::warp_collective_after_return);
    CHECK_THAT(m, Contains("returned"));
    CHECK_THAT(m, Contains("buggy_kernels.cu:48"));
  });
}

TEST_CASE("a deadlock is reported with who waits where", "[simt][diagnostics]") {
  with_quiet_schedules([] {
    const std::string m = failure_of(Bug::deadlock);
    CHECK_THAT(m, Contains("deadlock in block (0,0,0)"));
    CHECK_THAT(m, Contains("16 thread(s) wait at __syncthreads (common/simt/tests/buggy_kernels.cu:42)"));
    CHECK_THAT(m, Contains("lanes 0x0000ffff wait at __shfl_xor_sync (common/simt/tests/buggy_kernels.cu:40) for lanes 0xffff0000"));
  });
}

TEST_CASE("tensor-core instructions check their operands", "[simt][diagnostics]") {
  with_quiet_schedules([] {
    CHECK_THAT(failure_of(Bug::misaligned_ldmatrix), Contains("not 16-byte aligned"));
    CHECK_THAT(failure_of(Bug::mma_by_half_a_warp), Contains("returned"));
  });
}

TEST_CASE("dynamic shared memory: above 48 KB needs the opt-in, above 227 KB is refused", "[simt][diagnostics]") {
  const std::string m = failure_of(Bug::smem_without_opt_in, 48 * 1024 + 16);
  CHECK_THAT(m, Contains("opt in"));
  // With the opt-in the launch helper does, 100 KB runs...
  Device<int> out(128), in(128);
  REQUIRE(run_buggy(Bug::smem_with_opt_in, out.get(), in.get(), 100 * 1024) == cudaSuccess);
  REQUIRE(out.host()[31] == 1);
  // ...and more than 227 KB cannot be opted in to.
  simt::Schedule s = simt::schedule();
  const simt::Schedule saved = s;
  s.quiet = true;
  simt::set_schedule(s);
  REQUIRE(run_buggy(Bug::smem_with_opt_in, out.get(), in.get(), 227 * 1024 + 16) == cudaErrorInvalidValue);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(run_buggy(Bug::too_many_threads, out.get(), in.get()) == cudaErrorInvalidConfiguration);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidConfiguration);
  simt::set_schedule(saved);
}

TEST_CASE("a missing barrier shows up as a wrong result in some schedule order", "[simt][diagnostics]") {
  std::vector<int> in(128);
  for (int i = 0; i < 128; ++i) in[static_cast<size_t>(i)] = 3 * i + 1;
  auto wrong_values = [&](simt::Order order) {
    simt::Schedule s = simt::schedule();
    const simt::Schedule saved = s;
    s.order = order;
    simt::set_schedule(s);
    Device<int> din(in), out(128);
    REQUIRE(run_buggy(Bug::missing_barrier, out.get(), din.get()) == cudaSuccess);
    simt::set_schedule(saved);
    const auto h = out.host();
    int wrong = 0;
    for (int t = 1; t < 128; ++t) wrong += h[static_cast<size_t>(t)] != in[static_cast<size_t>(t - 1)];
    return wrong;
  };
  // In forward order each thread runs after its left neighbour: the bug stays hidden...
  CHECK(wrong_values(simt::Order::forward) == 0);
  // ...which is why the tests also run in reverse and shuffled order.
  CHECK(wrong_values(simt::Order::reverse) == 127);
  CHECK(wrong_values(simt::Order::shuffle) > 0);
}

TEST_CASE("unwritten dynamic shared memory and cp.async without wait read as NaN", "[simt][diagnostics]") {
  for_each_schedule([] {
    Device<float> out(128), in(std::vector<float>(128, 2.0f));
    REQUIRE(run_buggy(Bug::read_unwritten, out.get(), in.get()) == cudaSuccess);
    const auto unwritten = out.host();
    for (int t = 0; t < 32; ++t) REQUIRE(std::isnan(unwritten[static_cast<size_t>(t)]));
    REQUIRE(run_buggy(Bug::cp_async_without_wait, out.get(), in.get()) == cudaSuccess);
    const auto early = out.host();
    for (int i = 0; i < 128; ++i) REQUIRE(std::isnan(early[static_cast<size_t>(i)]));
  });
}

TEST_CASE("an mbarrier's misuses are reported with its place, and a wait no arrival ends as a deadlock",
          "[simt][diagnostics][mbarrier]") {
  with_quiet_schedules([] {
    const std::string missing = failure_of(Bug::mbarrier_missing_arrival);
    CHECK_THAT(missing, Contains("deadlock in block (0,0,0)"));
    CHECK_THAT(missing, Contains("32 thread(s) wait at mbarrier_wait_parity (common/simt/tests/buggy_kernels.cu:107) "
                                 "for the phase of parity 0 of the mbarrier at dynamic shared memory + 0 (initialised "
                                 "at common/simt/tests/buggy_kernels.cu:98, count 2): its phase 0 has 1 of 2 arrivals "
                                 "to come and 0 transaction bytes"));
    const std::string extra = failure_of(Bug::mbarrier_extra_arrival);
    CHECK_THAT(extra, Contains("mbarrier_arrive (common/simt/tests/buggy_kernels.cu:115): one arrival more than the "
                               "count 2"));
    CHECK_THAT(extra, Contains("waits for 16 transaction bytes"));
    const std::string beyond = failure_of(Bug::mbarrier_bytes_beyond);
    CHECK_THAT(beyond, Contains("the mbarrier at dynamic shared memory + 0 (initialised at "
                                "common/simt/tests/buggy_kernels.cu:98) ends the block"));
    CHECK_THAT(beyond, Contains("32 transaction bytes completed beyond those announced"));
    CHECK_THAT(failure_of(Bug::mbarrier_uninitialised),
               Contains("mbarrier_arrive (common/simt/tests/buggy_kernels.cu:129): no mbarrier at dynamic shared "
                        "memory + 8"));
    // Thread 0 initialises; whoever runs before it finds no barrier, whoever after finds it not
    // yet visible: both name the missing __syncthreads.
    const std::string early = failure_of(Bug::mbarrier_before_sync);
    CHECK_THAT(early, Contains("buggy_kernels.cu:136"));
    CHECK_THAT(early, Contains("__syncthreads"));
    CHECK_THAT(failure_of(Bug::mbarrier_overwritten),
               Contains("(common/simt/tests/buggy_kernels.cu:144): the mbarrier at dynamic shared memory + 0 "
                        "(initialised at common/simt/tests/buggy_kernels.cu:98) was overwritten"));
  });
}

TEST_CASE("a named barrier left waiting is a deadlock naming it; two counts for one barrier are an error",
          "[simt][diagnostics][named_barrier]") {
  with_quiet_schedules([] {
    const std::string alone = failure_of(Bug::named_barrier_alone);
    CHECK_THAT(alone, Contains("deadlock in block (0,0,0)"));
    CHECK_THAT(alone, Contains("32 thread(s) wait at named barrier 1 (use begun at "
                               "common/simt/tests/buggy_kernels.cu:149) for 64 threads: 32 arrived in whole warps"));
    const std::string counts = failure_of(Bug::named_barrier_counts);
    CHECK_THAT(counts, Contains("named_barrier_sync (common/simt/tests/buggy_kernels.cu:154): barrier 1 for "));
    CHECK_THAT(counts, Contains("while its use begun at common/simt/tests/buggy_kernels.cu:154 is for "));
  });
}

TEST_CASE("setmaxnreg: the warps of a warpgroup must make the same calls, in whole warpgroups",
          "[simt][diagnostics][warpgroup]") {
  with_quiet_schedules([] {
    const std::string disagree = failure_of(Bug::setmaxnreg_disagree);
    CHECK_THAT(disagree, Contains("the 4 warps of a warpgroup must make the same calls"));
    CHECK_THAT(disagree, Contains("setmaxnreg.dec 24 (common/simt/tests/buggy_kernels.cu:160)"));
    CHECK_THAT(disagree, Contains("setmaxnreg.dec 32 (common/simt/tests/buggy_kernels.cu:162)"));
    const std::string skipped = failure_of(Bug::setmaxnreg_skipped);  // "where warp" 1, 2 or 3: the first to call
    CHECK_THAT(skipped, Contains("warp 0 made 0 setmaxnreg where warp "));
    CHECK_THAT(skipped, Contains("of its warpgroup made 1 (the next: setmaxnreg.inc 240 at "
                                 "common/simt/tests/buggy_kernels.cu:168)"));
    CHECK_THAT(failure_of(Bug::setmaxnreg_partial_group),
               Contains("setmaxnreg.inc 240 (common/simt/tests/buggy_kernels.cu:173): the block's 96 threads are not "
                        "whole warpgroups"));
  });
}

TEST_CASE("a TMA box lands at the mbarrier wait, and its destination must suit its swizzle", "[simt][diagnostics][tma]") {
  for_each_schedule([] {
    Device<int> out(128), in(std::vector<int>(128, 0x12341234));
    REQUIRE(run_buggy(Bug::tma_without_wait, out.get(), in.get()) == cudaSuccess);
    const auto early = out.host();
    for (int t = 0; t < 32; ++t) REQUIRE(early[static_cast<size_t>(t)] == 0xFFFF);  // the poison, not 0x1234
  });
  with_quiet_schedules([] {
    CHECK_THAT(failure_of(Bug::tma_misaligned),
               Contains("tma_load_2d (common/simt/tests/buggy_kernels.cu:186): the destination, dynamic shared memory "
                        "+ 128, is not 256-byte aligned (the swizzle's pattern)"));
  });
}

TEST_CASE("a named barrier's third warp waits for the next use; a hidden extra arrival; setmaxnreg's pool and order",
          "[simt][diagnostics][named_barrier][mbarrier][warpgroup]") {
  with_quiet_schedules([] {
    // Whatever order the lanes come in, the warp left over waits whole (none of its lanes run on
    // with the two warps released).
    CHECK_THAT(failure_of(Bug::named_barrier_three_warps),
               Contains("32 thread(s) wait at named barrier 1 (use begun at common/simt/tests/buggy_kernels.cu:216) for "
                        "64 threads: 32 arrived in whole warps"));
    CHECK_THAT(failure_of(Bug::mbarrier_extra_expect_tx),
               Contains("mbarrier_arrive_expect_tx (common/simt/tests/buggy_kernels.cu:226): one arrival more than the "
                        "count 1"));
    const std::string pool = failure_of(Bug::setmaxnreg_too_many);
    CHECK_THAT(pool, Contains("the block's warpgroups would hold 67584 registers, more than an SM's 65536"));
    const std::string lowering = failure_of(Bug::setmaxnreg_lowering_inc);  // the first warp to get there
    CHECK_THAT(lowering, Contains("setmaxnreg.inc 232 (common/simt/tests/buggy_kernels.cu:242): warp "));
    CHECK_THAT(lowering, Contains(" has 240 registers per thread; .inc may not lower that"));
  });
}

TEST_CASE("wgmma: a fence first, accumulators and operands left alone until the wait, whole warpgroups that agree",
          "[simt][diagnostics][wgmma]") {
  with_quiet_schedules([] {
    CHECK_THAT(failure_of(Bug::wgmma_read_before_wait),
               Contains("an accumulator of this wgmma was read, written or copied before the wgmma_wait that completes "
                        "it (on a GPU it holds no defined value until then) [common/simt/tests/buggy_kernels.cu:261]"));
    // wgmma_wait<1> leaves the newer group in flight: reading its accumulator names its wgmma.
    CHECK_THAT(failure_of(Bug::wgmma_read_newer_group),
               Contains("read, written or copied before the wgmma_wait that completes it (on a GPU it holds no defined "
                        "value until then) [common/simt/tests/buggy_kernels.cu:328]"));
    CHECK_THAT(failure_of(Bug::wgmma_out_of_scope),
               Contains("an accumulator of this wgmma went out of scope before the wgmma_wait that completes it (the "
                        "wgmma would write registers that hold something else by then) "
                        "[common/simt/tests/buggy_kernels.cu:341]"));
    CHECK_THAT(failure_of(Bug::wgmma_without_fence),
               Contains("wgmma (common/simt/tests/buggy_kernels.cu:271) in warp "));
    CHECK_THAT(failure_of(Bug::wgmma_without_fence), Contains(" without a wgmma_fence since the kernel's start"));
    CHECK_THAT(failure_of(Bug::wgmma_operand_overwritten),
               Contains("wgmma (common/simt/tests/buggy_kernels.cu:282): its shared-memory operands were written before "
                        "the wgmma_wait (common/simt/tests/buggy_kernels.cu:285) that completes it"));
    CHECK_THAT(failure_of(Bug::wgmma_misaligned_swizzle),
               Contains("wgmma (common/simt/tests/buggy_kernels.cu:295): B starts at dynamic shared memory + 128: with a "
                        "128-byte swizzle its first row must start at a multiple of 1024 bytes"));
    CHECK_THAT(failure_of(Bug::wgmma_returns_in_flight),
               Contains("went out of scope before the wgmma_wait that completes it (the wgmma would write registers "
                        "that hold something else by then) [common/simt/tests/buggy_kernels.cu:306]"));
    CHECK_THAT(failure_of(Bug::wgmma_warps_disagree),
               Contains("differs from the wgmma (common/simt/tests/buggy_kernels.cu:315) another warp of its warpgroup "
                        "issued as its wgmma 1"));
    CHECK_THAT(failure_of(Bug::wgmma_partial_warpgroup),
               Contains("wgmma (common/simt/tests/buggy_kernels.cu:261): the block's 96 threads are not whole warpgroups"));
  });
}

TEST_CASE("a named barrier's lanes of one warp must execute the same bar instruction",
          "[simt][diagnostics][named_barrier]") {
  with_quiet_schedules([] {
    // Which lane the message names depends on the order; both lines and the rule are always there.
    const std::string m = failure_of(Bug::named_barrier_divergent);
    CHECK_THAT(m, Contains("divergent named barrier in warp "));
    CHECK_THAT(m, Contains("common/simt/tests/buggy_kernels.cu:349"));
    CHECK_THAT(m, Contains("common/simt/tests/buggy_kernels.cu:350"));
    CHECK_THAT(m, Contains("bar.sync and bar.arrive are .aligned"));
  });
}

// What the emulator sees of lanes that run a loop of warp collectives different numbers of times:
// it pairs the lanes' arrivals at one line of code, in order, and cannot tell loop iterations apart.
TEST_CASE("lanes in different iterations of a loop: caught where they meet at different lines, not at one",
          "[simt][diagnostics]") {
  with_quiet_schedules([] {
    const std::string m = failure_of(Bug::mma_loop_exit);
    CHECK_THAT(m, Contains("divergent warp collective in warp 0"));
    CHECK_THAT(m, Contains("common/simt/tests/buggy_kernels.cu:359"));
    CHECK_THAT(m, Contains("common/simt/tests/buggy_kernels.cu:360"));
  });
  // At one line the k-th mma of each lane is paired with the k-th of the others, whichever
  // iteration it belongs to: this runs without a report (notes/emulator.md, section 6), where a GPU
  // would execute the .aligned mma.sync with part of the warp.
  for_each_schedule([] {
    Device<float> out(128), in(128);
    REQUIRE(run_buggy(Bug::mma_loop_iterations, out.get(), in.get()) == cudaSuccess);
  });
}
