// profile.cpp: one counted run of a variant, printed stage by stage, and its modelled GPU time.
#include "profile.h"

#include <CLI/CLI.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "errors.h"
#include "model/published.h"
#include "model/sass_fresh.h"
#include "report.h"

namespace attn {

const char* const kCountersCsvHeader =
    "commit,timestamp,chapter,variant,stage,dtype,B,H,Lq,Lk,d,causal,mask,sample_blocks,heads_emulated,rows_emulated,"
    "launches,blocks,"
    "threads_per_block,ld_requests,ld_sectors_per_request,st_requests,st_sectors_per_request,cp_async_requests,"
    "cp_async_sectors_per_request,atom_requests,atom_sectors_per_request,dram_read_bytes,dram_write_bytes,l2_bytes,"
    "shared_requests,shared_wavefronts,shared_conflicts,ldmatrix_requests,ldmatrix_conflicts,"
    "cp_async_dst_conflicts,l1_wavefronts,mma,mma_flop,wgmma,wgmma_flop,tma_requests,tma_sectors_per_request,mufu,barriers,"
    "shuffles,instructions,gpu,modelled_us,bound,dram_us,"
    "l2_us,l1_us,issue_us,mufu_us,tensor_us,launch_us,sm_share,blocks_per_sm,waves,beyond_l2,latency_us,mods";

void add_profile_options(CLI::App& app, ProfileOptions& o, bool flag) {
  if (flag)
    app.add_flag("--profile", o.on,
                 "instead of timing the emulator, run each variant once with its counters on: what a GPU profiler "
                 "would count, and the GPU time they model (a counters build: notes/performance_model.md)");
  app.add_option("--sample-blocks", o.sample_blocks,
                 "with --profile: group the requests of every k-th block only and scale them up (DRAM bytes and "
                 "operation counts still cover every block)")
      ->capture_default_str();
  app.add_option("--emulated-heads", o.emulated_heads,
                 "with --profile: emulate every block of this many (batch, head) pairs and scale their counts up to "
                 "all B*H (0: every head, unless the emulation would take long; then as many as fit in about 20 s)")
      ->capture_default_str();
  app.add_option("--row-groups", o.row_groups,
                 "with --profile: emulate 1, 2 (and 3) groups of 256 query rows (768 for a kernel of 192-row blocks) and "
                 "extrapolate the counts to all of "
                 "them: auto (when one head alone would take long), always (when the problem allows it), never")
      ->capture_default_str();
  app.add_option("--gpu", o.gpu,
                 "cpu backend: the GPU the emulator stands for (default h100, or SIMT_GPU): its compute capability "
                 "and shared memory hold every launch, and with --profile the model takes its rates; `list` shows "
                 "them all");
  app.add_option("--counters-csv", o.counters_csv, "with --profile: append every stage's counters to this CSV file");
  app.add_option("--emulator-times", o.emulator_times,
                 "with --profile: show the emulator's times from this CSV (written by a plain build with --csv, on "
                 "the same problem) beside the modelled ones; a counters build's own times are the instrumented "
                 "emulator's");
}

std::optional<Profiler> whole_problem_profiler(const ProfileOptions& o, const std::string& command, bool heads) {
  std::optional<Profiler> profiler;
  if (o.on) profiler.emplace(o);  // refuses before any work
  if (o.row_groups != "auto")
    throw UsageError("--row-groups samples a forward profile's rows; " + command + " --profile emulates every row");
  if (o.emulated_heads != 0 && !heads)
    throw UsageError("--emulated-heads samples a forward or backward profile; " + command +
                     " --profile chooses what it emulates itself");
  return profiler;
}

void check_profile_options(const CLI::App& app, const ProfileOptions& o, bool profiling, const std::string& csv) {
  if (app.count("--gpu") && o.gpu.empty()) throw UsageError("--gpu needs a GPU's key (--gpu list shows them)");
  if (!profiling)
    for (const char* only : {"--sample-blocks", "--emulated-heads", "--row-groups", "--counters-csv", "--emulator-times"})
      if (app.count(only)) throw UsageError(std::string(only) + " is --profile's: add --profile");
  std::error_code a, b;
  if (!csv.empty() && !o.counters_csv.empty() &&
      std::filesystem::weakly_canonical(std::filesystem::absolute(csv, a), a) ==
          std::filesystem::weakly_canonical(std::filesystem::absolute(o.counters_csv, b), b))
    throw UsageError("--csv and --counters-csv name the same file, " + csv + ": its rows are of two kinds; give two files");
}

bool apply_gpu_option(const ProfileOptions& o) {
  if (o.gpu.empty()) return false;
  if (o.gpu == "list") {
    std::printf("%-10s %-18s %-7s %5s %13s %13s %11s %13s %16s %9s  %s\n", "--gpu", "GPU", "arch", "SMs", "smem/block B",
                "smem/SM B", "threads/SM", "L2/DRAM clk", "DRAM TB/s x copy", "modelled", "sources");
    for (const gpus::Gpu& g : gpus::kGpus)
      std::printf("%-10s %-18s %-7s %5d %13d %13d %11d %6g/%-6g %9g x %.2f %9s  %s%s%s\n", g.key, g.name, g.arch().c_str(),
                  g.sms, g.smem_optin_bytes, g.smem_per_sm_bytes, g.max_threads_per_sm, g.l2_latency_clk, g.dram_latency_clk,
                  g.dram_tb_s, g.dram_copy_share, g.modelled() ? "yes" : "no", g.sources, g.modelled() ? "; rates: " : "",
                  g.modelled() ? g.rate_sources : "");
    std::printf("\nThe sources are named in common/gpus/gpus.h. Modelled: the model has this GPU's rates "
                "(--profile); every GPU's limits hold the emulator's launches. DRAM: the datasheet's rate x the share "
                "a streaming copy reaches of it, the model's DRAM rate.\n");
    return true;
  }
  const gpus::Gpu* g = gpus::find_gpu(o.gpu);
  if (!g) throw UsageError("unknown --gpu \"" + o.gpu + "\": use one of " + gpus::gpu_keys() + " (--gpu list describes them)");
  emulate_gpu(*g);
  return false;
}

void require_rates(const gpus::Gpu& g) {
  if (g.modelled()) return;
  std::string modelled;
  for (const gpus::Gpu& m : gpus::kGpus)
    if (m.modelled()) modelled += (modelled.empty() ? "" : ", ") + std::string(m.key);
  throw UsageError(std::string("the model has no rates for the ") + g.name + " yet (it models " + modelled +
                   "); without --profile the emulator still runs every variant within the " + g.name + "'s limits");
}

namespace {
// The SASS data's sources edited since it was written (model/sass_fresh.h), checked once against
// the source tree this binary was built from; none when that tree is not there to read.
const std::vector<std::string>& stale_sass() {
  static const std::vector<std::string> stale = [] {
    const std::string root = FLASHSTEPS_SOURCE_DIR;
    return std::ifstream(root + "/CMakeLists.txt") ? stale_sass_sources(root) : std::vector<std::string>{};
  }();
  return stale;
}
// What the issue line says when the rows are not g's architecture's own (sass_table), and how to
// have them.
std::string not_own(const gpus::Gpu& g) {
  const int cc = sass_cc(g.cc());
  const std::string own = "add " + std::to_string(g.cc()) + " to the counters build's -DFLASHSTEPS_SASS_ARCHS";
  if (cc == g.cc()) return "";
  if (cc != 90)
    return "; sm_" + std::to_string(cc) + "'s code, which the default GPU build runs on an " + g.arch() + " GPU (" + own +
           " for what a build for it compiles)";
  return "; sm_90's code stands in for " + g.arch() + "'s: " + own + " to compile " + g.arch() + "'s (minutes)" +
         (*kSassArchs.why ? std::string(" (this build's: ") + kSassArchs.why + ")" : "");
}

// Whether a stage on GPU g takes a row of sass_sm90.inc's that an edit left stale (rows compiled
// for another architecture by this build are its sources' as they are now).
bool stale_stage(const StageProfile& s, const gpus::Gpu& g) {
  if (sass_cc(g.cc()) != 90) return false;
  for (const std::string& k : s.kernels)
    if (find_sass(k) && built_from(k, stale_sass())) return true;
  return false;
}

// The GPU a profile models: --gpu's, else the one the emulator stands for.
const gpus::Gpu* modelled_gpu(const ProfileOptions& o) {
  if (!o.gpu.empty()) return gpus::find_gpu(o.gpu);
  return device().gpu ? device().gpu : gpus::find_gpu("h100");
}
}  // namespace

Profiler::Profiler(const ProfileOptions& o) : o_(o), gpu_(modelled_gpu(o)) {
  if (!simt::counters::available()) {
    if (FLASHSTEPS_GPU)
      throw UsageError(
          "profiling counts with the CPU emulator, and this is a GPU build; on a GPU, Nsight Compute (ncu) counts "
          "the same things (notes/performance_model.md names its metrics), or build the counters build with "
          "-DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON");
    throw UsageError(
        "this build does not count: profiling needs a build configured with the counters on. From the "
        "repository's root:\n"
        "  cmake -S . -B build-counters -G Ninja -DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON\n"
        "  cmake --build build-counters -j2 --target flashsteps\n"
        "then run build-counters/bin/flashsteps profile (or a chapter binary of that build with --profile)");
  }
  if (!gpu_) throw UsageError("unknown --gpu \"" + o.gpu + "\": use one of " + gpus::gpu_keys());
  require_rates(*gpu_);
  if (o.sample_blocks < 1) throw UsageError("--sample-blocks must be at least 1 (1: every block)");
  const bool sm90 = sass_cc(gpu_->cc()) == 90;  // the notes below are about sm_90's rows
  if (sm90 && kSassLive.count > 0) {
    std::string files;
    for (int i = 0; i < kSassLive.edited_count; ++i) files += (files.empty() ? "" : ", ") + std::string(kSassLive.edited[i].path);
    std::fprintf(stderr, "note: %s changed since common/model/sass_sm90.inc was written: this build compiled the SASS of "
                 "the kernels built from it again (%d rows), and models them with their own\n", files.c_str(), kSassLive.count);
  }
  if (sm90 && !stale_sass().empty()) {
    std::string files;
    for (const std::string& f : stale_sass()) files += (files.empty() ? "" : ", ") + f;
    const std::string why = *kSassLive.why ? std::string(" (") + kSassLive.why + ")" : "";
    std::fprintf(stderr,
                 "warning: %s changed since common/model/sass_sm90.inc was written and this build did not compile its "
                 "kernels again%s: the issue and latency terms and the registers of the kernels built from it are the "
                 "old kernels' (rows marked *). Rebuild the counters build (it compiles an edited kernel's SASS when "
                 "nvcc and nvdisasm are there), or regenerate the data with python3 tools/sass_issue.py --out "
                 "common/model/sass_sm90.inc (several minutes).\n",
                 files.c_str(), why.c_str());
  }
  if (o.emulated_heads < 0)
    throw UsageError("--emulated-heads must be 0 (chosen by the problem's size) or a number of heads, not " +
                     std::to_string(o.emulated_heads));
  if (o.row_groups != "auto" && o.row_groups != "always" && o.row_groups != "never")
    throw UsageError("--row-groups takes auto, always or never, not \"" + o.row_groups + "\"");
  if (!o.emulator_times.empty()) {
    std::ifstream in(o.emulator_times);
    std::string line;
    if (!in || !std::getline(in, line)) throw UsageError("cannot read --emulator-times " + o.emulator_times);
    if (line != kCsvHeader)
      throw UsageError(o.emulator_times + " does not start with the project's CSV header (results/README.md)");
  }
  if (!o.counters_csv.empty()) {  // a file that exists must be one of ours: refused now, not after the work
    std::ifstream in(o.counters_csv);
    std::string first;
    if (in && std::getline(in, first) && !first.empty() && first != kCountersCsvHeader)
      throw UsageError(o.counters_csv + " does not start with the counters CSV header (results/README.md); not appending to it");
  }
}

namespace {

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}
std::string count(double x) { return x >= 1e7 ? fmt("%.3g", x) : fmt("%.0f", x); }
double per(double a, double b) { return b > 0 ? a / b : 0; }
std::string mb(double bytes) { return fmt(bytes < 1e5 ? "%.4f" : "%.2f", bytes / 1e6) + " MB"; }

// Stops the counters however the run ends.
struct Counting {
  explicit Counting(int sample) {
#if SIMT_COUNTERS
    simt::counters::start({sample});
#else
    (void)sample;
#endif
  }
  ~Counting() {
#if SIMT_COUNTERS
    simt::counters::stop();
#endif
  }
};

void print_stage(const StageProfile& s, const gpus::Gpu& g, int sample) {
  const simt::Counters& c = s.counters;
  std::printf("  %s: %.0f launch%s, %.0f block%s of %.0f threads%s\n", s.stage.c_str(), c.launches, c.launches == 1 ? "" : "es",
              c.blocks, c.blocks == 1 ? "" : "s", c.threads_per_block,
              sample > 1 ? fmt(", requests grouped in %.0f of them and scaled up", c.blocks_counted).c_str() : "");
  std::string line;
  for (int k = 0; k < simt::kGlobalKinds; ++k) {
    const simt::GlobalOps& o = c.global[k];
    if (o.requests == 0) continue;
    line += (line.empty() ? "" : " | ") + std::string(simt::global_kind_name(k)) + " " + count(o.requests) + " req, " +
            fmt("%.2f sectors/req", per(o.sectors, o.requests)) + fmt(" (%.1f lanes)", per(o.lanes, o.requests));
  }
  std::printf("    global    %s\n", line.empty() ? "none" : line.c_str());
  const std::string again =
      s.terms.dram_rereads > 0 ? " + " + mb(s.terms.dram_rereads) + " read again (modelled: the grid's order, the blocks' own re-reads)" : "";
  const std::string l2_again = s.terms.l2_rereads > 0 ? " + " + mb(s.terms.l2_rereads) + " again (modelled)" : "";
  std::printf("    memory    DRAM %s read (each sector once%s)%s + %s written; L2 %s%s\n", mb(32 * c.dram_read_sectors).c_str(),
              s.terms.beyond_l2 ? "; more than L2 holds" : "", again.c_str(), mb(32 * c.dram_write_sectors).c_str(),
              mb(l2_bytes(c)).c_str(), l2_again.c_str());
  line.clear();
  for (int k = 0; k < simt::kSharedKinds; ++k) {
    const simt::SharedOps& o = c.shared[k];
    if (o.requests == 0) continue;
    line += (line.empty() ? "" : " | ") + std::string(simt::shared_kind_name(k)) + " " + count(o.requests) + " req, " +
            fmt("%.2f wavefronts/req", per(o.wavefronts, o.requests)) + ", " + count(o.conflicts()) + " conflicts";
  }
  std::printf("    shared    %s\n", line.empty() ? "none" : line.c_str());
  std::printf("    ops       mma.sync %s (%s FLOP)%s | MUFU %s | barriers %s | shuffles %s\n", count(c.mma).c_str(),
              count(c.mma_flop).c_str(),
              c.wgmma > 0 ? (" | wgmma " + count(c.wgmma) + " warp parts (" + count(c.wgmma_flop) + " FLOP)").c_str() : "",
              count(c.mufu).c_str(), count(c.barriers).c_str(), count(c.shuffles).c_str());
  const Modelled& m = s.terms;
  std::printf("    modelled  %.2f us on %s, %s-bound: DRAM %.2f, L2 %.2f, L1 %.2f, issue %.2f, FMA %.2f, MUFU %.2f, tensor %.2f, "
              "latency %.2f us (its chains hold fill and drain %.2f) (%.0f%% of the SMs' time busy) + launch %.2f us\n",
              s.us, g.name, s.bound.c_str(), m.dram, m.l2, m.l1, m.issue, m.fma, m.mufu, m.tensor, m.latency, m.fill_drain,
              100 * m.share, m.launch);
  // A TMA ring (chapter 09's steps c onwards): what the emulator counted of it, and what its refills
  // wait for their stages in the model (model.h, "The ring"; notes/performance_model.md, "Chapter
  // 09's SASS").
  if (c.ring_stages > 0) {
    char wait[64];  // the ring is timed from the kernel's SASS row (its release): none, no wait modelled
    if (m.sass_known) std::snprintf(wait, sizeof wait, "%.2f us (in the latency)", m.ring);
    else std::snprintf(wait, sizeof wait, "not modelled (no SASS row)");
    std::printf("    ring      %.0f stages of %s bytes; a tile's stage given back %.0f tile%s after the consumers start on "
                "it; %s of %s tiles copied into a stage an earlier tile gave back; their wait for a stage beyond the "
                "chains %s\n",
                c.ring_stages, count(c.ring_stage_bytes).c_str(), c.ring_lag, c.ring_lag == 1 ? "" : "s",
                count(c.ring_refills).c_str(), count(c.ring_tiles).c_str(), wait);
  }
  const int cc = sass_cc(g.cc());
  if (m.sass_known)
    std::printf("    issue     %s warp instructions (the sm_%d SASS's, weighted by the counts above: model/sass.h)%s%s\n",
                count(m.instructions).c_str(), cc, not_own(g).c_str(),
                stale_stage(s, g) ? "; * from an older source of the kernel (stale SASS data)" : "");
  else
    std::printf("    issue     not modelled: the sm_%d SASS data (%s) does not know kernel \"%s\"\n", cc,
                cc == 90 ? "model/sass_sm90.inc" : "FLASHSTEPS_SASS_ARCHS", s.unknown_kernel.c_str());
  std::printf("    occupancy %.0f block%s per SM by threads, %sshared memory: %.0f wave%s\n", m.blocks_per_sm,
              m.blocks_per_sm == 1 ? "" : "s", m.sass_known ? "registers and " : "(registers not known) ", m.waves,
              m.waves == 1 ? "" : "s");
}

// The Lq of each problem a row-group sample emulated, "256;512", or "" for every row.
std::string rows_emulated(const SamplePlan& plan) {
  std::string out;
  for (int r : plan.rows) {  // appended piece by piece: GCC 12 -O3 misreads `"" + to_string` (-Wrestrict)
    if (!out.empty()) out += ';';
    out += std::to_string(r);
  }
  return out;
}

std::string now_utc() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return ts;
}

}  // namespace

