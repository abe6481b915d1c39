// test_cli.cpp: bad input gets a clear message and exit code 2, never a crash. Runs the
// `flashsteps run` binary (every chapter's variants) as a learner would.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "harness/command.h"
#include "shell.h"
#include "harness/report.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {
Outcome run(const std::string& args) { return shell(std::string(FLASHSTEPS_BINARY) + " " + args); }
// Exit code 2 and the message, before any work: no table, no "checked:" line.
#if !FLASHSTEPS_GPU
// The same under an address-space limit of `kib` KiB (ulimit -v), in a subshell.
Outcome run_limited(long kib, const std::string& args) {
  return shell("(ulimit -v " + std::to_string(kib) + " && exec " + FLASHSTEPS_BINARY + " " + args + ")");
}
#endif
bool exists(const std::string& path) { return std::ifstream(path).good(); }
std::string read(const std::string& path) {
  std::ostringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}
void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
void bad(const std::string& args, const std::string& says) {
  INFO("flashsteps " << args);
  const Outcome o = run(args);
  INFO(o.output);
  CHECK(o.code == 2);
  CHECK_THAT(o.output, Contains(says));
  CHECK_THAT(o.output, !Contains("checked:"));
}
}  // namespace

TEST_CASE("non-positive sizes", "[cli]") {
  bad("run -v naive -n 0", "query length (Lq) must be at least 1");
  bad("run -v naive --lk -5", "key length (Lk) must be at least 1");
  bad("run -v naive -b 0", "batch (B) must be at least 1");
  bad("run -v naive -H -1", "heads (H) must be at least 1");
  bad("run -v naive -d 0", "head dim (d) must be at least 1");
  bad("run -v naive -b 65536 -H 65536 -n 1 -d 1", "B*H = 4294967296 heads: the kernels number them with 32-bit ints");
}

TEST_CASE("a head dim, dtype or variant that does not exist or is not supported", "[cli]") {
  bad("run -v naive -d 300", "does not support head dim 300 (it supports fp32, fp16, bf16; d 1..256");
  bad("run --dtype fp8", "unknown dtype \"fp8\": use fp32, fp16 or bf16");
  bad("run -v no_such_variant", "unknown variant \"no_such_variant\" (known here: naive");
  bad("run -v naive --causal sideways", "unknown causal alignment");
  bad("run -v naive --mask maybe", "unknown mask");
  bad("run -v naive --causal --mask bool", "cannot be combined");
  bad("run --no-such-option", "--no-such-option");
  bad("run -n abc", "abc");
}

TEST_CASE("a problem whose N x N buffers exceed memory names both sizes", "[cli]") {
#if FLASHSTEPS_GPU
  bad("run -v naive -b 64 -H 16 -n 1000000", "bytes) of device memory");
  bad("run -v naive -b 64 -H 16 -n 1000000", "bytes) free");
#else
  bad("run -v naive -b 64 -H 16 -n 1000000", "bytes) of memory at its peak");
  bad("run -v naive -b 64 -H 16 -n 1000000", "90% of the ");
#endif
}

#if !FLASHSTEPS_GPU
TEST_CASE("a problem too large for the CPU emulation's time budget suggests a size", "[cli]") {
  bad("run -v naive -n 2048 --cpu-budget 1", "try --lq");
}
#endif

TEST_CASE("a good run passes, lists and writes its CSV", "[cli]") {
  Outcome o = run("run -v naive -n 33 -d 40 --dtype bf16 --causal bottom-right --lq 20 --reps 1");
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("pass"));
  o = run("run --list");
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("01_naive_attention"));
  const std::string csv = "cli_test.csv";
  std::remove(csv.c_str());
  // B and H explicit: the defaults differ by backend (B=1 H=2 on the CPU, B=4 H=16 on a GPU).
  o = run("run -v naive -b 1 -H 2 -n 17 --reps 1 --csv " + csv);
  CHECK(o.code == 0);
  FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  char line[512];
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK(std::string(line) == std::string(attn::kCsvHeader) + "\n");
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), Contains(",01_naive_attention,naive,fp16,1,2,17,17,64,none,none,"));
  CHECK_THAT(std::string(line), EndsWith(",\"none\"\n"));  // no chapter 10 settings
#if !FLASHSTEPS_GPU
  // The emulator's rows claim no driver and no CUDA runtime.
  CHECK_THAT(std::string(line), Contains("\"CPU emulation (simt)\",none,none,"));
#endif
  std::fclose(f);
  // Chapter 10's settings, whole, in the row's last column: a packed batch reads as one.
  o = run("run -v window -H 4 --kv-heads 2 --reps 1 --seqlens 70,0,3 --seqlens-k 20,5,90 --mask-mod window "
          "--window-size 8,-1 --causal bottom-right --softcap 30 --alibi-slopes 0.5,0.25,-0.125,1e-3 --csv " + csv);
  CHECK(o.code == 0);
  f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  for (int row = 0; row < 3; ++row) REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), Contains(",10_masks,window,fp16,1,4,73,115,64,none,none,") &&
                                    EndsWith(",\"mask_mod=varlen_window window=8,0 seqlens=70,0,3 seqlens_k=20,5,90 "
                                             "kv_heads=2 softcap=30 alibi_slopes=0.5,0.25,-0.125,0.001\"\n"));
  std::fclose(f);
  std::remove(csv.c_str());
}

