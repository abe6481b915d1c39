// test_cli.cpp: bad input gets a clear message and exit code 2, never a crash. Runs the
// `flashsteps run` binary (every chapter's variants) as a learner would.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

using Catch::Matchers::Contains;

namespace {
struct Outcome {
  int code;
  std::string output;
};
Outcome run(const std::string& args) {
  const std::string cmd = std::string(FLASHSTEPS_BINARY) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  Outcome o{-1, ""};
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) o.output.append(buf.data(), n);
  const int status = pclose(f);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}
void bad(const std::string& args, const std::string& says) {
  INFO("flashsteps " << args);
  const Outcome o = run(args);
  INFO(o.output);
  CHECK(o.code == 2);
  CHECK_THAT(o.output, Contains(says));
}
}  // namespace

TEST_CASE("non-positive sizes", "[cli]") {
  bad("run -v naive -n 0", "query length (Lq) must be at least 1");
  bad("run -v naive --lk -5", "key length (Lk) must be at least 1");
  bad("run -v naive -b 0", "batch (B) must be at least 1");
  bad("run -v naive -H -1", "heads (H) must be at least 1");
  bad("run -v naive -d 0", "head dim (d) must be at least 1");
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

TEST_CASE("a problem whose N x N buffers exceed device memory names both sizes", "[cli]") {
  bad("run -v naive -b 64 -H 16 -n 1000000", "bytes) of device memory");
  bad("run -v naive -b 64 -H 16 -n 1000000", "bytes) free");
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
  o = run("run -v naive -n 17 --reps 1 --csv " + csv);
  CHECK(o.code == 0);
  FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f != nullptr);
  char line[512];
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), Contains("device,driver,cuda,commit,timestamp,chapter,variant"));
  REQUIRE(std::fgets(line, sizeof line, f) != nullptr);
  CHECK_THAT(std::string(line), Contains(",01_naive_attention,naive,fp16,1,2,17,17,64,none,none,"));
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
    passed += l.size() >= 2 && l.substr(l.size() - 2) == "1\n";
  }
  std::fclose(f);
  CHECK(rows == 12);  // 3 variants x 4 smoke shapes
  CHECK(passed == 12);
  std::remove(csv.c_str());
  bad("bench --sweep nosuch --csv " + csv, "unknown sweep");
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
  const Outcome o = run("backward -n 40 -d 32 --causal bottom-right --lq 30 --reps 1 --csv " + csv);
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