namespace {
// The counters build emulates a kernel 4 to 20 times slower than a plain build (Variant::
// cpu_flops_per_second): measured at B=1 H=1 N=1024 d=128, 4.3x for naive and lean_loop, 20x for
// row_per_thread (a block per head: one worker). A whole problem expected to take longer than
// kWholeProblemUpTo seconds per variant is sampled.
constexpr double kCountersSlowdown = 10;
constexpr double kWholeProblemUpTo = 20;
// Every row of what a sampled profile emulates is checked up to this much work (heads x Lq x Lk x d,
// 4k x 4k keys at d = 128 in one head). A window's block_mask at N = 16k, d = 128 (one head, 3.4e10)
// took about 15 minutes on a 2-core machine with every row checked, 35 s with a run's rows.
constexpr double kCheckEmulatedUpTo = 4096.0 * 4096 * 128;

// Stages, and launches per stage: what the runs of a plan must share with the whole problem.
template <class Launch>
std::vector<size_t> shape_of(const std::vector<std::vector<Launch>>& launches) {
  std::vector<size_t> shape;
  for (const auto& stage : launches) shape.push_back(stage.size());
  return shape;
}

// One launch of a run: its grid and its blocks' work (LaunchCounters::block_work).
struct RunWork {
  std::array<long long, 3> grid;
  std::vector<float> work;
};

// The whole problem's blocks' work, in its grid `whole` (model/model.h's busy), from the runs that
// emulated part of it (model/sampling.h); empty when they cannot say (the blocks then count alike).
// A grid dimension the runs share with the whole keeps a block's place. One whose size the runs
// differ in holds the rows: per row group, `unit` blocks (the greatest common divisor of the
// differences: a Q tile's blocks, or a row group's Q tiles), numbered from the dimension's start
// or from its end (a heaviest-first grid starts with the last Q tile), whichever makes the last two
// runs agree: a block's work is the same in every run that has it (the runs' rows are the
// problem's first). The last blocks, past the last whole unit and the unit before them if it is in
// none of the other runs (a partial row group), are the whole problem's last. A unit the runs do
// not have gets, block by block, the line through the last run's (is_causal's work grows with the
// row, none's does not: the polynomial the counts follow). Any other dimension that differs holds
// the (batch, head) pairs, of which the runs emulated the first: the others' blocks work as those.
// Where no other dimension differs though the runs emulated 1 of the (batch, head) pairs, the rows'
// dimension holds them too, a pair's blocks after another's (a batched GEMM's grid): it is cut into
// equal parts, each the rows of one (the runs' part is not cut: with more than 1 emulated, none).
std::vector<float> whole_work(const std::vector<RunWork>& runs, const std::array<long long, 3>& whole, const HeadSample& heads) {
  if (runs.empty()) return {};
  for (const RunWork& r : runs)
    if (r.work.empty() || r.work.size() != static_cast<size_t>(r.grid[0] * r.grid[1] * r.grid[2])) return {};
  const RunWork& last = runs.back();
  const std::array<long long, 3>& e = last.grid;
  if (e == whole) return last.work;
  int q = -1;
  for (int d = 0; d < 3; ++d)
    if (runs.front().grid[d] != e[d]) {
      if (q >= 0) return {};
      q = d;
    }
  const auto at = [](const RunWork& r, std::array<long long, 3> i) {
    return static_cast<double>(r.work[static_cast<size_t>(i[0] + r.grid[0] * (i[1] + r.grid[1] * i[2]))]);
  };
  bool by_heads = heads.sampled();  // the (batch, head) pairs in the rows' dimension
  for (int d = 0; d < 3; ++d) by_heads &= d == q || e[d] == whole[d];
  if (q >= 0 && by_heads && heads.emulated != 1) return {};
  const long long rows = q < 0 ? 0 : by_heads ? whole[q] / heads.total : whole[q];  // the rows' dimension, one pair's part
  if (q >= 0 && rows * (by_heads ? heads.total : 1) != whole[q]) return {};
  bool from_end = false;
  long long unit = 0, edge = 0;  // the blocks per row group; the last run's blocks that stand for the whole's last
  const auto place = [&](long long t, long long n) { return from_end ? n - 1 - t : t; };  // block t's coordinate
  if (q >= 0) {
    for (size_t r = 1; r <= runs.size(); ++r)
      unit = std::gcd(unit, std::llabs((r < runs.size() ? runs[r].grid[q] : rows) - runs[r - 1].grid[q]));
    const RunWork& before = runs[runs.size() - 2];
    const long long n = before.grid[q], m = e[q];
    if (unit == 0 || n % unit != m % unit || rows % unit != m % unit || n < m % unit + unit) return {};
    const long long tail = m % unit;
    double differ[2] = {0, 0};  // numbered from the start, from the end: the blocks before either's last unit
    for (int end = 0; end < 2; ++end)
      for (long long t = 0; t < n - tail - unit; ++t) {
        std::array<long long, 3> a{}, b{};
        a[q] = end ? m - 1 - t : t, b[q] = end ? n - 1 - t : t;
        differ[end] += std::fabs(at(last, a) - at(before, b));
      }
    from_end = differ[1] < differ[0];
    double partial = 0;  // the earlier run's last unit against the same blocks of the last run
    for (long long t = n - tail - unit; t < n - tail; ++t) {
      std::array<long long, 3> a{}, b{};
      a[q] = place(t, m), b[q] = place(t, n);
      partial += std::fabs(at(last, a) - at(before, b)) / std::max(1.0, at(last, a));
    }
    edge = tail + (partial > 1e-6 ? unit : 0);
    if (m - edge <= 0) return {};
  }
  std::vector<float> out(static_cast<size_t>(whole[0] * whole[1] * whole[2]));
  size_t n = 0;
  for (long long z = 0; z < whole[2]; ++z)
    for (long long y = 0; y < whole[1]; ++y)
      for (long long x = 0; x < whole[0]; ++x, ++n) {
        const std::array<long long, 3> i{x, y, z};
        std::array<long long, 3> j{};
        for (int d = 0; d < 3; ++d) j[d] = d == q ? 0 : i[d] % e[d];
        if (q >= 0) {
          const long long t = place(i[q] % rows, rows), have = e[q] - edge;  // its number; the last run's inner blocks
          if (t >= rows - edge) {  // one of the last
            j[q] = place(t - (rows - e[q]), e[q]);
          } else if (t < have) {
            j[q] = place(t, e[q]);
          } else {  // the line through the last run's blocks at the same place in their units
            double sk = 0, sw = 0, skk = 0, skw = 0, k = 0;
            for (long long u = t % unit; u < have; u += unit, ++k) {
              j[q] = place(u, e[q]);
              const double w = at(last, j);
              sk += u, sw += w, skk += double(u) * u, skw += u * w;
            }
            const double den = k * skk - sk * sk, slope = den > 0 ? (k * skw - sk * sw) / den : 0;
            out[n] = k > 0 ? static_cast<float>(std::max(0.0, (sw - slope * sk) / k + slope * static_cast<double>(t))) : 0.f;
            continue;
          }
        }
        out[n] = static_cast<float>(at(last, j));
      }
  return out;
}
}  // namespace

