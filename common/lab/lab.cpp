// lab.cpp: Lab (lab.h): the emulated runs, the counts at the size asked, the model on each GPU.
#include "lab.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "gpus/gpus.h"
#include "model/model.h"
#include "model/sampling.h"
#include "simt/counters.h"

namespace lab {
namespace {

[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "lab: %s\n", why.c_str());
  std::exit(2);
}

template <class T>
std::string joined(const std::vector<T>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str();
}

// The lab's row for a kernel on an architecture, or nullptr.
const attn::SassKernel* lab_sass(const std::string& kernel, const std::string& arch) {
  for (int i = 0; i < kSass.count; ++i)
    if (arch == kSass.rows[i].arch && kernel == kSass.rows[i].kernel.name) return &kSass.rows[i].kernel;
  return nullptr;
}

// Every count but the launch's shape, as an array (counters.h asserts that Counters is doubles alone).
constexpr int kFields = sizeof(simt::Counters) / sizeof(double);
const double* fields(const simt::Counters& c) { return reinterpret_cast<const double*>(&c); }
// The blocks whose requests were grouped: the extrapolation takes them from its first size.
constexpr int kBlocksCounted = offsetof(simt::Counters, blocks_counted) / sizeof(double);
// The sectors several blocks read (the model's DRAM re-reads by the grid's order): not a polynomial
// in n where a lab's small sizes run one block along a dimension (at n = 32 nothing is shared); and
// a block's own re-reads by their reuse distance, whose buckets move with n. A lab leaves both out
// and models each sector read from DRAM once.
constexpr int kSharedFirst = offsetof(simt::Counters, shared_sectors) / sizeof(double),
              kSharedEnd = (offsetof(simt::Counters, reread_l2) + sizeof(simt::Counters::reread_l2)) / sizeof(double);
static_assert(offsetof(simt::Counters, reread_l1) == offsetof(simt::Counters, shared_reads) + sizeof(simt::Counters::shared_reads) &&
                  offsetof(simt::Counters, reread_l2) == offsetof(simt::Counters, reread_l1) + sizeof(simt::Counters::reread_l1),
              "the fields a lab leaves out are side by side");
bool grid_order(int field) { return field >= kSharedFirst && field < kSharedEnd; }

}  // namespace