TEST_CASE("the benchmark runner writes one checked row per measurement", "[cli]") {
  const std::string csv = "bench_test.csv";
  std::remove(csv.c_str());
  const Outcome o = run("bench --sweep smoke --chapter 06 --reps 1 --csv " + csv);
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("[12/12]"));
  FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  char line[512];
  int rows = 0, passed = 0;
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);  // the header
  while (std::fgets(line, sizeof line, f)) {
    ++rows;
    const std::string l = line;
    CHECK_THAT(l, Contains(",06_causal,"));
    const size_t mods = l.rfind(",\"none\"");  // the row ends pass,kind,bound,"mods"
    const size_t kind = mods == std::string::npos ? mods : l.rfind(',', l.rfind(',', mods - 1) - 1);
    passed += kind != std::string::npos && kind >= 2 && l.compare(kind - 2, 2, ",1") == 0;
  }
  std::fclose(f);
  CHECK(rows == 12);  // 3 variants x 4 smoke shapes
  CHECK(passed == 12);
  std::remove(csv.c_str());
  bad("bench --sweep nosuch --csv " + csv, "unknown sweep");
}

TEST_CASE("numbers out of range are refused, not wrapped, clamped or ignored", "[cli]") {
  bad("run -v naive --reps -2", "--reps must be 0 or more, not -2");
  bad("run -v naive --warmup -5", "--warmup must be 0 or more, not -5");
  bad("run -v naive --cpu-budget -1", "--cpu-budget takes seconds, 0 or more (0: no limit), not -1");
  bad("run -v naive --cpu-budget nan", "not nan");
  bad("run -v naive --scale nan", "the scale must be a finite number, not nan");
  bad("run -v naive --scale inf", "the scale must be a finite number, not inf");
  bad("run -v naive --scale -inf", "the scale must be a finite number, not inf");
  bad("run -v naive --scale 1e39", "overflow fp32");
  for (const char* seed : {"-1", "18446744073709551616", "1e23", "0x10", "12abc"})
    bad(std::string("run -v naive --seed ") + seed, "--seed takes a whole number from 0 to 18446744073709551615");
  bad("run -v naive --seed ''", "--seed takes a whole number");
  bad("run -v naive --mask-per-head", "--mask-per-head needs a mask: add --mask bool or --mask additive");
  bad("run -v block_mask --mask-mod sometimes", "unknown mask_mod \"sometimes\"");
  bad("run -v block_mask --mask-mod sliding_window", "--mask-mod sliding_window needs --window N (N >= 0)");
  bad("run -v block_mask --mask-mod sliding_window --window -3", "--mask-mod sliding_window needs --window N (N >= 0)");
  bad("run -v block_mask --window 3", "--window is sliding_window's: add --mask-mod sliding_window");
  bad("run -v block_mask --mask-mod prefix_lm", "--mask-mod prefix_lm needs --prefix N (N >= 0)");
  bad("run -v block_mask --mask-mod document --prefix 4", "--prefix is prefix_lm's");
  bad("run -v block_mask --mask-mod document --causal bottom-right --lq 20 --lk 30", "causal documents' diagonal is top-left");
  bad("run -v block_mask --mask-mod document_causal --causal", "a mask_mod (document_causal) is the whole mask");
  bad("run -v block_mask --documents 128", "--documents is document's and document_causal's: add --mask-mod document");
  bad("run -v block_mask --mask sliding:1024", "the pattern sliding:1024 is --mask-mod sliding_window --window 1024");
  bad("run -v block_mask --mask document:64,64", "the pattern document:64,64 is --mask-mod document --documents 64,64");
  bad("run -v block_mask --mask causal", "the pattern causal is --causal");
  bad("run -v block_mask --mask prefix:7", "--mask-mod prefix_lm --prefix 7");
  bad("run -v window --window 1024,0", "FlashAttention-2's window_size 1024,0 is --mask-mod window --window-size 1024,0");
  bad("run -v block_mask --mask-mod document -n 128 --documents 100,20",
      "the documents' lengths add up to 120, not max(Lq, Lk) = 128: every position is in one document");
  bad("run -v block_mask --mask-mod document -n 128 --documents 128,0", "a document is at least 1 position long (got 0)");
  bad("run -v block_mask --mask-mod document -n 128 --documents 129,-1", "a document is at least 1 position long (got -1)");
  bad("run -v naive --mask-mod document", "variant naive takes no mask_mod");
  bad("run -v window --mask-mod window", "--mask-mod window needs --window-size L,R (-1 for an unbounded side)");
  bad("run -v window --window-size 4,0", "--window-size is window's: add --mask-mod window");
  bad("run -v window --mask-mod window --window-size 4", "--window-size");
  bad("run -v window --mask-mod window --window-size -2,0", "a window's sides are keys before and after the diagonal");
  bad("run -v window --mask-mod window --window-size 4,0 --causal --lq 20 --lk 30",
      "a window's diagonal is bottom-right (FlashAttention-2's): with Lq != Lk, use --causal bottom-right");
  bad("run -v window --mask-mod document", "variant window takes no mask_mod document (it supports fp16, bf16;");
  bad("run -v window --causal", "variant window has no is_causal");
  bad("run -v window", "variant window runs only a mask_mod (it supports fp16, bf16; d 32, 64, 96, 128, 256; mask_mod window, "
                      "varlen_window (--seqlens with --mask-mod window); score_mod)");
  bad("run -v score_mod --softcap -1", "the softcap must be a finite number >= 0");
  bad("run -v score_mod --softcap nan", "the softcap must be a finite number >= 0");
  bad("run -v score_mod --softcap 1e39", "the softcap must be a finite number >= 0");
  bad("run -v score_mod --softcap 1e-50", "is below the smallest fp32 number");
  bad("run -v score_mod --alibi --mask bool", "a score_mod (softcap, alibi) takes no attn_mask");
  bad("run -v score_mod --alibi-slopes 0.5,0.25,1", "ALiBi's slopes are one per head, H = 2 of them, as FlashAttention-2's "
                                                    "alibi_slopes: got 3");
  bad("run -v score_mod -b 2 --alibi-slopes 0.5", "H = 2 (or B x H = 4) of them");
  bad("run -v score_mod --alibi-slopes 0.5,nan", "an ALiBi slope must be a finite number");
  bad("run -v score_mod --alibi-slopes 0.5,1e39", "an ALiBi slope must be a finite number");
  bad("run -v score_mod -H 1 --alibi-slopes \"\"", "--alibi-slopes : not a list of numbers");
  bad("run -v score_mod -H 3 --alibi-slopes 0.5,,0.25", "--alibi-slopes 0.5,,0.25: not a list of numbers");
  bad("run -v varlen --seqlens 30,40 -H 2 --alibi-slopes 1,2,3", "H = 2 (or sequences x H = 4) of them");
  bad("run -v block_mask --alibi-slopes 0.5,0.25", "variant block_mask takes no score_mod");
  // A block mask given as FlexAttention's lists (--mask-mod blocks --block-mask).
  bad("run -v block_mask --mask-mod blocks", "--mask-mod blocks needs --block-mask");
  bad("run -v block_mask --block-mask block_size=64,64", "--block-mask is blocks': add --mask-mod blocks");
  bad("run -v block_mask --mask-mod blocks -n 128 --block-mask \"block_size=64,64 kv_num_blocks=1 kv_indices=0\"",
      "a block mask's kv_num_blocks has 1 entries: one per Q block, ceil(Lq / block_q) = 2");
  bad("run -v block_mask --mask-mod blocks -n 128 --block-mask \"block_size=64,64 kv_num_blocks=1,1 kv_indices=0,2\"",
      "a block mask's kv_indices lists K/V block 2 for Q block 1: out of range, the K/V blocks are 0 to 1");
  bad("run -v block_mask --mask-mod blocks --block-mask \"block_size=64,64 softcap=3\"", "--block-mask: 'softcap=3' is not one of");
  bad("run -v block_mask --mask-mod blocks --block-mask \"block_size=64,x kv_num_blocks= kv_indices=\"",
      "--block-mask: block_size=64,x is not a whole number");
  bad("run -v block_mask --mask-mod blocks --block-mask @/nonexistent/mask.txt", "--block-mask: cannot read the file /nonexistent/mask.txt");
  bad("run -v block_mask --mask-mod blocks --block-mask @/tmp", "--block-mask: cannot read the file /tmp");
  bad("run -v block_mask --mask-mod blocks --block-mask \"block_size=-64,64 kv_num_blocks= kv_indices=\"",
      "block_size=-64,64 is not a whole number in [0,");
  bad("run -v block_mask --mask-mod circles", "random_blocks, window or blocks");
  bad("run -v block_mask --softcap 30", "variant block_mask takes no score_mod");
  // A packed batch (flash_attn_varlen_func's rules, as lengths).
  bad("run -v varlen --seqlens 5,-3", "a packed batch's query lengths must be at least 0 (got -3): cu_seqlens must not decrease");
  bad("run -v varlen --seqlens 5,3 --seqlens-k 4", "a packed batch needs as many key lengths as query lengths");
  bad("run -v varlen --seqlens 5,3 --seqlens-k 4,-1", "a packed batch's key lengths must be at least 0");
  bad("run -v varlen --seqlens-k 5,3", "--seqlens-k needs --seqlens");
  bad("run -v varlen --seqlens 5,3 --seq 8", "--seqlens sets Lq and Lk (the sums of the lengths): drop --seq");
  bad("run -v varlen --seqlens 5,3 --lk 8", "drop --lk");
  bad("run -v varlen --seqlens 5,3 -b 2", "a packed batch is one sequence of B = 1 (got B = 2)");
  bad("run -v varlen --seqlens 5,3 --mask bool", "a packed batch takes no attn_mask");
  bad("run -v varlen --seqlens 5,3 --mask-mod document", "a packed batch's mask is its sequences");
  bad("run -v score_mod --seqlens 5,3 --alibi", "variant score_mod takes no mask_mod varlen");
  bad("run -v varlen --seqlens 0,0", "query length (Lq) must be at least 1");
  bad("run -v varlen --seqlens 2000000000,2000000000", "add up to more than 2^31 - 1");
  bad("run -v varlen -n 64", "variant varlen runs only a mask_mod (it supports fp16, bf16; d 32, 64, 96, 128, 256; causal; "
                             "mask_mod varlen (--seqlens); score_mod)");
  bad("run -v window --seqlens 5,3", "variant window takes no mask_mod varlen");
  // A window in each sequence: step f's; its sides checked, its diagonal each sequence's bottom-right.
  bad("run -v varlen --seqlens 5,3 --mask-mod window --window-size 2,0", "variant varlen takes no mask_mod varlen_window");
  bad("run -v window --seqlens 5,3 --mask-mod window --window-size -2,0", "a window's sides are keys before and after the diagonal");
  bad("run -v window --seqlens 5,3 --seqlens-k 4,3 --mask-mod window --window-size 2,-1 --causal",
      "a window's diagonal is bottom-right (FlashAttention-2's): with Lq != Lk in a sequence, use --causal bottom-right");
  bad("run -v window --seqlens 5,3 --mask-mod sliding_window --window 2", "it takes no other mask_mod (got sliding_window)");
  // Grouped-query attention: K/V heads that divide H, in a packed batch.
  bad("run -v varlen --seqlens 5,3 -H 4 --kv-heads 3", "K and V's heads (Hkv = 3) must divide the query heads (H = 4)");
  bad("run -v varlen --seqlens 5,3 -H 4 --kv-heads 8", "must divide the query heads");
  bad("run -v varlen --seqlens 5,3 -H 4 --kv-heads 0", "--kv-heads must be at least 1 (got 0)");
  bad("run -v varlen --seqlens 5,3 -H 65536 --kv-heads 1 -d 32", "H / Hkv = 65536 query heads per K/V head: at most 65535");
  bad("run -v lean_loop -H 4 --kv-heads 2", "are read by chapter 10's packed batches only: give the sequences' lengths (--seqlens)");
  bad("tour --reps -1", "--reps must be 0 or more");
  bad("bench --reps 0 --csv never_written.csv", "--reps must be 1 or more");
  bad("bench --warmup -1 --csv never_written.csv", "--warmup must be 0 or more");
  bad("bench --budget -3 --csv never_written.csv", "--budget takes seconds");
  // A filter that selects nothing is refused, not dropped beside one that does.
  bad("bench --chapter 01 -v naive -v no_such_step --csv never_written.csv", "unknown variant \"no_such_step\"");
  bad("bench --chapter 01 --chapter 99 --csv never_written.csv", "--chapter 99: no chapter starts with it");
  bad("bench --chapter 01 -d 0 -d 64 --csv never_written.csv", "--head-dim 0: the smoke sweep has d = 64 and 128 only");
  bad("bench --chapter 01 --dtype fp32 --csv never_written.csv", "--dtype fp32: the smoke sweep has no shape of it");
  CHECK_FALSE(exists("never_written.csv"));
  // --profile's options without --profile, an empty --gpu, the results and the counters in one file.
  bad("run -v naive --sample-blocks 0", "--sample-blocks is --profile's: add --profile");
  bad("run -v naive --row-groups maybe", "--row-groups is --profile's: add --profile");
  bad("run -v naive --emulated-heads 2", "--emulated-heads is --profile's");
  bad("run -v naive --counters-csv never_written.csv", "--counters-csv is --profile's");
  bad("run -v naive --gpu ''", "--gpu needs a GPU's key (--gpu list shows them)");
  bad("backward -v causal --sample-blocks 2", "--sample-blocks is --profile's: add --profile");
  bad("run -v naive --reps 1 --profile --csv never_written.csv --counters-csv ./never_written.csv",
      "--csv and --counters-csv name the same file");
  CHECK_FALSE(exists("never_written.csv"));
  // An empty item in a list of lengths is refused, not dropped.
  bad("run -v varlen --seqlens 10,,20", "--seqlens 10,,20: an empty item");
  bad("run -v varlen --seqlens 10,20,", "--seqlens 10,20,: an empty item");
  bad("run -v varlen --seqlens 10,x", "\"x\" is not a whole number");
  bad("run -v varlen --seqlens 10,20 --seqlens-k 30,,5", "--seqlens-k 30,,5: an empty item");
  bad("run -v block_mask -n 64 --mask-mod document --documents 32,,32", "--documents 32,,32: an empty item");
  // FlashAttention-2's causal=True with a window: its right side becomes 0.
  const Outcome w = run("run -v window -v block_mask -n 100 --reps 1 --mask-mod window --window-size 20,7 --causal bottom-right");
  INFO(w.output);
  CHECK(w.code == 0);
  CHECK(w.output.find("mask_mod(window 20,0)") != std::string::npos);
  // A packed batch: the lengths' sums are Lq and Lk, the describe line lists them.
  const Outcome v = run("run -v varlen --reps 1 --seqlens 70,0,3 --seqlens-k 20,5,90 --causal bottom-right");
  INFO(v.output);
  CHECK(v.code == 0);
  CHECK_THAT(v.output, Contains("B=1 H=2 Lq=73 Lk=115") && Contains("varlen(3 sequences: q 70,0,3 k 20,5,90)"));
  // With a window in each sequence, FlashAttention-2's causal=True its right side 0; top-left where
  // every sequence has Lq = Lk is the same diagonal.
  const Outcome tl = run("run -v window --reps 1 --seqlens 70,3 --mask-mod window --window-size 8,-1 --causal");
  INFO(tl.output);
  CHECK(tl.code == 0);
  CHECK_THAT(tl.output, Contains("mask_mod(window 8,0) varlen(2 sequences: q 70,3)") && Contains("pass"));
  // Step f's count of a packed batch's tiles: exercise 12's, by hand (notes/answers/10_masks.md).
  const Outcome plan = run("run -v window --reps 0 --seqlens 100,2000,37 -H 1 -d 64 --mask-mod window --window-size 256,0");
  INFO(plan.output);
  CHECK_THAT(plan.output, Contains("3 sequences in 18 Q tiles (19 slots per head), 93 (Q tile, K/V tile) pairs visited "
                                   "per head, 63 masked"));
  const Outcome pw = run("run -v window --reps 1 --seqlens 70,0,3 --seqlens-k 20,5,90 --mask-mod window --window-size 8,-1 "
                         "--causal bottom-right");
  INFO(pw.output);
  CHECK(pw.code == 0);
  CHECK_THAT(pw.output, Contains("mask_mod(window 8,0) varlen(3 sequences: q 70,0,3 k 20,5,90)") && Contains("pass"));
  const Outcome g = run("run -v varlen --reps 1 --seqlens 70,3 -H 4 --kv-heads 2 --causal bottom-right");
  INFO(g.output);
  CHECK(g.code == 0);
  CHECK_THAT(g.output, Contains("B=1 H=4 Hkv=2 Lq=73") && Contains("pass"));
  // The largest seed is a seed.
  const Outcome o = run("run -v naive -n 16 --reps 1 --seed 18446744073709551615");
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("seed 18446744073709551615"));
}