std::vector<std::vector<simt::LaunchCounters>> dry_run(const std::function<void(Stages&)>& run) {
  std::vector<std::vector<simt::LaunchCounters>> out;
#if SIMT_COUNTERS
  simt::counters::start({1, true});
  Stages st;
  st.begin();
  run(st);
  st.end();
  simt::counters::stop();
  for (const Stages::Time& t : st.times()) out.push_back(t.counters);
#else
  (void)run;  // only a counters build records launches
#endif
  return out;
}

// The kernels' addresses point at nothing they would read.
std::vector<std::vector<simt::LaunchCounters>> dry_launches(const Variant& v, const Problem& p) {
  static const char nothing[64] = {};
  AttentionParams a = attention_params(p, nothing, nothing, nothing, nothing);
  a.o = const_cast<char*>(nothing);
  a.workspace = const_cast<char*>(nothing);
  a.lse = v.writes_lse ? reinterpret_cast<float*>(const_cast<char*>(nothing)) : nullptr;
  return dry_run([&](Stages& st) { v.run(a, st); });
}

void Profiler::check_plan(const Variant& v, const Problem& p, const SamplePlan& plan) const {
  if (!plan.sampled()) return;
  const std::vector<size_t> whole = shape_of(dry_launches(v, p));
  for (const Problem& e : emulated_problems(p, plan))
    if (shape_of(dry_launches(v, e)) != whole)
      throw UsageError("variant " + v.name + " launches other kernels for " + p.describe() + " than for " +
                       e.describe() + ", the part of it a profile would emulate: it cannot be sampled (--emulated-heads " +
                       std::to_string(p.heads()) + " --row-groups never emulates it whole)");
}

