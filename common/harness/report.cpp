#include "report.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
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

void print_checked_rows(const Problem& p, const Selection& sel) {
  const size_t rows = p.heads() * static_cast<size_t>(p.Lq), checked = sel.heads.size() * sel.rows.size();
  if (checked == rows)
    std::printf("checked: every output row (%zu = B*H*Lq) of every variant against the fp64 reference\n", rows);
  else
    std::printf("checked: %zu of the %zu output rows against the fp64 reference (%zu heads x %zu rows: first, last, "
                "tile edges, random; --full-check for every row)\n",
                checked, rows, sel.heads.size(), sel.rows.size());
}

namespace {
// Units that fit the device: a GPU's TFLOP/s and GB/s, the emulator's GFLOP/s and MB/s (which
// would print as 0.000 TFLOP/s and 0.0 GB/s).
struct Units {
  const char *flops, *bytes;
  double flops_per_tflop, bytes_per_gb;
};
Units units() {
  return device().emulated ? Units{"GFLOP/s", "MB/s", 1e3, 1e3} : Units{"TFLOP/s", "GB/s", 1, 1};
}
}  // namespace

void print_table_header() {
  std::printf("\n%-22s %10s %6s %11s %10s %9s %9s %13s\n", "variant", "max error", "check", "median ms", "min ms",
              units().flops, units().bytes, "extra memory");
}

void print_row(const Result& r, const std::string& label) {
  const std::string name = label.empty() ? r.variant->name : label;
  if (!r.error.empty()) {
    std::printf("%-22s FAILED: %s\n", name.c_str(), r.error.c_str());
    return;
  }
  const bool timed = r.timing.reps > 0;
  char ms[32] = "-", mn[32] = "-", tf[32] = "-", gb[32] = "-";
  if (timed) {
    std::snprintf(ms, sizeof ms, "%.4f", r.timing.median_ms);
    std::snprintf(mn, sizeof mn, "%.4f", r.timing.min_ms);
    std::snprintf(tf, sizeof tf, "%.3f", r.tflops() * units().flops_per_tflop);
    std::snprintf(gb, sizeof gb, "%.1f", r.gbps() * units().bytes_per_gb);
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
      std::printf("  %9.1f %s", gbps * units().bytes_per_gb, units().bytes);
      if (copy > 0) std::printf(" = %3.0f%% of a device copy (%.0f GB/s, measured now)", 100 * gbps / copy, copy);
    }
    std::printf("\n");
  }
}

const char* const kCsvHeader =
    "device,driver,cuda,commit,timestamp,chapter,variant,dtype,B,H,Lq,Lk,d,causal,mask,median_ms,min_ms,tflops,gbps,"
    "extra_bytes,max_err,pass,kind,bound,mods";

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"')
      quoted = !quoted;
    else if (ch == ',' && !quoted)
      f.emplace_back();
    else
      f.back() += ch;
  }
  return f;
}

std::string csv_row(const Result& r, const ModelledRow* modelled) {
  const DeviceInfo& dev = device();
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const Problem& p = r.problem;
  std::ostringstream s;
  s << '"' << (modelled ? modelled->gpu : dev.name) << "\"," << (modelled ? "none" : dev.driver_version) << ','
    << (dev.emulated || modelled ? "none" : version_string(dev.runtime)) << ',' << commit_id() << ',' << ts << ','
    << r.variant->chapter << ','
    << r.variant->name << ',' << dtype_name(p.dtype) << ',' << p.B << ',' << p.H << ',' << p.Lq << ',' << p.Lk << ','
    << p.d << ',' << causal_name(p.causal) << ',' << mask_name(p.mask) << ',' << r.timing.median_ms << ','
    << r.timing.min_ms << ',' << r.tflops() << ',' << r.gbps() << ',' << r.workspace << ',' << r.verdict.max_abs << ','
    << (r.verdict.pass ? 1 : 0) << ',' << (modelled ? "modelled" : dev.emulated ? "emulated" : "measured") << ','
    << (modelled ? modelled->bound : "") << ",\"" << p.mods() << '"';
  return s.str();
}

namespace {
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}
}  // namespace

void check_csv_target(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError("--csv needs a file name");
  const fs::path file(path);
  std::error_code ec;
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (fs::is_directory(file, ec)) throw UsageError("--csv " + path + " is a folder: name a file in it");
  if (!fs::is_directory(folder, ec))
    throw UsageError("--csv " + path + ": the folder " + folder.string() + " does not exist (create it first)");
  if (fs::exists(file, ec)) {
    if (!fs::is_regular_file(file, ec)) throw UsageError("--csv " + path + " is not a regular file");
    // Open for appending without writing: what append_csv will do, permission and all.
    if (FILE* f = std::fopen(path.c_str(), "a")) {
      std::fclose(f);
    } else {
      throw UsageError("--csv " + path + " cannot be written: " + std::strerror(errno));
    }
    if (fs::file_size(file, ec) > 0 && first_line(path) != kCsvHeader)
      throw UsageError("--csv " + path + " is not one of this project's CSV files, or has other columns than this "
                       "build writes (its first line is not the header of results/README.md): rows are not appended "
                       "to it; name a new file");
  } else {
    // Creating the file and removing it again is the one sure test (permissions, read-only file
    // systems, root's rights): nothing is left behind if the run then stops.
    FILE* f = std::fopen(path.c_str(), "wx");
    if (!f) throw UsageError("--csv " + path + " cannot be created: " + std::strerror(errno));
    std::fclose(f);
    std::remove(path.c_str());
  }
}

void append_csv(const std::string& path, const std::vector<Result>& rows, const ModelledRow* modelled) {
  for (const Result& r : rows)
    if (r.timing.reps == 0 && r.error.empty()) throw UsageError("no CSV row without a timing (--reps 0 checks only): nothing written to " + path);
  std::string text;
  {
    std::ifstream in(path);
    if (!in || in.peek() == std::ifstream::traits_type::eof()) text = std::string(kCsvHeader) + "\n";
  }
  for (const Result& r : rows)
    if (r.error.empty()) text += csv_row(r, modelled) + "\n";  // a row that failed has no time to record
  // Every row formed before the file is touched, then written at once.
  std::ofstream out(path, std::ios::app);
  out << text << std::flush;
  if (!out) throw UsageError("cannot write the CSV file " + path);
}

}  // namespace attn