TEST_CASE("a problem too large to count is refused with positive numbers", "[cli]") {
  for (const char* args : {"run -v naive -n 2147483647", "run -v naive -n 2147483647 -b 1 -H 1 -d 1",
                           "run -v row_per_thread -b 2147483647 -H 2147483647 -n 1", "tour -n 2147483647"}) {
    bad(args, "the problem is too large: B*H*Lq*Lk = ");
    const Outcome o = run(args);
    CHECK_THAT(o.output, !Contains("-9"));  // no wrapped, negative count
  }
  bad("run -v naive -n 2147483648", "--seq");  // beyond int: CLI11's own refusal, exit 2 too
}

TEST_CASE("large, tiny and negative scales pass on correct kernels", "[cli]") {
  for (const char* args : {"run -v pipelined --scale 1e4 --reps 1", "run -v row_per_thread --scale 1e4 --reps 1",
                           "run -v pipelined --scale 1e-4 --reps 1", "run -v fused_softmax_pv --scale -1 --reps 1"}) {
    INFO(args);
    const Outcome o = run(args);
    INFO(o.output);
    CHECK(o.code == 0);
    CHECK_THAT(o.output, Contains(" pass "));
  }
}

TEST_CASE("--csv is checked before any work: a name, a folder that exists, writable, ours", "[cli]") {
  bad("run -v naive --csv ''", "--csv needs a file name");
  bad("run -v naive --csv .", "--csv . is a folder");
  bad("run -v naive --csv no_such_folder/out.csv", "the folder no_such_folder does not exist");
  bad("run -v naive --csv /proc/flashsteps_test.csv", "cannot be created");
  if (geteuid() != 0) {  // root writes anywhere: no read-only folder to test with then
    std::system("mkdir -p readonly_folder && chmod 555 readonly_folder");
    bad("run -v naive --csv readonly_folder/out.csv", "cannot be created: Permission denied");
    std::system("chmod 755 readonly_folder && rmdir readonly_folder");
  }
  // A file that is not ours is refused and left as it was.
  const std::string foreign = "cli_foreign.csv", text = "name,age\nada,36\n";
  write(foreign, text);
  bad("run -v naive --csv " + foreign, "is not one of this project's CSV files");
  bad("bench --sweep smoke --csv " + foreign, "is not one of this project's CSV files");
  CHECK(read(foreign) == text);
  std::remove(foreign.c_str());
  // No row without a timing: --reps 0 with --csv is refused, and nothing is created.
  const std::string fresh = "cli_untimed.csv";
  std::remove(fresh.c_str());
  bad("run -v naive --reps 0 --csv " + fresh, "--reps 0 checks the output without timing it");
  bad("run -v no_such_variant --csv " + fresh, "unknown variant");
  CHECK_FALSE(exists(fresh));
  // --reps 0 without --csv still checks.
  const Outcome o = run("run -v naive -n 16 --reps 0");
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("timed:   no (--reps 0)"));
}