std::string SamplePlan::describe(const Problem& p) const {
  if (!sampled()) return "";
  std::string d;
  if (heads.sampled())
    d = fmt("every block of %.0f", static_cast<double>(heads.emulated)) +
        fmt(" of the %.0f (batch, head) pairs, counts multiplied by ", static_cast<double>(heads.total)) +
        fmt("%.6g", heads.factor());
  if (!rows.empty()) {
    std::string lq;
    for (int r : rows) lq += (lq.empty() ? "" : ", ") + std::to_string(r);
    d += std::string(d.empty() ? "" : "; ") + "rows: Lq = " + lq + " (1 to " + std::to_string(rows.size()) +
         fmt(" groups of %.0f rows", row_group) + (p.Lq % row_group ? " and the last partial one" : "") + "), counts " +
         (degree == 1 ? "a line" : "a quadratic") + fmt(" in the groups taken to the problem's %.0f", p.Lq / row_group);
  }
  return d + "; the rest was not emulated, and went unchecked";
}

long long Profiler::heads_to_emulate(double seconds_per_head, long long heads) const {
  const double per_head = seconds_per_head * kCountersSlowdown;
  if (o_.emulated_heads > 0) return std::min(heads, o_.emulated_heads);
  if (per_head * static_cast<double>(heads) <= kWholeProblemUpTo) return heads;
  return std::max(1LL, std::min(heads, static_cast<long long>(kWholeProblemUpTo / per_head)));
}

