// support.cpp: `flashsteps support`, which chapter runs on which GPU. For each GPU of
// common/gpus/gpus.h (on the cpu backend, the emulator standing for each; on a GPU, that GPU alone)
// and each chapter, at one problem: whether its best step runs, adapts its tiles to the GPU, or
// gives way to its most advanced step that runs (the tour shows that one), or whether nothing of
// the chapter runs, and why, from what the steps declare (registry.h). The README's support matrix
// is this command's output, and a test holds the two together.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backward/backward.h"
#include "cli.h"
#include "command.h"
#include "decode/decode.h"
#include "errors.h"
#if !FLASHSTEPS_GPU
#include "simt/cpu/launch.h"
#endif

namespace attn {
namespace {

// One step of a chapter, whatever its registry: what it declares, and whether it runs the
// chapter's problem on the device at hand.
struct Step {
  const Variant* info;
  std::function<std::string()> unsupported;  // on the device at hand
  std::function<size_t()> smem;
};

// The chapters in order, each its steps in registration order.
std::vector<std::pair<std::string, std::vector<Step>>> chapters_of(const Problem& p, const DecodeProblem& dp) {
  std::map<std::string, std::vector<Step>> by;
  for (const Variant& v : registry())
    by[v.chapter].push_back({&v, [&v, p] { return v.unsupported(p); }, [&v, p] { return v.smem_bytes(p); }});
  for (const BackwardVariant& v : backward_registry())
    by[v.info.chapter].push_back({&v.info, [&v, p] { return v.info.unsupported(p); }, [&v, p] { return v.info.smem_bytes(p); }});
  for (const DecodeVariant& v : decode_registry())
    by[v.info.chapter].push_back({&v.info, [&v, dp] { return v.unsupported(dp); }, [&v, dp] { return v.smem_bytes(dp); }});
  return {by.begin(), by.end()};
}

// Why a step does not run, in a few words that hold for every GPU alike.
std::string short_reason(const Step& s, const std::string& why) {
  const Variant& v = *s.info;
  const DeviceInfo& dev = device();
  if (!dev.lacks_code(v.sm90a).empty()) return "no code for it in this build";
  if (v.sm90a && dev.cc() != 90) return "sm_90a code";
  if (dev.cc() < v.min_cc) return "needs sm_" + std::to_string(v.min_cc);
  if (static_cast<long long>(s.smem()) > dev.smem_optin) return std::to_string(s.smem() / 1024) + " KiB of shared memory";
  return why;  // not the device's doing (a dtype, a head dim): the whole sentence
}

// The cell of one chapter on the device at hand; h100_smem: its best step's shared memory on an H100.
std::string cell(const std::vector<Step>& steps, size_t h100_smem) {
  const Step* best = &steps.back();
  for (const Step& s : steps)
    if (s.info->best) best = &s;
  const std::string why = best->unsupported();
  if (why.empty()) return best->smem() == h100_smem ? "runs" : "adapts (" + std::to_string(best->smem() / 1024) + " KiB)";
  const Step* stand_in = nullptr;
  for (const Step& s : steps)
    if (s.unsupported().empty()) stand_in = &s;
  if (stand_in) return "`" + stand_in->info->name + "` (best: " + short_reason(*best, why) + ")";
  return "refuses: " + short_reason(*best, why);
}

}  // namespace

int support_main(int argc, char** argv) {
  CLI::App app{"Which chapter runs on which GPU, at one problem: for each GPU of common/gpus/gpus.h (the CPU "
               "emulator standing for each; on a GPU build, that GPU) and each chapter, whether its best step runs, "
               "adapts its tiles to the GPU, or gives way to its most advanced step that runs (named; the tour runs "
               "it), or why nothing of the chapter runs. Markdown, as the README's support matrix."};
  app.name("flashsteps support");
  int d = 64, n = 2048;
  std::string dtype = "fp16";
  app.add_option("-d,--head-dim", d, "head dim")->capture_default_str();
  app.add_option("-n,--seq", n, "sequence length Lq = Lk (the decoding chapter: a cache of N - 1 keys)")->capture_default_str();
  app.add_option("--dtype", dtype, "fp32, fp16 or bf16")->capture_default_str();
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  return guarded([&] {
    Problem p;
    p.B = 4, p.H = 16, p.Lq = p.Lk = n, p.d = d;
    const auto t = parse_dtype(dtype);
    if (!t) throw UsageError("unknown dtype \"" + dtype + "\": use fp32, fp16 or bf16");
    p.dtype = *t;
    p.validate();
    DecodeProblem dp;
    dp.B = p.B, dp.Hq = p.H, dp.Hkv = p.H, dp.d = p.d, dp.dtype = p.dtype, dp.Lq = 1, dp.cache_lens = {n - 1};
    dp.validate();
    const auto chapters = chapters_of(p, dp);
    const gpus::Gpu* emulated_before = device().gpu;

    std::vector<const gpus::Gpu*> gpus;  // the rows: every GPU of the table on the emulator, else the one at hand
    if (device().emulated)
      for (const gpus::Gpu& g : gpus::kGpus) gpus.push_back(&g);
    else
      gpus.push_back(nullptr);
    auto emulate = [](const gpus::Gpu* g) {
#if !FLASHSTEPS_GPU
      if (g) simt::set_gpu(*g);
#else
      (void)g;
#endif
    };
    std::vector<size_t> h100_smem;
    emulate(gpus::find_gpu("h100"));
    for (const auto& [c, steps] : chapters) {
      const Step* best = &steps.back();
      for (const Step& s : steps)
        if (s.info->best) best = &s;
      h100_smem.push_back(best->smem());
    }
    // GPUs with the same cells share a row.
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    for (const gpus::Gpu* g : gpus) {
      emulate(g);
      std::vector<std::string> cells;
      for (size_t i = 0; i < chapters.size(); ++i) cells.push_back(cell(chapters[i].second, h100_smem[i]));
      const std::string name = (g ? std::string(g->name) : device().name) + " (sm_" + std::to_string(device().cc()) + ")";
      auto same = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.second == cells; });
      if (same != rows.end())
        same->first += ", " + name;
      else
        rows.emplace_back(name, cells);
    }
    emulate(emulated_before);

    std::printf("| GPU |");
    for (const auto& [c, steps] : chapters) std::printf(" %s |", c.substr(0, 2).c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < chapters.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const auto& [name, cells] : rows) {
      std::printf("| %s |", name.c_str());
      for (const std::string& c : cells) std::printf(" %s |", c.c_str());
      std::printf("\n");
    }
    return 0;
  });
}

}  // namespace attn