TEST_CASE("a file of ours gets rows appended under its header", "[cli]") {
  const std::string csv = "cli_ours.csv";
  std::remove(csv.c_str());
  write(csv, std::string(attn::kCsvHeader) + "\n");
  const Outcome o = run("run -v naive -n 16 --reps 1 --csv " + csv);
  INFO(o.output);
  CHECK(o.code == 0);
  const std::string text = read(csv);
  CHECK(text.rfind(std::string(attn::kCsvHeader) + "\n", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  std::remove(csv.c_str());
}

#if !FLASHSTEPS_GPU  // address-space limits and fork() do not mix with a CUDA context
TEST_CASE("memory: the check counts host copies too, refuses under ulimit -v, and a failed allocation is exit 2",
          "[cli]") {
  // Under a 1 GB address-space limit: 1.16 GiB of buffers the kernels use, 1.91 GiB at the peak
  // with the inputs as float on the host: refused at once, with the numbers.
  const Outcome o = run_limited(1000000, "run -v row_per_thread -n 16 -b 100 -H 1000");
  INFO(o.output);
  CHECK(o.code == 2);
  CHECK_THAT(o.output, Contains("needs about 1.91 GiB ("));
  CHECK_THAT(o.output, Contains("the kernels' buffers 1.16 GiB"));
  CHECK_THAT(o.output, Contains("under ulimit -v"));
  CHECK_THAT(o.output, !Contains("checked:"));
  // The same limit leaves room for the default problem.
  const Outcome small = run_limited(1000000, "run -v naive --reps 1");
  INFO(small.output);
  CHECK(small.code == 0);

  // An allocation that fails anyway (the check cannot see every limit) ends as bad input: exit 2
  // and "out of memory", device or host, never a crash. In a child, under a 64 MiB limit above
  // what it holds now.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rlimit lim{};
    getrlimit(RLIMIT_AS, &lim);
    std::ifstream status("/proc/self/status");
    std::string line;
    long vm_kib = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stol(line.substr(7));
    lim.rlim_cur = static_cast<rlim_t>(vm_kib + 64 * 1024) * 1024;
    setrlimit(RLIMIT_AS, &lim);
    std::freopen("/dev/null", "w", stderr);
    const int device = attn::guarded([] {
      attn::DeviceBuffer b(size_t{512} << 20);
      return 0;
    });
    const int host = attn::guarded([] {
      std::vector<char> v(size_t{512} << 20);
      return static_cast<int>(v[1]);
    });
    _exit(device * 10 + host);
  }
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 22);  // both exit 2
}