Lab::Lab(int argc, char** argv, Options defaults) : o_(std::move(defaults)) {
  CLI::App app("A lab: the emulator's counts of your own kernels, and the model's time on the GPUs asked");
  std::string gpus = o_.gpus.empty() ? kSass.gpus : joined(o_.gpus), emulated = joined(o_.emulated);
  app.add_option("--gpu", gpus, "the GPUs to model, keys of common/gpus/gpus.h, comma-separated")->capture_default_str();
  app.add_option("--n", o_.n, "the size modelled")->capture_default_str();
  app.add_option("--emulated", emulated, "the sizes the emulator runs, comma-separated: the polynomial's degree + 2 of them")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  if (!simt::counters::available())
    refuse("a lab counts what its kernels do: build it in a counters build (cmake -S . -B build-counters "
           "-DFLASHSTEPS_BACKEND=cpu -DFLASHSTEPS_COUNTERS=ON)");
  // A list with an empty item (two commas, or one at an end) is refused: getline would drop the last.
  for (const auto& [option, list] : {std::pair<const char*, const std::string&>{"--gpu", gpus}, {"--emulated", emulated}})
    if (!list.empty() && (list.front() == ',' || list.back() == ',' || list.find(",,") != std::string::npos))
      refuse(std::string(option) + " " + list + ": an empty item (comma-separated, as a,b,c)");
  o_.gpus.clear();
  std::stringstream gs(gpus);
  for (std::string key; std::getline(gs, key, ',');) {
    const gpus::Gpu* g = gpus::find_gpu(key);
    if (!g) refuse("unknown --gpu \"" + key + "\": use one of " + gpus::gpu_keys());
    if (!g->modelled()) refuse(std::string("the model has no rates for the ") + g->name);
    o_.gpus.push_back(key);
  }
  if (o_.gpus.empty()) refuse("--gpu: name a GPU at least");
  o_.emulated.clear();
  std::stringstream es(emulated);
  for (std::string v; std::getline(es, v, ',');) {
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || n < 1) refuse("--emulated: \"" + v + "\" is not a size");
    if (std::find(o_.emulated.begin(), o_.emulated.end(), n) != o_.emulated.end()) refuse("--emulated: " + v + " twice");
    o_.emulated.push_back(n);
  }
  if (static_cast<int>(o_.emulated.size()) != o_.degree + 2)
    refuse("--emulated: give " + std::to_string(o_.degree + 2) + " sizes (a polynomial of degree " +
           std::to_string(o_.degree) + " through all but the last, which checks it)");
  if (o_.n < 1) refuse("--n: give a size of 1 or more");
  if (o_.max_emulated > 0)
    for (long long n : o_.emulated)
      if (n > o_.max_emulated)
        refuse("--emulated " + std::to_string(n) + ": the emulator runs sizes up to " + std::to_string(o_.max_emulated) +
               " here (its time grows with the work; --n models any size)");
  if (o_.refuse_size)
    for (long long n : o_.emulated) {
      const std::string why = o_.refuse_size(n);
      if (!why.empty()) refuse("n = " + std::to_string(n) + ": " + why);
    }
  if (o_.refuse_size && !o_.refuse_size(o_.n).empty()) refuse("--n " + std::to_string(o_.n) + ": " + o_.refuse_size(o_.n));
  std::sort(o_.emulated.begin(), o_.emulated.end());
  for (const std::string& key : o_.gpus) {
    const std::string arch = gpus::find_gpu(key)->arch();
    bool built = false;
    for (int i = 0; i < kSass.count; ++i) built |= arch == kSass.rows[i].arch;
    if (!built && !*kSass.missing)
      std::fprintf(stderr, "lab: no %s SASS (the lab was built for %s): the %s is modelled without it, so without the "
                   "issue, FMA and latency terms and with the registers unknown; add %s to the lab's GPUS "
                   "(cmake/Lab.cmake) for it\n", arch.c_str(), kSass.gpus, gpus::find_gpu(key)->name, key.c_str());
  }
  if (*kSass.missing)
    std::fprintf(stderr, "lab: %s: modelled without the SASS data, so without the issue, FMA and latency terms and "
                 "with the registers unknown (rows marked \"no SASS\")\n", kSass.missing);
}

