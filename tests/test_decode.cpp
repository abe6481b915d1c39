// test_decode.cpp: decoding (chapter 08). Every decoding variant against the fp64 reference over
// the decoding sweep, from a poisoned output, with the cache checked bit for bit after the append
// ([decode]; run by CTest once per schedule order on the cpu backend, once on a GPU); bad inputs
// refused with a message before any work, by the library and by `flashsteps decode` ([cli]).
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "08_decoding/decoding.h"
#include "harness/decode/decode.h"
#include "harness/errors.h"
#include "shell.h"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

// Head layouts (MHA; GQA 4; MQA with 6 query heads, whose 6 x Lq rows leave a block's chunk
// partly empty; 16 query heads per KV head, two chunks of 8), every head dim, both dtypes, 1, 3
// and 16 new tokens with and without causal, lengths 0, 1, across a group's and a split's keys and
// up to 700, with and without the append, unpaged and pages of 1, 16, 64, 256 and 7, and split
// counts 0 (the heuristic), 1, 3, 7. Each problem takes the next entry of each list in turn.
std::vector<DecodeProblem> decode_sweep() {
  struct Heads {
    int Hq, Hkv;
  };
  const Heads heads[] = {{4, 4}, {8, 2}, {6, 1}, {16, 1}};
  const int dims[] = {64, 128, 32, 256, 128};
  const int new_tokens[] = {1, 3, 1, 16, 2};
  const std::vector<int> lens[] = {{300}, {0, 17}, {1, 700}, {129, 5, 64}, {40}};
  const int pages[] = {0, 16, 1, 0, 64, 256, 7};  // 0: unpaged
  const int splits[] = {0, 1, 3, 7};
  std::vector<DecodeProblem> out;
  for (int k = 0; k < 56; ++k) {
    DecodeProblem p;
    const Heads h = heads[k % 4];
    p.Hq = h.Hq, p.Hkv = h.Hkv;
    p.d = dims[k % 5];
    p.dtype = k % 3 == 1 ? DType::bf16 : DType::fp16;
    p.Lq = new_tokens[k % 5];
    p.causal = k % 2 == 1;
    p.cache_lens = lens[k % 5];
    p.B = static_cast<int>(p.cache_lens.size());
    p.append = k % 6 != 5;
    p.paged = pages[k % 7] > 0;
    p.page_size = p.paged ? pages[k % 7] : 16;
    p.splits = splits[k % 4];
    p.seed = static_cast<uint64_t>(k + 1);
    out.push_back(p);
  }
  // Step i's own kernel (at 8 rows a block it runs step h's) at every head dim, on a paged cache:
  // 1, 2 and 4 rows a block at d = 256, 1 at d = 128, and causal new tokens whose rows in one block
  // see different last keys (d = 128, 64 and 32: one, two and four of a lane's scores a row).
  const struct {
    int Hq, Hkv, d, Lq;
  } scattered[] = {{2, 2, 256, 1}, {4, 2, 256, 1}, {8, 2, 256, 1}, {2, 2, 128, 1}, {4, 2, 128, 2}, {4, 2, 64, 2}, {2, 2, 32, 2}};
  for (int k = 0; k < 7; ++k) {
    DecodeProblem p;
    p.Hq = scattered[k].Hq, p.Hkv = scattered[k].Hkv, p.d = scattered[k].d, p.Lq = scattered[k].Lq;
    p.causal = p.Lq > 1;
    p.dtype = k % 2 == 1 ? DType::bf16 : DType::fp16;
    p.cache_lens = {37, 300}, p.B = 2;
    p.paged = true, p.page_size = 16;
    p.splits = k % 2 == 0 ? 0 : 3;
    p.seed = static_cast<uint64_t>(100 + k);
    out.push_back(p);
  }
  // A sequence with no key at all (no cache, no append): its output is 0.
  DecodeProblem empty;
  empty.B = 2, empty.Hq = 4, empty.Hkv = 2, empty.d = 64, empty.cache_lens = {0, 3}, empty.append = false;
  out.push_back(empty);
  return out;
}

}  // namespace

TEST_CASE("every decoding variant matches the reference and appends to the cache", "[decode]") {
  REQUIRE_FALSE(decode_registry().empty());
  std::map<std::string, int> ran;
  RunOptions o;
  o.reps = 0;
  o.sample = false;
  for (const DecodeProblem& p : decode_sweep()) {
    INFO(p.describe() << " splits " << p.splits);
    const DecodeInputs in = DecodeInputs::generate(p);
    REQUIRE_NOTHROW(check_decode_inputs(p, in));
    const DecodeChecker checker(p, in, o);
    DecodeDevice dev(p, in);
    for (const DecodeVariant& v : decode_registry()) {
      if (!v.unsupported(p).empty()) continue;
      INFO(v.info.name << " (" << v.splits_for(p) << " splits)");
      const Result r = run_decode(v, p, dev, in, checker, o);
      INFO(r.verdict.why);
      CHECK(r.verdict.nonfinite == 0);
      CHECK(r.verdict.checked == static_cast<size_t>(p.B) * p.Lq * p.Hq * p.d);
      CHECK(r.verdict.pass);
      ++ran[v.info.name];
    }
  }
  for (const DecodeVariant& v : decode_registry()) {
    INFO(v.info.name);
    CHECK(ran[v.info.name] >= 5);  // every variant met the sweep
    std::printf("%-16s ran %d problems of the decoding sweep\n", v.info.name.c_str(), ran[v.info.name]);
  }
}