TEST_CASE("the memory check's peak matches what a run really holds", "[cli]") {
  // The peak resident memory of a run with 100 MB of inputs against memory_needed's count for it:
  // within 64 MiB above (the process and the emulator), not over 25 % below.
  attn::Problem p;
  p.B = 10, p.H = 1000, p.Lq = p.Lk = 16;
  attn::RunOptions o;
  o.reps = 1, o.warmup = 1;
  const double want = attn::memory_needed(*attn::find_variant("row_per_thread"), p, o).total;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::freopen("/dev/null", "w", stdout);
    execl(FLASHSTEPS_BINARY, FLASHSTEPS_BINARY, "run", "-v", "row_per_thread", "-n", "16", "-b", "10", "-H", "1000",
          "--reps", "1", "--warmup", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage use{};
  wait4(child, &status, 0, &use);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const double held = static_cast<double>(use.ru_maxrss) * 1024;
  INFO("counted " << want << " bytes, held at most " << held);
  CHECK(held <= want + 64.0 * 1024 * 1024);
  CHECK(held >= 0.75 * want);
}
#endif

TEST_CASE("a device allocation that fails says out of memory", "[cli]") {
  try {
    attn::DeviceBuffer b(size_t{1} << 62);
    FAIL("a buffer of 4 EiB was allocated");
  } catch (const attn::OutOfMemory& e) {
    CHECK_THAT(std::string(e.what()), Contains("out of memory: ") && Contains("could not be allocated"));
  }
  CHECK(attn::guarded([]() -> int { throw attn::OutOfMemory("out of memory: test"); }) == 2);
  CHECK(attn::guarded([]() -> int { throw std::bad_alloc(); }) == 2);
}

#if !FLASHSTEPS_GPU
TEST_CASE("the emulator's settings in the environment: a bad value is a sentence and exit code 2", "[cli]") {
  // notes/emulator.md's table: SIMT_STACK_KB=1 crashed without a word, SIMT_WORKERS=abc ran on the default.
  for (const char* env : {"SIMT_STACK_KB=1", "SIMT_STACK_KB=abc", "SIMT_WORKERS=abc", "SIMT_WORKERS=-3", "SIMT_SEED=1e3",
                          "SIMT_LENIENT_EXIT=yes", "SIMT_QUIET=2"}) {
    INFO(env);
    const Outcome o = shell(std::string(env) + " " + FLASHSTEPS_BINARY + " run -v naive -n 64 -d 32 --reps 0");
    INFO(o.output);
    CHECK(o.code == 2);
    CHECK_THAT(o.output, Contains("is not a whole number from"));
  }
  const Outcome ok = shell(std::string("SIMT_STACK_KB=512 SIMT_WORKERS=1 ") + FLASHSTEPS_BINARY + " run -v naive -n 64 -d 32 --reps 0");
  INFO(ok.output);
  CHECK(ok.code == 0);
}
#endif

TEST_CASE("a gpu-only variant on the CPU says it needs a GPU", "[cli]") {
  REQUIRE_FALSE(attn::gpu_only_variants().empty());  // chapter 01's math_path, from its GPU_KERNELS
  for (const auto& [chapter, name] : attn::gpu_only_variants()) {
    INFO(chapter << "/" << name);
    const attn::Variant* v = attn::find_variant(name);
#if FLASHSTEPS_GPU
    // The file named in GPU_KERNELS is the variant's name: the gpu backend registers it.
    REQUIRE(v != nullptr);
    CHECK(v->chapter == chapter);
#else
    CHECK(v == nullptr);
    bad("run -v " + name, "variant " + name + " of " + chapter + " needs a GPU");
    CHECK_THAT(run("run --list").output, Contains(name + " ") && Contains("needs a GPU"));
#endif
  }
}

TEST_CASE("flashsteps --help names every command; an unknown one is refused", "[cli]") {
  for (const char* help : {"--help", "-h", "help"}) {
    const Outcome o = run(help);
    CHECK(o.code == 0);
    CHECK_THAT(o.output, Contains("tour") && Contains("run") && Contains("bench") && Contains("COMMAND --help"));
  }
  bad("runn -v naive", "unknown command \"runn\"");
  const Outcome o = run("tour --help");
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("--reps"));
}