SamplePlan Profiler::plan(const Variant& v, const Problem& p) const {
  SamplePlan s;
  const long long heads = static_cast<long long>(p.heads());
  s.heads.total = heads;
  Problem dense = p;  // the emulator runs every (query, key) pair of a block, masked or not
  dense.causal = Causal::none;
  dense.mod = ModKind::none;
  const double plain = dense.flops() / static_cast<double>(heads) / (v.cpu_flops_per_second * std::max(1, device().sms));
  const double per_head = plain * kCountersSlowdown;
  s.heads.emulated = heads_to_emulate(plain, heads);
  // Grouped-query attention: whole groups of the query heads that share a K/V head, whose reads of
  // it cross from DRAM once for the group (B = 1: a packed batch).
  if (const long long g = p.H / p.kv_heads(); g > 1) s.heads.emulated = std::min(heads, (s.heads.emulated + g - 1) / g * g);
  // Row groups: when one head alone would take long (or always, when asked), and the problem is
  // one whose counts are a polynomial in its row groups (model/sampling.h): without is_causal a
  // line; with it a quadratic (a row's visible keys grow with its position, and whether a kernel
  // skips them by tile or by key, or reads S up to them, its counts follow), as long as the first
  // rows of a shorter problem are the problem's first rows (top-left, or Lq = Lk) and no row sees
  // every key before the last group (Lq <= Lk). A mask_mod's counts follow its pattern (a prefix,
  // documents, random blocks): no polynomial, every row emulated.
  const bool causal = p.causal != Causal::none;
  s.degree = causal ? 2 : 1;
  const bool polynomial = p.mod == ModKind::none &&
                          (!causal || p.Lq == p.Lk || (p.causal == Causal::top_left && p.Lq <= p.Lk));
  s.row_group = v.row_group ? v.row_group(p) : kRowGroup;
  const int groups = p.Lq / s.row_group;
  const bool wanted = o_.row_groups == "always" ||
                      (o_.row_groups == "auto" && s.heads.emulated == 1 && per_head > kWholeProblemUpTo);
  if (wanted && polynomial && groups >= s.degree + 2)  // at least one group more than the runs emulate
    for (int m = 1; m <= s.degree + 1; ++m) s.rows.push_back(m * s.row_group + p.Lq % s.row_group);
  return s;
}

std::vector<Problem> emulated_problems(const Problem& p, const SamplePlan& plan) {
  Problem base = p;
  if (plan.heads.sampled()) {
    base.B = 1, base.H = static_cast<int>(plan.heads.emulated);
    if (p.Hkv > 0) base.Hkv = static_cast<int>(plan.heads.emulated / (p.H / p.kv_heads()));  // whole groups (plan)
    if (!p.alibi_slopes.empty()) {  // the emulated heads' own slopes: head k is (k / H, k % H), per sequence when packed
      base.alibi_slopes.clear();
      for (int s = 0; s < (p.packed() ? p.slope_batches() : 1); ++s)
        for (int k = 0; k < base.H; ++k) base.alibi_slopes.push_back(p.packed() ? p.slope(s, k) : p.slope(k / p.H, k % p.H));
    }
  }
  if (plan.rows.empty()) return {base};
  std::vector<Problem> out;
  for (int rows : plan.rows) {
    Problem e = base;
    e.Lq = rows;
    // Lq = Lk: bottom-right is top-left, which keeps the first rows' keys when Lq shrinks.
    if (e.causal == Causal::bottom_right) e.causal = Causal::top_left;
    out.push_back(e);
  }
  return out;
}

const Prepared& Profiler::prepared(const Problem& p, const RunOptions& checks) {
  char key[64];
  std::snprintf(key, sizeof key, "|%d|%llu|%.9g", checks.sample ? 1 : 0, static_cast<unsigned long long>(p.seed),
                static_cast<double>(p.scale()));
  // describe() names a long list's first lengths only; mods() names every setting of chapter 10's.
  const std::string k = p.describe() + " " + p.mods() + (p.mask_per_head ? " per-head" : "") + key;
  for (const auto& [have, in] : prepared_)
    if (have == k) return *in;
  if (prepared_.size() >= 3) prepared_.erase(prepared_.begin());  // the inputs of a few problems at most
  prepared_.emplace_back(k, std::make_unique<Prepared>(p, checks));
  print_checked_rows(p, prepared_.back().second->checker.selection());
  return *prepared_.back().second;
}

