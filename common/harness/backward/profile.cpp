// backward/profile.cpp: `flashsteps backward --profile` on a problem too large to emulate whole,
// modelled from a few of its heads. Every backward kernel of chapter 07 treats the (batch, head)
// pairs alike and apart, as the forward's do (model/sampling.h): a grid of (K/V or Q tiles, B * H),
// or of B * H * Lq rows, or (materialized) cells over (columns, rows, B * H). So the emulator runs
// every block of the first few heads, B = 1, and their launches count as the whole problem's
// (sampling.h's as_whole), whose grids a dry run of the whole problem gives.
#include <algorithm>
#include <stdexcept>

#include "harness/backward/backward.h"
#include "harness/profile.h"

namespace attn {

HeadSample backward_heads(const Profiler& profiler, const std::vector<const BackwardVariant*>& variants, const Problem& p) {
  const long long heads = static_cast<long long>(p.heads());
  double slowest = 0;  // seconds per head on a plain build
  for (const BackwardVariant* v : variants)
    slowest = std::max(slowest, backward_emulation_seconds(*v, p) / static_cast<double>(heads));
  return {profiler.heads_to_emulate(slowest, heads), heads};
}

Problem backward_emulated(const Problem& p, const HeadSample& heads) {
  SamplePlan plan;
  plan.heads = heads;
  return emulated_problems(p, plan).front();
}

const Profile& profile_backward(Profiler& profiler, const BackwardVariant& v, const Problem& p, const HeadSample& heads,
                                const Problem& emulated, const BackwardInputs& dev, const BackwardChecker& checker,
                                const RunOptions& o, bool details) {
  std::vector<std::vector<simt::LaunchCounters>> whole;
  if (heads.sampled()) {
    static char nothing[64] = {};  // the kernels' addresses point at nothing they would read
    BackwardParams a{};
    static_cast<AttentionParams&>(a) = attention_params(p, nothing, nothing, nothing, nothing);
    a.o = nothing, a.lse = reinterpret_cast<float*>(nothing), a.workspace = nothing;
    a.dout = nothing, a.dq = nothing, a.dk = nothing, a.dv = nothing;
    whole = dry_run([&](Stages& st) { v.run(a, st); });
  }
  return profiler.run(
      [&] {
        RunOptions once = o;
        once.reps = 1, once.warmup = 0;  // one execution, counted, untimed
        Result r = run_backward(v, emulated, dev, checker, once).row;
        if (!heads.sampled()) return r;
        if (whole.size() != r.timing.stages.size())
          throw std::runtime_error("variant " + v.info.name + ": a sampled profile ran other stages than the whole problem's");
        // A mask every head reads alike crosses from DRAM once (sampling.h's scaled).
        std::vector<const void*> shared;
        if (p.mask != MaskKind::none && !p.mask_per_head) shared.push_back(dev.fwd.mask.get());
        for (size_t s = 0; s < whole.size(); ++s) {
          Stages::Time& st = r.timing.stages[s];
          if (whole[s].size() != st.counters.size())
            throw std::runtime_error("variant " + v.info.name + ": a sampled profile launched other kernels than the "
                                     "whole problem's in stage " + st.stage);
          for (size_t i = 0; i < whole[s].size(); ++i)
            st.counters[i] = as_whole(st.counters[i], whole[s][i].counters, heads, shared);
        }
        r.problem = p;
        r.flops = backward_flops(p);
        r.hbm_bytes = backward_hbm_bytes(v, p);
        r.workspace = v.info.workspace_bytes(p);
        if (v.info.plan) r.plan = v.info.plan(p);
        return r;
      },
      details, heads);
}

}  // namespace attn