TEST_CASE("the table says what it checked, how it timed, in units that fit", "[cli]") {
  // B and H explicit: the defaults differ by backend (B=1 H=2 on the CPU, B=4 H=16 on a GPU).
  const Outcome o = run("run -v naive -b 1 -H 2 -n 16");
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("checked: every output row (32 = B*H*Lq)"));
#if FLASHSTEPS_GPU
  CHECK_THAT(o.output, Contains("median and minimum of 20 runs of each variant, after 3 untimed"));
  CHECK_THAT(o.output, Contains("TFLOP/s"));
#else
  CHECK_THAT(o.output, Contains("median and minimum of 10 runs of each variant, after 1 untimed"));
  CHECK_THAT(o.output, Contains("GFLOP/s") && Contains("MB/s") && !Contains("TFLOP/s"));
#endif
  // Over 2e8 multiply-adds: a sample of the rows is checked, and the line says which.
  const Outcome big = run("run -v row_per_thread -b 1 -H 8 -n 1024 -d 32 --reps 0");
  INFO(big.output);
  CHECK_THAT(big.output, Contains("of the 8192 output rows") && Contains(" heads x ") && Contains("--full-check"));
}

#if !FLASHSTEPS_GPU
TEST_CASE("the tour on the CPU says what a GPU shows instead", "[cli]") {
  const Outcome o = run("tour -n 64 --reps 2");
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("speedup vs 01") && Contains("On a GPU: "));
  // Chapter 10 again on the problem with a document mask: its first step against its best, both
  // checked; not when the tour's problem has a mask_mod already (chapter 10's row ran it).
  CHECK_THAT(o.output, Contains("problem: B=1 H=2 Lq=64 Lk=64 d=64 fp16 mask_mod(document)") &&
                           Contains("block_mask is ") && Contains("faster than the mask as a tensor (emulator times)"));
  CHECK_THAT(o.output, !Contains("FAIL"));
  const Outcome windowed = run("tour -n 64 --reps 1 --mask-mod sliding_window --window 16");
  INFO(windowed.output);
  CHECK(windowed.code == 0);
  CHECK_THAT(windowed.output, Contains("mask_mod(sliding_window 16)") && Contains("block_mask  ") && !Contains("masks (chapter 10"));
  // A causal tour's masks line: documents each causal (FlexAttention's document_causal_mask), not skipped.
  const Outcome causal = run("tour -n 64 --reps 1 --causal");
  INFO(causal.output);
  CHECK(causal.code == 0);
  CHECK_THAT(causal.output, Contains("with a document_causal mask") && Contains("mask_mod(document_causal)") &&
                                Contains("faster than the mask as a tensor") && !Contains("skipped"));
  // Bottom-right with Lq != Lk: causal documents have no such diagonal, and the line says so.
  const Outcome skewed = run("tour --lq 64 --lk 32 -H 1 --reps 1 --causal bottom-right");
  INFO(skewed.output);
  CHECK(skewed.code == 0);
  CHECK_THAT(skewed.output, Contains("masks (chapter 10") && Contains("skipped: ") && !Contains("FAIL"));
  CHECK(run("run -v block_mask -n 64 --reps 0 --mask-mod document --causal bottom-right").code == 0);  // Lq = Lk
  // --mask-mod document with --causal is document_causal (the words a CSV row gets say so).
  const std::string csv = "cli_test_documents.csv";
  std::remove(csv.c_str());
  const Outcome docs = run("run -v block_mask -n 80 --reps 1 --mask-mod document --causal --documents 30,1,49 --csv " + csv);
  INFO(docs.output);
  CHECK(docs.code == 0);
  CHECK_THAT(docs.output, Contains("mask_mod(document_causal 3 documents: 30,1,49)") && Contains("pass"));
  FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  char line[512];
  for (int row = 0; row < 2; ++row) REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), Contains(",none,none,") && EndsWith(",\"mask_mod=document_causal documents=30,1,49\"\n"));
  std::fclose(f);
  std::remove(csv.c_str());
  // A block mask from a file of its words, which the row's mods column then holds.
  const std::string words = "cli_test_blocks.txt";
  f = std::fopen(words.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs("block_size=64,32\nkv_num_blocks=1,2 kv_indices=2,0,1\nfull_kv_num_blocks=1,0 full_kv_indices=0\n", f);
  std::fclose(f);
  const Outcome blocks = run("run -v block_mask -n 80 --reps 1 --mask-mod blocks --block-mask @" + words + " --csv " + csv);
  INFO(blocks.output);
  CHECK(blocks.code == 0);
  CHECK_THAT(blocks.output, Contains("mask_mod(blocks 64x32: 3 partial, 1 full of 6)") && Contains("pass"));
  f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  for (int row = 0; row < 2; ++row) REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), EndsWith(",\"mask_mod=blocks block_size=64,32 kv_num_blocks=1,2 kv_indices=2,0,1 "
                                         "full_kv_num_blocks=1,0 full_kv_indices=0\"\n"));
  std::fclose(f);
  std::remove(csv.c_str());
  std::remove(words.c_str());
  const Outcome table = run("tour -n 64 --reps 1 --chapters-only");
  INFO(table.output);
  CHECK(table.code == 0);
  CHECK_THAT(table.output, Contains("speedup vs 01") && !Contains("decoding (chapter 08") && !Contains("masks (chapter 10"));
}
#endif