// The split count (harness/decode: split_heuristic) at the shapes notes/08 works by hand: the blocks
// an SM holds (per_sm: two for steps c to g, occupancy_blocks for steps h and i) filled, whole rounds of
// per_sm x SMs preferred, no split where the unsplit grid fills them, none shorter than 256 keys.
TEST_CASE("the split heuristic fills the blocks an SM holds", "[decode]") {
  CHECK(split_heuristic(8, 32768, 132) == 33);      // B = 1, 32k, steps d to g: 264 blocks, one round
  CHECK(split_heuristic(8, 32768, 132, 3) == 49);   // step h: 392 of a round of 396
  CHECK(split_heuristic(64, 8192, 132) == 4);       // B = 8, 8k: 256 blocks
  CHECK(split_heuristic(64, 8192, 132, 3) == 6);    // step h: 384
  CHECK(split_heuristic(512, 1024, 132, 3) == 1);   // B = 64, 1k: the grid fills three an SM unsplit
  CHECK(split_heuristic(300, 8192, 132) == 1);      // two an SM unsplit: no split (2 before step h's rule)
  CHECK(split_heuristic(8, 2048, 132) == 8);        // 256 keys a split at least
  CHECK(split_heuristic(1, 32768, 132) == 128);     // one block: at most 128 splits
}

TEST_CASE("the check fails an output or a cache that is wrong", "[decode]") {
  DecodeProblem p;
  p.B = 2, p.Hq = 8, p.Hkv = 2, p.d = 64, p.cache_lens = {30, 7}, p.Lq = 2, p.paged = true, p.page_size = 4;
  RunOptions o;
  o.reps = 0;
  const DecodeInputs in = DecodeInputs::generate(p);
  const DecodeChecker checker(p, in, o);
  DecodeDevice dev(p, in);
  std::vector<float> out;
  const Result good = run_decode(*find_decode("paged"), p, dev, in, checker, o, &out);
  REQUIRE(good.verdict.pass);
  std::vector<float> k, v;
  in.appended(p, k, v);
  REQUIRE(checker.check(out, k, v).pass);
  // One output element off by 5 % of the largest output, a cache left without the append, or a
  // write into a page no sequence owns: each fails.
  std::vector<float> off = out;
  off[off.size() / 2] += 0.05f * static_cast<float>(good.verdict.ref_max);
  CHECK_FALSE(checker.check(off, k, v).pass);
  const Verdict stale = checker.check(out, in.k_pool, v);
  CHECK_FALSE(stale.pass);
  CHECK_THAT(stale.why, Contains("appended"));
  std::vector<float> stray = v;
  const auto unused = std::find_if(stray.begin(), stray.end(), [](float x) { return std::isnan(x); });
  REQUIRE(unused != stray.end());  // a row where no key lives
  *unused = 1.f;
  CHECK_FALSE(checker.check(out, k, stray).pass);
}