const Profile& Profiler::run(const Variant& v, const Problem& p, const SamplePlan& plan, const RunOptions& checks,
                             bool details) {
  Profile prof;
  prof.problem = p;
  prof.plan = plan;
  // What is emulated stands for the rest: all of its rows are checked, up to kCheckEmulatedUpTo; past
  // it (a long head no row group samples, a mask_mod's) the fp64 reference and the same-dtype
  // yardstick would take longer than the emulation, and the rows a run checks are checked instead.
  RunOptions every_row = checks;
  const std::vector<Problem> emulated = emulated_problems(p, plan);
  if (plan.sampled()) {
    double work = 0;  // per (query, key) pair and head dim, as Selection::sample weighs it
    for (const Problem& e : emulated) work = std::max(work, static_cast<double>(e.heads()) * e.Lq * e.Lk * e.d);
    every_row.sample = checks.sample && work > kCheckEmulatedUpTo;
    std::printf("%s%s: sampled: %s (--emulated-heads, --row-groups to choose)\n", details ? "\n" : "", v.name.c_str(),
                plan.describe(p).c_str());
  }
  std::vector<std::string> stages;
  std::vector<MaskKind> as_mask;  // [stage]
  std::vector<std::vector<std::string>> kernels;  // [stage][launch]
  std::vector<std::vector<std::vector<simt::Counters>>> runs;  // [problem emulated][stage][launch]
  std::vector<std::vector<simt::Counters>> first;              // [stage][launch]: the first run's, not scaled
  std::vector<std::vector<std::vector<RunWork>>> run_work;     // [stage][launch][problem emulated]
  std::vector<bool> per_head;                                  // [stage]: its launches' grids hold the heads
  SamplePlan every_head = plan;  // the problems emulated, with every head: their launches' grids
  every_head.heads.emulated = every_head.heads.total;
  const std::vector<Problem> whole_at = emulated_problems(p, every_head);
  for (const Problem& e : emulated) {
    if (plan.sampled()) std::printf("  emulating %s\n", e.describe().c_str());
    const Prepared& in = prepared(e, every_row);
    Result r;
    {
      Counting counting(o_.sample_blocks);
      RunOptions once;
      once.reps = 1, once.warmup = 0;  // one execution, counted; its time (the instrumented emulator's) is not used
      r = run_variant(v, e, in.inputs, in.checker, once);
    }
    // A mask broadcast over (batch, head) is read by every head alike: its sectors count once.
    std::vector<const void*> shared;
    if (e.mask != MaskKind::none && !e.mask_per_head) shared.push_back(in.inputs.mask.get());
    std::vector<std::vector<simt::Counters>> counts;
    stages.clear(), kernels.clear(), as_mask.clear();
    const auto whole = plan.heads.sampled() ? dry_launches(v, whole_at[runs.size()]) : std::vector<std::vector<simt::LaunchCounters>>{};
    for (const Stages::Time& t : r.timing.stages) {
      const size_t st = stages.size();
      stages.push_back(t.stage), as_mask.push_back(t.as_mask);
      counts.emplace_back(), kernels.emplace_back();
      if (run_work.size() <= st) run_work.emplace_back(), per_head.push_back(t.per_head);
      for (const simt::LaunchCounters& l : t.counters) {
        const size_t i = counts.back().size();  // a launch the dry run lacks fails the check below
        if (run_work[st].size() <= i) run_work[st].emplace_back();
        const simt::Counters& own = l.counters;
        run_work[st][i].push_back({{static_cast<long long>(own.grid_x), static_cast<long long>(own.grid_y),
                                    static_cast<long long>(own.grid_z)},
                                   l.block_work});
        const simt::Counters& w = st < whole.size() && i < whole[st].size() ? whole[st][i].counters : l.counters;
        counts.back().push_back(scaled(l, t.per_head ? plan.heads : HeadSample{}, shared, w));
        kernels.back().push_back(l.kernel);
        if (runs.empty()) first.resize(stages.size()), first[st].push_back(l.counters);
      }
    }
    runs.push_back(std::move(counts));
    if (runs.size() == 1 || (!r.verdict.pass && prof.result.verdict.pass)) prof.result = std::move(r);
  }
  std::vector<std::vector<simt::Counters>> launches = runs.front();
  std::vector<std::vector<std::vector<float>>> work(launches.size());  // [stage][launch]
  for (size_t s = 0; s < launches.size(); ++s)
    for (size_t l = 0; l < launches[s].size(); ++l)
      work[s].push_back(s < run_work.size() && l < run_work[s].size() ? run_work[s][l].front().work : std::vector<float>{});
  const double items = v.work_items ? static_cast<double>(v.work_items(p)) : 0;  // a persistent kernel's
  if (plan.sampled()) {
    // The whole problem's launches, from a dry run: their grids. check_plan() made sure before
    // the runs that they share its stages and launches; a kernel that still did not is an error.
    const auto dry = dry_launches(v, p);
    for (const auto& run : runs)
      if (shape_of(run) != shape_of(dry))
        throw std::runtime_error("variant " + v.name + ": the runs of a sampled profile launched other kernels");
    std::vector<double> xs;
    for (size_t i = 1; i <= plan.rows.size(); ++i) xs.push_back(static_cast<double>(i));
    for (size_t s = 0; s < dry.size(); ++s)
      for (size_t l = 0; l < dry[s].size(); ++l) {
        simt::Counters& c = launches[s][l];
        if (!plan.rows.empty()) {
          std::vector<simt::Counters> at;
          for (const auto& run : runs) at.push_back(run[s][l]);
          c = extrapolate(at, xs, p.Lq / plan.row_group);
        }
        // The whole problem's launch: its grid, block and shared memory, exact where the counts are estimates.
        c.blocks = dry[s][l].counters.blocks;
        c.threads_per_block = dry[s][l].counters.threads_per_block, c.smem_bytes = dry[s][l].counters.smem_bytes;
        c.smem_static_bytes = dry[s][l].counters.smem_static_bytes;
        c.grid_x = dry[s][l].counters.grid_x, c.grid_y = dry[s][l].counters.grid_y, c.grid_z = dry[s][l].counters.grid_z;
        // A persistent kernel's blocks, one per SM, are as many whatever part of the problem is
        // emulated, where it has more work items than blocks (with fewer, it is a block per item):
        // what a block does once (its first item's fill, its producer's warps) is the first run's
        // per block, times the whole launch's blocks; its ring's stages are refilled by every tile
        // but their first; its blocks' work, the items each walks, the emulated part does not say.
        if (items > c.blocks && s < first.size() && l < first[s].size() && first[s][l].blocks > 0) {
          const simt::Counters& own = first[s][l];
          c.fill_sectors = own.fill_sectors / own.blocks * c.blocks;
          c.producer_warps = own.producer_warps / own.blocks * c.blocks;
          c.ring_refills = std::max(0.0, c.ring_tiles - c.ring_stages * c.blocks);  // each stage's first tile a block's
          work[s][l].clear();
          continue;
        }
        work[s][l] = whole_work(run_work[s][l],
                                {static_cast<long long>(c.grid_x), static_cast<long long>(c.grid_y), static_cast<long long>(c.grid_z)},
                                s < per_head.size() && per_head[s] ? plan.heads : HeadSample{});
      }
  }
  for (auto& stage : launches)
    for (simt::Counters& c : stage) c.work_items = items;
  return finish(std::move(prof), stages, as_mask, launches, kernels, work, details);
}

const Profile& Profiler::run(const std::function<Result()>& counted, bool details, const HeadSample& heads) {
  Profile prof;
  {
    Counting counting(o_.sample_blocks);
    prof.result = counted();
  }
  prof.problem = prof.result.problem;
  const long long all = static_cast<long long>(prof.problem.heads());
  prof.plan.heads = heads.sampled() ? heads : HeadSample{all, all};
  std::vector<std::string> stages;
  std::vector<MaskKind> as_mask;
  std::vector<std::vector<simt::Counters>> launches;
  std::vector<std::vector<std::string>> kernels;
  std::vector<std::vector<std::vector<float>>> work;
  for (const Stages::Time& t : prof.result.timing.stages) {
    stages.push_back(t.stage), as_mask.push_back(t.as_mask);
    launches.emplace_back(), kernels.emplace_back(), work.emplace_back();
    for (const simt::LaunchCounters& l : t.counters)
      launches.back().push_back(l.counters), kernels.back().push_back(l.kernel), work.back().push_back(l.block_work);
  }
  return finish(std::move(prof), stages, as_mask, launches, kernels, work, details);
}

const Profile& Profiler::finish(Profile prof, const std::vector<std::string>& stages, const std::vector<MaskKind>& as_mask,
                                const std::vector<std::vector<simt::Counters>>& launches,
                                const std::vector<std::vector<std::string>>& kernels,
                                const std::vector<std::vector<std::vector<float>>>& work, bool details) {
  const Variant& v = *prof.result.variant;
  double longest = -1;
  for (size_t i = 0; i < stages.size(); ++i) {
    StageProfile s;
    s.stage = stages[i];
    double launch_longest = -1;
    s.terms.sass_known = true;
    s.path = sass_path(prof.problem);
    // The pattern as a tensor: is_causal and the mask_mod are in its bytes, the score mods not.
    if (as_mask[i] != MaskKind::none) s.path = {.mask = mask_name(as_mask[i]), .score = s.path.score};
    for (size_t l = 0; l < launches[i].size(); ++l) {
      const simt::Counters& c = launches[i][l];
      s.counters += c;
      s.launches.push_back(c), s.kernels.push_back(kernels[i][l]);
      s.work.push_back(i < work.size() && l < work[i].size() ? work[i][l] : std::vector<float>{});
      const SassKernel* k = find_sass(kernels[i][l], s.path, gpu_->cc());
      const Modelled m = model(c, *gpu_, k, true, &s.work.back());
      // The emulator refused at the launch what the GPU would, registers where the build has the
      // GPU's own architecture's (own_registers); sm_90's standing in for another's are only warned of.
      if (const std::string no = launch_refusal(c, k, *gpu_); !no.empty())
        std::fprintf(stderr, "warning: the %s would not launch %s (%s): modelled as if it did\n", gpu_->name,
                     kernels[i][l].c_str(), no.c_str());
      s.terms.dram += m.dram, s.terms.l2 += m.l2, s.terms.l1 += m.l1, s.terms.mufu += m.mufu, s.terms.tensor += m.tensor;
      s.terms.issue += m.issue, s.terms.fma += m.fma, s.terms.instructions += m.instructions, s.terms.sass_known &= m.sass_known;
      s.terms.latency += m.latency, s.terms.fill_drain += m.fill_drain, s.terms.ring += m.ring, s.terms.groups = std::max(s.terms.groups, m.groups);
      if (!m.sass_known) s.unknown_kernel = kernels[i][l];
      s.terms.launch += m.launch, s.terms.share = std::max(s.terms.share, m.share);
      s.terms.beyond_l2 |= m.beyond_l2, s.terms.dram_rereads += m.dram_rereads, s.terms.l2_rereads += m.l2_rereads;
      s.us += m.total();
      if (m.total() > launch_longest)
        launch_longest = m.total(), s.bound = m.bound(), s.terms.blocks_per_sm = m.blocks_per_sm, s.terms.waves = m.waves;
    }
    prof.us += s.us;
    if (s.us > longest) longest = s.us, prof.bound = s.bound, prof.bound_stage = s.stage;
    prof.stages.push_back(s);
  }
  std::printf("%s%s (%s): check %s; modelled on %s: %.2f us, %s-bound in \"%s\"\n",
              details && !prof.plan.sampled() ? "\n" : "", v.name.c_str(), v.chapter.c_str(),
              prof.result.verdict.pass ? "pass" : "FAILED", gpu_->name, prof.us, prof.bound.c_str(),
              prof.bound_stage.c_str());
  if (!prof.result.verdict.pass) std::printf("    FAILED: %s\n", prof.result.verdict.why.c_str());
  if (details)
    for (const StageProfile& s : prof.stages) print_stage(s, *gpu_, o_.sample_blocks);
  std::fflush(stdout);
  profiles_.push_back(std::move(prof));
  return profiles_.back();
}