TEST_CASE("timings taken in turns combine into one median, minimum and per-stage median", "[cli]") {
  auto one = [](double ms, double stage_ms) {
    attn::Timing t;
    t.reps = 1, t.median_ms = t.min_ms = ms;
    t.stages = {{"S", stage_ms, 10}, {"O", ms - stage_ms, 20}};
    return t;
  };
  const attn::Timing untimed;  // --reps 0: left out
  const attn::Timing t = attn::combine_repetitions({one(3, 1), untimed, one(1, 0.5), one(2, 1.5)});
  CHECK(t.reps == 3);
  CHECK(t.median_ms == 2);
  CHECK(t.min_ms == 1);
  REQUIRE(t.stages.size() == 2);
  CHECK(t.stages[0].stage == "S");
  CHECK(t.stages[0].ms == 1);
  CHECK(t.stages[1].ms == 0.5);  // of 2, 0.5, 0.5
  CHECK(t.stages[1].bytes == 20);
  CHECK(attn::combine_repetitions({untimed}).reps == 0);
}

TEST_CASE("flashsteps backward refuses bad input before any work, and a good run writes its CSV rows", "[cli]") {
  bad("backward -v no_such_variant", "unknown backward variant \"no_such_variant\" (known: materialized");
  bad("backward -v tensor_cores --dtype fp32", "variant tensor_cores does not take fp32 inputs");
  bad("backward -v kv_outer -d 48", "does not support head dim 48");
  bad("backward --forward no_such_variant", "unknown forward variant \"no_such_variant\"");
  bad("backward --forward naive", "forward variant naive does not write the log-sum-exp");
  bad("backward -v materialized -b 64 -H 16 -n 1000000", "bytes) of device memory");
  bad("backward -n 0", "query length (Lq) must be at least 1");
#if !FLASHSTEPS_GPU
  bad("backward -v causal -n 4096 --cpu-budget 1", "try --lq");
#endif
  const std::string csv = "backward_test.csv";
  std::remove(csv.c_str());
  // B and H explicit: the defaults differ by backend (B=1 H=2 on the CPU, B=4 H=16 on a GPU).
  const Outcome o = run("backward -b 1 -H 2 -n 40 -d 32 --causal bottom-right --lq 30 --reps 1 --csv " + csv);
  INFO(o.output);
  CHECK(o.code == 0);
  CHECK_THAT(o.output, Contains("forward + backward"));
  FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string all;
  char line[512];
  while (std::fgets(line, sizeof line, f)) all += line;
  std::fclose(f);
  std::remove(csv.c_str());
  CHECK_THAT(all, Contains(",06_causal,balanced,fp16,1,2,30,40,32,bottom-right,none,"));  // the forward
  CHECK_THAT(all, Contains(",07_backward,deterministic,fp16,1,2,30,40,32,bottom-right,none,"));
}

TEST_CASE("the Python tools write and read the CSV header the binaries write", "[cli]") {
  // tools/results_csv.py holds the Python tools' copy, one line of it the header split in two.
  const std::string py = read(std::string(FLASHSTEPS_SOURCE_DIR) + "/tools/results_csv.py");
  const std::string header = attn::kCsvHeader;
  const size_t split = header.find(",median_ms");
  REQUIRE(split != std::string::npos);
  CHECK_THAT(py, Contains("CSV_HEADER = (\"" + header.substr(0, split + 1) + "\"\n"));
  CHECK_THAT(py, Contains("\"" + header.substr(split + 1) + "\")"));
}