TEST_CASE("a decoding kernel refuses a cache other than the one it reads, before any work", "[decode]") {
  DecodeProblem p;
  p.B = 2, p.Hq = 8, p.Hkv = 2, p.d = 64, p.cache_lens = {30, 7}, p.append = false;
  const DecodeInputs in = DecodeInputs::generate(p);
  DecodeDevice dev(p, in);
  DeviceBuffer o(static_cast<size_t>(p.B) * p.Lq * p.Hq * p.d * dtype_size(p.dtype));
  std::vector<int> lens = in.cache_seqlens;
  DecodeParams a = decode_params(*find_decode("decode_kernel"), p, dev, lens);
  a.o = o.get();
  REQUIRE(a.block_table == nullptr);  // unpaged: no table
  REQUIRE(ch08::decode_kernel(a) == cudaSuccess);
  // A table given to the steps that read none: they would take sequence b's keys from page b.
  a.block_table = static_cast<const int*>(dev.table.get());
  CHECK(ch08::decode_kernel(a) == cudaErrorInvalidValue);
  CHECK(ch08::split_kv(a) == cudaErrorInvalidValue);
  CHECK(ch08::gqa_packed(a) == cudaErrorInvalidValue);
  // Step a sizes its grids by the host's lengths: one that is not the device's is refused.
  a.block_table = nullptr;
  lens[1] += 1;
  CHECK(ch08::prefill_kernel(a) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_CASE("bad decoding inputs are refused with a message", "[decode]") {
  DecodeProblem p;
  p.B = 2, p.Hq = 8, p.Hkv = 2, p.d = 64, p.cache_lens = {10, 20}, p.paged = true, p.page_size = 8;
  const DecodeInputs good = DecodeInputs::generate(p);
  REQUIRE_NOTHROW(check_decode_inputs(p, good));
  auto refused = [&](const DecodeProblem& q, const DecodeInputs& in, const std::string& says) {
    INFO(says);
    try {
      check_decode_inputs(q, in);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK_THAT(std::string(e.what()), Contains(says));
    }
  };
  DecodeInputs in = good;
  in.block_table[1] = p.pool_pages();  // past the pool
  refused(p, in, "is no page of the pool");
  in = good;
  in.block_table[0] = -1;
  refused(p, in, "is no page of the pool");
  in = good;
  in.block_table[static_cast<size_t>(p.max_pages())] = in.block_table[0];  // sequence 1's first page is sequence 0's
  refused(p, in, "in the block tables of sequences 0 and 1");
  in = good;
  in.cache_seqlens[1] = p.resolved_capacity();  // full: the new token does not fit
  refused(p, in, "capacity");
  in = good;
  in.q.pop_back();
  refused(p, in, "q has the wrong size");
  DecodeProblem q = p;
  q.Hkv = 3;
  refused(q, good, "must be a multiple of the KV heads");
  q = p, q.page_size = 0;
  refused(q, good, "page size must be at least 1");
  q = p, q.cache_lens = {1, 2, 3};
  refused(q, good, "one cache length per sequence");
  q = p, q.capacity = 15;
  refused(q, good, "more than the capacity of 15");
  q = p, q.cache_lens = {-1, 2};
  refused(q, good, "is negative");
  q = p, q.splits = 129;
  refused(q, good, "--splits");
}

namespace {
Outcome decode_cli(const std::string& args) { return shell(std::string(FLASHSTEPS_BINARY) + " decode " + args); }
}  // namespace

TEST_CASE("flashsteps decode: bad input exits with 2 and a message before any work", "[cli]") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (Case c : {Case{"-H 8 --kv-heads 3", "must be a multiple of the KV heads"},
                 Case{"--page-size 0", "page size must be at least 1"},
                 Case{"--cache-len 100 --capacity 50", "more than the capacity of 50"},
                 Case{"-b 2 --cache-lens 1,2,3", "one cache length per sequence"},
                 Case{"--splits 200", "--splits takes 0"},
                 Case{"--dtype fp32", "no decoding variant runs"},
                 Case{"-d 80", "no decoding variant runs"},
                 Case{"--cache-len -4", "is negative"},
                 Case{"-v no_such_step", "unknown decoding variant"},
                 Case{"--new-tokens 0", "at least 1"},
                 // As `flashsteps run` refuses them (cli.h's parse_seed, check_run_options; check_scale):
                 Case{"-H 2 --kv-heads 2 -d 64 --scale 1e300", "overflow fp32"},
                 Case{"--cpu-budget -1", "--cpu-budget takes seconds, 0 or more (0: no limit), not -1"},
                 Case{"--cpu-budget nan", "not nan"},
                 Case{"--reps 0 --csv never_written_decode.csv", "--csv takes --reps 1 or more"},
                 Case{"--seed -1", "--seed takes a whole number from 0 to 18446744073709551615"},
                 Case{"-b 2 --cache-lens 64,32 --cache-len 100", "--cache-lens gives every sequence's length: drop --cache-len"},
                 Case{"-b 2 --cache-lens 64,,32", "--cache-lens 64,,32: an empty item"},
                 Case{"--all-sequences", "--all-sequences is --profile's: add --profile"},
                 Case{"--sample-blocks 2", "--sample-blocks is --profile's: add --profile"},
                 // A pool of pages far larger than the sequences: refused by the memory it takes.
                 Case{"--cache-len 64 --page-size 100000000", "of host memory for"}}) {
    INFO("flashsteps decode " << c.args);
    const Outcome o = decode_cli(c.args);
    INFO(o.output);
    CHECK(o.code == 2);
    CHECK_THAT(o.output, Contains(c.says));
    CHECK_THAT(o.output, !Contains("checked:"));
  }
  CHECK_FALSE(std::ifstream("never_written_decode.csv").good());
  const Outcome ok = decode_cli("-b 2 -H 4 --kv-heads 2 -d 64 --cache-lens 5,9 --page-size 4 --new-tokens 2 --causal --reps 0");
  INFO(ok.output);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.output, Contains("paged"));
}