void Lab::profile(const std::string& name, const std::function<bool(long long n)>& run) {
  // Each emulated size's launches, in order.
  std::vector<std::vector<simt::LaunchCounters>> at;
  for (long long n : o_.emulated) {
#if SIMT_COUNTERS
    simt::counters::start({});
    const bool ok = run(n);
    simt::counters::stop();
    at.push_back(simt::counters::take());
#else
    const bool ok = run(n);  // unreachable: the constructor refused a build without the counters
    at.emplace_back();
#endif
    if (!ok) {
      std::printf("FAIL %s at n = %lld: its run failed (a launch refused, or an output that does not match the "
                  "reference: see above)\n", name.c_str(), n);
      failed_ = true;
      return;
    }
    if (at.back().empty()) {
      std::printf("FAIL %s at n = %lld: it launched no kernel (launch through simt::launch)\n", name.c_str(), n);
      failed_ = true;
      return;
    }
    if (at.back().size() != at.front().size()) {
      std::printf("FAIL %s: %zu launches at n = %lld, %zu at n = %lld: each size must launch the same kernels\n",
                  name.c_str(), at.front().size(), o_.emulated.front(), at.back().size(), n);
      failed_ = true;
      return;
    }
  }
  const int d = o_.degree;
  std::printf("%s at n = %lld: the counts from the polynomial of degree %d through n = %s (n = %lld checks it); "
              "the output matched the reference at each\n", name.c_str(), o_.n, d,
              joined(std::vector<long long>(o_.emulated.begin(), o_.emulated.end() - 1)).c_str(), o_.emulated.back());
  for (size_t l = 0; l < at.front().size(); ++l) {
    const std::string kernel = at.front()[l].kernel;
    // The polynomial through all sizes but the last (fit); the last checks it.
    std::vector<simt::Counters> fit;
    std::vector<double> xs;
    for (int i = 0; i <= d + 1; ++i) {
      if (at[i][l].kernel != kernel) {
        std::printf("FAIL %s: launch %zu runs %s at one size and %s at another\n", name.c_str(), l, kernel.c_str(),
                    at[i][l].kernel.c_str());
        failed_ = true;
        return;
      }
      if (i <= d) fit.push_back(at[i][l].counters), xs.push_back(static_cast<double>(o_.emulated[i]));
    }
    const simt::Counters want = at[d + 1][l].counters,
                         got = attn::extrapolate(fit, xs, static_cast<double>(o_.emulated[d + 1]));
    for (int f = 0; f < kFields; ++f) {
      const double a = fields(want)[f], b = fields(got)[f];
      if (f != kBlocksCounted && !grid_order(f) && std::abs(a - b) > 1e-6 * std::max(1.0, std::abs(a))) {
        std::printf("FAIL %s: %s's counts are not a polynomial of degree %d in n (count %d: %g at n = %lld, %g from "
                    "the others): emulate n itself, or sizes where they are\n",
                    name.c_str(), kernel.c_str(), d, f, a, o_.emulated.back(), b);
        failed_ = true;
        return;
      }
    }
    simt::Counters c = attn::extrapolate(fit, xs, static_cast<double>(o_.n));
    for (int f = kSharedFirst; f < kSharedEnd; ++f) reinterpret_cast<double*>(&c)[f] = 0;  // grid_order, above
    std::printf("  %s: %.0f blocks of %.0f threads, %.0f B of dynamic and %.0f B of static shared memory\n", kernel.c_str(),
                c.blocks, c.threads_per_block, c.smem_bytes, c.smem_static_bytes);
    const double shared_req = c.shared_requests(), shared_wf = c.shared_wavefronts();
    std::printf("    counted: %.4g global load requests, %.4g MB through L2, %.4g MB from DRAM (%s), %.4g L1 "
                "wavefronts, %.4g shared-memory requests (%.2f wavefronts each), %.4g barriers\n",
                c.global[simt::kGlobalLoad].requests, attn::l2_bytes(c) / 1e6, attn::dram_bytes(c) / 1e6,
                "each sector once", attn::l1_wavefronts(c), shared_req, shared_req > 0 ? shared_wf / shared_req : 0.0,
                c.barriers);
    std::printf("    %-18s %-9s %5s %9s %8s %8s %8s %8s %8s %8s %10s %8s  %s\n", "GPU", "SASS", "regs", "blocks/SM",
                "DRAM", "L2", "L1", "issue", "FMA", "latency", "time us", "TFLOP/s", "bound");
    for (const std::string& key : o_.gpus) {
      const gpus::Gpu& g = *gpus::find_gpu(key);
      const attn::SassKernel* k = lab_sass(kernel, g.arch());
      const std::string no = attn::launch_refusal(c, k, g);
      if (!no.empty()) {
        std::printf("    %-18s does not launch: %s\n", g.name, no.c_str());
        continue;
      }
      const attn::Modelled m = attn::model(c, g, k);
      us_[{name, key}] += m.total();
      const double tflops = o_.flop ? o_.flop(o_.n) / (m.total() * 1e-6) / 1e12 : 0;
      std::printf("    %-18s %-9s %5s %9.0f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %8.2f  %s%s\n", g.name,
                  k ? g.arch().c_str() : "no SASS", k ? std::to_string(k->registers).c_str() : "-", m.blocks_per_sm,
                  m.dram, m.l2, m.l1, m.issue, m.fma, m.latency, m.total(), tflops, m.bound(),
                  m.beyond_l2 ? " (beyond L2: DRAM a lower bound)" : "");
    }
  }
}

double Lab::modelled_us(const std::string& name, const std::string& gpu) const {
  const auto it = us_.find({name, gpu});
  return it == us_.end() ? 0 : it->second;
}

}  // namespace lab
