// test_profile.cpp: `flashsteps profile` and `--profile` as a learner runs them. In a counters
// build they print the counters and a modelled time and append modelled rows; in any other build
// they refuse before doing any work, saying how to configure a counters build.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/profile.h"
#include "harness/report.h"

using Catch::Matchers::Contains;

namespace {
// Runs `flashsteps <args>`; returns its exit code, its output (stdout and stderr) in `out`.
int flashsteps(const std::string& args, std::string& out) {
  out.clear();
  FILE* pipe = popen((std::string(FLASHSTEPS_BINARY) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(pipe);
  for (int c; (c = std::fgetc(pipe)) != EOF;) out.push_back(static_cast<char>(c));
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}
std::string scratch(const char* name) { return "flashsteps-profile-test-" + std::to_string(getpid()) + "-" + name; }
}  // namespace

#if SIMT_COUNTERS
TEST_CASE("profile prints each stage's counters and modelled time, and appends modelled rows", "[profile]") {
  const std::string csv = scratch("rows.csv"), counters = scratch("counters.csv");
  std::string out;
  INFO(out);
  REQUIRE(flashsteps("profile -v warp_per_row -v exp2 -n 64 --csv " + csv + " --counters-csv " + counters, out) == 0);
  CHECK_THAT(out, Contains("modelled on H100 SXM5"));
  CHECK_THAT(out, Contains("sectors/req"));
  CHECK_THAT(out, Contains("P = softmax(scale*S)"));
  CHECK_THAT(out, Contains("a model, not a measurement"));
  const std::vector<std::string> rows = lines(csv);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == attn::kCsvHeader);
  for (size_t i = 1; i < rows.size(); ++i) {
    CHECK_THAT(rows[i], Contains("\"H100 SXM5\",none,"));
    CHECK_THAT(rows[i], Contains(",modelled,"));
  }
  const std::vector<std::string> stages = lines(counters);
  REQUIRE(stages.size() == 1 + 2 * 3);  // the header, then 3 stages per variant
  CHECK(stages[0] == attn::kCountersCsvHeader);
  std::remove(csv.c_str());
  std::remove(counters.c_str());

  // The emulator's times of a plain run, beside the modelled ones.
  const std::string times = scratch("times.csv");
  REQUIRE(flashsteps("tour -n 64 --csv " + times, out) == 0);
  REQUIRE(flashsteps("tour --profile -n 64 --gpu h200 --emulator-times " + times, out) == 0);
  CHECK_THAT(out, Contains("modelled on H200 SXM"));
  CHECK_THAT(out, Contains("emulator ms"));
  CHECK_THAT(out, Contains("modelled us"));
  CHECK_THAT(out, Contains("06_causal"));
  CHECK_THAT(out, !Contains("sectors/req"));  // the tour's profile is the summary only
  std::remove(times.c_str());
}

TEST_CASE("profile of a problem too large to emulate whole says what it emulated", "[profile]") {
  std::string out;
  REQUIRE(flashsteps("profile -v exp2 -b 2 -H 3 -n 64 --emulated-heads 2", out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("problem: B=2 H=3 Lq=64"));
  CHECK_THAT(out, Contains("exp2: sampled: every block of 2 of the 6 (batch, head) pairs, counts multiplied by 3; "
                           "the rest was not emulated, and went unchecked"));
  CHECK_THAT(out, Contains("emulating B=1 H=2 Lq=64"));
  CHECK_THAT(out, Contains("checked: every output row (128 = B*H*Lq)"));  // of the heads emulated
  // Row groups: the Lq of each run, and the polynomial.
  REQUIRE(flashsteps("profile -v exp2 -b 1 -H 1 -n 1100 --row-groups always", out) == 0);
  CHECK_THAT(out, Contains("rows: Lq = 332, 588 (1 to 2 groups of 256 rows and the last partial one), counts a line in "
                           "the groups taken to the problem's 4"));
  CHECK_THAT(out, Contains("emulating B=1 H=1 Lq=588 Lk=1100"));
  // Asked for more heads than there are, and no rows: every head, no sampling said.
  REQUIRE(flashsteps("profile -v exp2 -b 2 -H 3 -n 64 --emulated-heads 9", out) == 0);
  CHECK_THAT(out, !Contains("sampled:"));
  CHECK_THAT(out, Contains("checked: every output row (384 = B*H*Lq)"));
}

TEST_CASE("backward --profile counts chapter 07's steps through the same profiler", "[profile]") {
  const std::string counters = scratch("backward-counters.csv");
  std::string out;
  REQUIRE(flashsteps("backward --profile -v kv_outer -v tensor_cores -n 64 --counters-csv " + counters, out) == 0);
  INFO(out);
  CHECK_THAT(out, Contains("kv_outer (07_backward): check pass; modelled on H100 SXM5"));
  CHECK_THAT(out, Contains("dK, dV, dQ acc (K/V outer)"));
  CHECK_THAT(out, Contains("| atom "));  // dQ's fp32 atomics, in the global line
  CHECK_THAT(out, Contains("a model, not a measurement"));
  CHECK_THAT(out, !Contains("median ms"));  // counted, not timed
  const std::vector<std::string> stages = lines(counters);
  REQUIRE(stages.size() == 1 + 2 * 3);  // the header, then 3 stages per variant (D, the main loop, dQ)
  CHECK(stages[0] == attn::kCountersCsvHeader);
  CHECK_THAT(stages[1], Contains(",07_backward,kv_outer,"));
  std::remove(counters.c_str());
}

TEST_CASE("profile: a wrong option is refused before any work", "[profile]") {
  std::string out;
  CHECK(flashsteps("profile --gpu a100", out) == 2);
  CHECK_THAT(out, Contains("unknown --gpu \"a100\": use h100, h200"));
  CHECK(flashsteps("profile --sample-blocks 0", out) == 2);
  CHECK_THAT(out, Contains("--sample-blocks must be at least 1"));
  CHECK(flashsteps("profile --emulated-heads -1", out) == 2);
  CHECK_THAT(out, Contains("--emulated-heads must be 0"));
  CHECK(flashsteps("profile --row-groups some", out) == 2);
  CHECK_THAT(out, Contains("--row-groups takes auto, always or never"));
  CHECK(flashsteps("backward --profile --emulated-heads 2 -n 64", out) == 2);  // the backward is not sampled
  CHECK_THAT(out, Contains("backward --profile emulates every block"));
  CHECK_THAT(out, !Contains("checked:"));
  CHECK(flashsteps("profile --chapter 99", out) == 2);
  CHECK_THAT(out, Contains("no chapter starts with"));
  CHECK(flashsteps("tour --profile --emulator-times /nonexistent/times.csv", out) == 2);
  CHECK_THAT(out, Contains("cannot read --emulator-times"));
  const std::string foreign = scratch("foreign.csv");
  std::ofstream(foreign) << "not,our,header\n";
  CHECK(flashsteps("profile -v exp2 --counters-csv " + foreign, out) == 2);
  CHECK_THAT(out, Contains("does not start with the counters CSV header"));
  CHECK_THAT(out, !Contains("checked:"));  // refused before any work
  CHECK(lines(foreign).size() == 1);
  std::remove(foreign.c_str());
}
#else
TEST_CASE("without counters, profile and --profile refuse before any work, saying how to get them", "[cli]") {
  const std::string csv = scratch("refused.csv");
  for (const char* args : {"profile", "tour --profile", "run --profile -v naive", "backward --profile"}) {
    std::string out;
    INFO(args);
    CHECK(flashsteps(std::string(args) + " --csv " + csv, out) == 2);
    INFO(out);
    CHECK_THAT(out, Contains(FLASHSTEPS_GPU ? "Nsight Compute" : "-DFLASHSTEPS_COUNTERS=ON"));
    CHECK_THAT(out, !Contains("checked:"));  // no problem was set up, nothing ran
    CHECK(lines(csv).empty());
  }
}
#endif