double recorded_ms(const std::string& path, const std::string& kind, const Problem& p, const Variant& v) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> names = split_csv(line);
  double ms = 0;
  const std::string mods = p.mods();
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split_csv(line);
    if (f.size() != names.size()) continue;
    auto at = [&](const char* name) {
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return f[i];
      return std::string();
    };
    if (at("kind") == kind && at("chapter") == v.chapter && at("variant") == v.name &&
        at("dtype") == dtype_name(p.dtype) && at("B") == std::to_string(p.B) && at("H") == std::to_string(p.H) &&
        at("Lq") == std::to_string(p.Lq) && at("Lk") == std::to_string(p.Lk) && at("d") == std::to_string(p.d) &&
        at("causal") == causal_name(p.causal) && at("mask") == mask_name(p.mask) && at("mods") == mods)
      ms = std::atof(at("median_ms").c_str());  // the last such row
  }
  return ms;
}

int own_registers(const std::string& kernel, const gpus::Gpu& g) {
  const int cc = sass_cc(g.cc());
  if (cc == 90 && g.cc() != 90) return 0;  // a stand-in's registers say nothing of g's compile
  const SassKernel* k = find_sass(kernel, {}, g.cc());
  if (!k || (cc == 90 && built_from(kernel, stale_sass()))) return 0;
  return k->registers;
}

SassPath sass_path(const Problem& p) {
  SassPath path;
  if (p.causal != Causal::none) path.causal = causal_name(p.causal);
  if (p.mask != MaskKind::none) path.mask = mask_name(p.mask);
  if (p.mod != ModKind::none) path.mod = mod_name(p.mod);
  path.score = p.score_name();
  return path;
}

Remodelled remodel(const StageProfile& s, const gpus::Gpu& g, bool latency, bool fill_drain, const SassRows& first) {
  Remodelled r;
  for (size_t l = 0; l < s.launches.size(); ++l) {
    Modelled m = model(s.launches[l], g, find_sass(s.kernels[l], s.path, g.cc(), kSassArchs, first), fill_drain,
                       l < s.work.size() ? &s.work[l] : nullptr);
    if (!latency) m.latency = 0;
    r.us += m.total(), r.dram_read_bytes += 32 * s.launches[l].dram_read_sectors + m.dram_rereads;
    if (m.total() > r.longest_us) r.longest_us = m.total(), r.bound = m.bound();
  }
  return r;
}

Remodelled remodel(const Profile& pr, const gpus::Gpu& g, bool latency, bool fill_drain, const SassRows& first) {
  Remodelled r;
  for (const StageProfile& s : pr.stages) {
    const Remodelled t = remodel(s, g, latency, fill_drain, first);
    r.us += t.us, r.dram_read_bytes += t.dram_read_bytes;
    if (t.longest_us > r.longest_us) r.longest_us = t.longest_us, r.bound = t.bound;
  }
  return r;
}

namespace {

// Why a step models slower than the one before it: what bounds it, and the two reasons the
// counters can name (a grid that leaves SMs idle, bank conflicts).
std::string why_slower(const Profile& pr) {
  const StageProfile* worst = nullptr;
  for (const StageProfile& s : pr.stages)
    if (!worst || s.us > worst->us) worst = &s;
  if (!worst) return "";
  const simt::Counters& c = worst->counters;
  std::string why = worst->bound + "-bound in \"" + worst->stage + "\"";
  if (worst->terms.share < 0.5)
    why += fmt(", whose %.0f blocks", c.blocks / std::max(1.0, c.launches)) +
           fmt(" keep %.0f%% of the SMs busy", 100 * worst->terms.share);
  if (c.shared_wavefronts() > 0 && c.shared_conflicts() > 0.25 * c.shared_wavefronts())
    why += fmt(", %.0f%% of its shared-memory wavefronts bank conflicts", 100 * c.shared_conflicts() / c.shared_wavefronts());
  return why;
}

}  // namespace

