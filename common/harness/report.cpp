#include "report.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "errors.h"

namespace attn {
const char* build_commit();  // generated at build time

std::string commit_id() {
  const char* env = std::getenv("FLASHSTEPS_COMMIT");
  return env && *env ? env : build_commit();
}

void print_device_and_problem(const Problem& p) {
  std::printf("device:  %s\n", device().summary().c_str());
  std::printf("problem: %s, scale %.6g, seed %llu\n", p.describe().c_str(), p.scale(),
              static_cast<unsigned long long>(p.seed));
}

void print_table_header() {
  std::printf("\n%-22s %10s %6s %11s %10s %9s %9s %13s\n", "variant", "max error", "check", "median ms", "min ms",
              "TFLOP/s", "GB/s", "extra memory");
}

void print_row(const Result& r, const std::string& label) {
  const std::string name = label.empty() ? r.variant->name : label;
  const bool timed = r.timing.reps > 0;
  char ms[32] = "-", mn[32] = "-", tf[32] = "-", gb[32] = "-";
  if (timed) {
    std::snprintf(ms, sizeof ms, "%.4f", r.timing.median_ms);
    std::snprintf(mn, sizeof mn, "%.4f", r.timing.min_ms);
    std::snprintf(tf, sizeof tf, "%.3f", r.tflops());
    std::snprintf(gb, sizeof gb, "%.1f", r.gbps());
  }
  std::printf("%-22s %10.2e %6s %11s %10s %9s %9s %13s\n", name.c_str(), r.verdict.max_abs, r.verdict.pass ? "pass" : "FAIL",
              ms, mn, tf, gb, human_bytes(static_cast<double>(r.workspace)).c_str());
  if (!r.verdict.pass) std::printf("    FAILED: %s\n", r.verdict.why.c_str());
  if (!r.plan.empty()) std::printf("    %s\n", r.plan.c_str());
}

void print_skip(const std::string& variant, const std::string& why) {
  std::printf("%-22s skipped: %s\n", variant.c_str(), why.c_str());
}

void print_stages(const Result& r) {
  if (r.timing.stages.size() < 2 || r.timing.median_ms <= 0) return;
  double total = 0;
  for (const auto& s : r.timing.stages) total += s.ms;
  const double copy = copy_bandwidth_gbps();
  for (const auto& s : r.timing.stages) {
    std::printf("    %-30s %9.4f ms %4.0f%%", s.stage.c_str(), s.ms, 100 * s.ms / total);
    if (s.bytes > 0 && s.ms > 0) {
      const double gbps = s.bytes / (s.ms * 1e6);
      std::printf("  %9.1f GB/s", gbps);
      if (copy > 0) std::printf(" = %3.0f%% of a device copy (%.0f GB/s, measured now)", 100 * gbps / copy, copy);
    }
    std::printf("\n");
  }
}

const char* const kCsvHeader =
    "device,driver,cuda,commit,timestamp,chapter,variant,dtype,B,H,Lq,Lk,d,causal,mask,median_ms,min_ms,tflops,gbps,"
    "extra_bytes,max_err,pass,kind,bound";

std::string csv_row(const Result& r, const ModelledRow* modelled) {
  const DeviceInfo& dev = device();
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const Problem& p = r.problem;
  std::ostringstream s;
  s << '"' << (modelled ? modelled->gpu : dev.name) << "\"," << (modelled ? "none" : dev.driver_version) << ','
    << version_string(dev.runtime) << ',' << commit_id() << ',' << ts << ',' << r.variant->chapter << ','
    << r.variant->name << ',' << dtype_name(p.dtype) << ',' << p.B << ',' << p.H << ',' << p.Lq << ',' << p.Lk << ','
    << p.d << ',' << causal_name(p.causal) << ',' << mask_name(p.mask) << ',' << r.timing.median_ms << ','
    << r.timing.min_ms << ',' << r.tflops() << ',' << r.gbps() << ',' << r.workspace << ',' << r.verdict.max_abs << ','
    << (r.verdict.pass ? 1 : 0) << ',' << (modelled ? "modelled" : dev.emulated ? "emulated" : "measured") << ','
    << (modelled ? modelled->bound : "");
  return s.str();
}

void append_csv(const std::string& path, const std::vector<Result>& rows, const ModelledRow* modelled) {
  bool fresh;
  {
    std::ifstream in(path);
    fresh = !in || in.peek() == std::ifstream::traits_type::eof();
  }
  std::ofstream out(path, std::ios::app);
  if (!out) throw UsageError("cannot write the CSV file " + path);
  if (fresh) out << kCsvHeader << '\n';
  for (const Result& r : rows) out << csv_row(r, modelled) << '\n';
}

}  // namespace attn