void Profiler::print_summary() const {
  if (profiles_.empty()) return;
  std::vector<double> ms;
  bool with_times = false;
  for (const Profile& pr : profiles_) {
    ms.push_back(o_.emulator_times.empty() ? 0 : recorded_ms(o_.emulator_times, "emulated", pr.problem, *pr.result.variant));
    with_times |= ms.back() > 0;
  }
  const Profile& base = profiles_.front();
  std::printf("\nmodelled on %s from the emulator's counters (notes/performance_model.md): a model, not a measurement\n",
              gpu_->name);
  std::printf("%-22s %-20s", "chapter", "variant");
  if (with_times) std::printf(" %12s %9s", "emulator ms", "speedup");
  std::printf(" %12s %8s %7s  %-7s %9s %9s\n", "modelled us", "TFLOP/s", "% peak", "bound", "blocks/SM", "speedup");
  bool any_stale = false;
  for (size_t i = 0; i < profiles_.size(); ++i) {
    const Profile& pr = profiles_[i];
    std::printf("%-22s %-20s", pr.result.variant->chapter.c_str(), pr.result.variant->name.c_str());
    if (with_times) {
      if (ms[i] > 0)
        std::printf(" %12.2f %8.2fx", ms[i], per(ms[0], ms[i]));
      else
        std::printf(" %12s %9s", "-", "-");
    }
    const double tflops = per(pr.problem.flops(), pr.us * 1e6);
    double occupancy = 0;  // of the stage that bounds the time
    for (const StageProfile& st : pr.stages)
      if (st.stage == pr.bound_stage) occupancy = st.terms.blocks_per_sm;
    bool stale = false;
    for (const StageProfile& st : pr.stages) stale |= stale_stage(st, *gpu_);
    any_stale |= stale;
    std::printf(" %12.2f %8.2f %6.1f%%  %-7s %9.0f %8.2fx\n", pr.us, tflops, 100 * tflops / gpu_->tensor_tflops,
                (pr.bound + (stale ? "*" : "")).c_str(), occupancy, per(base.us, pr.us));
  }
  const Problem& p = base.problem;
  // A published rate at the problem's shape, and the residual of the fastest step with the same
  // structure (`chapters`: their numbers' prefixes) on the same GPU.
  const auto reference = [&](const PublishedRate* rate, const char* who, std::initializer_list<const char*> chapters) {
    if (!rate) return;
    const Profile* like = nullptr;
    for (const Profile& pr : profiles_)
      for (const char* c : chapters)
        if (pr.result.variant->chapter.rfind(c, 0) == 0 && (!like || pr.us < like->us)) like = &pr;
    const double us = p.flops() / (rate->tflops * 1e6);
    std::printf("%-43s", (std::string("reference: ") + who + ", H100 SXM5").c_str());
    if (with_times) std::printf(" %12s %9s", "", "");
    std::printf(" %12.2f %8.0f %6.1f%%  published: %s\n", us, rate->tflops,
                100 * rate->tflops / gpus::find_gpu("h100")->tensor_tflops, kFigure5Source);
    if (like && std::string(gpu_->key) == "h100")
      std::printf("%-43s model / published: %.2f (%s's modelled time over %s's measured one; "
                  "tests/counters/test_published.cpp scores the model)\n",
                  "", like->us / us, like->result.variant->name.c_str(), who);
  };
  const bool fp16 = p.dtype == DType::fp16, causal = p.causal != Causal::none, top_left = p.causal == Causal::top_left,
             mask = p.mask != MaskKind::none;
  reference(flash_attention2_h100(p.B, p.H, p.Lq, p.Lk, p.d, fp16, causal, top_left, mask), "FlashAttention-2", {"05", "06"});
  reference(flash_attention3_h100(p.B, p.H, p.Lq, p.Lk, p.d, fp16, causal, top_left, mask), "FlashAttention-3", {"09"});
  if (with_times)
    std::printf("emulator ms: the CPU's time to emulate the kernels, which ranks them by their cost on a CPU; modelled "
                "us: an %s's time from the counters, and what bounds it\n",
                gpu_->name);
  std::printf("TFLOP/s: 4*B*H*d per visible (query, key) pair over the modelled time; %% peak: of the %.1f TFLOP/s dense "
              "fp16 tensor-core peak; blocks/SM: occupancy of the longest stage (threads, registers and shared memory, dynamic and static)\n",
              gpu_->tensor_tflops);
  if (any_stale)
    std::printf("*: the SASS data is from an older source of a kernel in this row (stderr says which file; "
                "model/sass_fresh.h)\n");
  for (const Profile& pr : profiles_)
    if (pr.plan.sampled())
      std::printf("%s sampled: %s (model/sampling.h)\n", pr.result.variant->name.c_str(), pr.plan.describe(pr.problem).c_str());
  for (size_t i = 1; i < profiles_.size(); ++i)
    if (profiles_[i].us > profiles_[i - 1].us)
      std::printf("%s models slower than %s: %s\n", profiles_[i].result.variant->name.c_str(),
                  profiles_[i - 1].result.variant->name.c_str(), why_slower(profiles_[i]).c_str());
}

void Profiler::write_csv(const std::string& results_csv) const {
  if (!results_csv.empty())
    for (const Profile& pr : profiles_) {
      Result r = pr.result;  // its rate columns are the modelled problem's, not the heads emulated
      r.problem = pr.problem;
      r.flops = pr.problem.flops();
      r.hbm_bytes = r.variant->bytes_moved(pr.problem);
      r.timing.reps = 1;
      r.timing.median_ms = r.timing.min_ms = pr.us / 1e3;
      const ModelledRow row{gpu_->name, pr.bound};
      append_csv(results_csv, {r}, &row);
    }
  if (o_.counters_csv.empty()) return;
  bool fresh;  // its header, if any, was checked before the work
  {
    std::ifstream in(o_.counters_csv);
    std::string first;
    fresh = !in || !std::getline(in, first) || first.empty();
  }
  std::ofstream out(o_.counters_csv, std::ios::app);
  if (!out) throw UsageError("cannot write the counters CSV file " + o_.counters_csv);
  if (fresh) out << kCountersCsvHeader << '\n';
  const std::string stamp = now_utc();
  for (const Profile& pr : profiles_) {
    const Problem& p = pr.problem;
    for (const StageProfile& s : pr.stages) {
      const simt::Counters& c = s.counters;
      const simt::GlobalOps &ld = c.global[simt::kGlobalLoad], &st = c.global[simt::kGlobalStore],
                            &cp = c.global[simt::kCpAsyncSource], &at = c.global[simt::kGlobalAtomic],
                            &tma = c.global[simt::kTmaLoad];
      double ldsm_req = 0, ldsm_conf = 0;
      for (int k = simt::kLdmatrixX1; k <= simt::kLdmatrixX4Trans; ++k)
        ldsm_req += c.shared[k].requests, ldsm_conf += c.shared[k].conflicts();
      std::ostringstream row;
      row.precision(10);
      row << commit_id() << ',' << stamp << ',' << pr.result.variant->chapter << ',' << pr.result.variant->name << ",\""
          << s.stage << "\"," << dtype_name(p.dtype) << ',' << p.B << ',' << p.H << ',' << p.Lq << ',' << p.Lk << ','
          << p.d << ',' << causal_name(p.causal) << ',' << mask_name(p.mask) << ',' << o_.sample_blocks << ','
          << pr.plan.heads.emulated << ',' << rows_emulated(pr.plan) << ',' << c.launches << ',' << c.blocks << ',' << c.threads_per_block << ',' << ld.requests << ','
          << per(ld.sectors, ld.requests) << ',' << st.requests << ',' << per(st.sectors, st.requests) << ','
          << cp.requests << ',' << per(cp.sectors, cp.requests) << ',' << at.requests << ',' << per(at.sectors, at.requests)
          << ',' << 32 * c.dram_read_sectors << ',' << 32 * c.dram_write_sectors << ',' << l2_bytes(c) << ','
          << c.shared_requests() << ',' << c.shared_wavefronts() << ',' << c.shared_conflicts() << ',' << ldsm_req << ','
          << ldsm_conf << ',' << c.shared[simt::kCpAsyncDestination].conflicts() << ',' << l1_wavefronts(c) << ','
          << c.mma << ',' << c.mma_flop << ',' << c.wgmma << ',' << c.wgmma_flop << ',' << tma.requests << ','
          << per(tma.sectors, tma.requests) << ',' << c.mufu << ',' << c.barriers << ',' << c.shuffles << ',';
      if (s.terms.sass_known) row << s.terms.instructions;  // empty: a kernel the SASS data does not know
      row << ",\"" << gpu_->name << "\"," << s.us << ',' << s.bound << ',' << s.terms.dram << ',' << s.terms.l2 << ','
          << s.terms.l1 << ',' << s.terms.issue << ',' << s.terms.mufu << ','
          << s.terms.tensor << ',' << s.terms.launch << ',' << s.terms.share << ',' << s.terms.blocks_per_sm << ','
          << s.terms.waves << ',' << (s.terms.beyond_l2 ? 1 : 0) << ',' << s.terms.latency << ",\"" << p.mods() << '"';
      out << row.str() << '\n';
    }
  }
}

}  // namespace attn
