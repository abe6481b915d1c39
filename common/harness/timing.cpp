#include "timing.h"

#include <algorithm>

#include "device.h"
#include "errors.h"
#include "simt/launch_error.h"

namespace attn {
namespace {
std::vector<simt::LaunchCounters> take_counters() {
#if SIMT_COUNTERS
  return simt::counters::take();
#else
  return {};
#endif
}
}  // namespace

Stages::Stages() = default;
Stages::~Stages() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}
cudaEvent_t Stages::event(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  return events_[i];
}
void Stages::begin() {
  used_ = 0;
  names_.clear();
  bytes_.clear();
  per_head_.clear();
  as_mask_.clear();
  counters_.clear();
  take_counters();  // launches before this execution are not its own
  check(cudaEventRecord(event(used_++)), "cudaEventRecord");
}
void Stages::run(const std::string& stage, const std::function<cudaError_t()>& launch, double bytes, bool per_head,
                 MaskKind as_mask) {
  if (const cudaError_t e = launch(); e != cudaSuccess) {
    const std::string said = simt::last_launch_error();  // what was asked and allowed, or the emulator's diagnostic
    check(e, "launch of \"" + stage + "\"" + (said.empty() ? "" : " (" + said + ")"));
  }
  names_.push_back(stage);
  bytes_.push_back(bytes);
  per_head_.push_back(per_head);
  as_mask_.push_back(as_mask);
  counters_.push_back(take_counters());
  check(cudaEventRecord(event(used_++)), "cudaEventRecord");
}
void Stages::end() {
  check(cudaEventSynchronize(event(used_ - 1)), "the kernels");  // execution errors surface here
  check(cudaGetLastError(), "the kernels");
}
std::vector<Stages::Time> Stages::times() const {
  std::vector<Time> t;
  for (size_t i = 0; i < names_.size(); ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "cudaEventElapsedTime");
    t.push_back({names_[i], ms, bytes_[i], counters_[i], per_head_[i], as_mask_[i]});
  }
  return t;
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

Timing time_variant(const std::function<void()>& prepare, const std::function<void(Stages&)>& launch, int warmup,
                    int reps) {
  Stages st;
  const size_t flush_bytes = 2 * device().l2_bytes;
  DeviceBuffer flush(flush_bytes);
  auto execute = [&] {
    prepare();
    if (flush_bytes) check(cudaMemsetAsync(flush.get(), 0, flush_bytes), "L2 flush");
    st.begin();
    launch(st);
    st.end();
  };
  for (int i = 0; i < warmup; ++i) execute();
  Timing t;
  t.reps = reps;
  std::vector<double> total;
  std::vector<std::vector<double>> per_stage;
  std::vector<Stages::Time> last;
  for (int r = 0; r < reps; ++r) {
    execute();
    last = st.times();
    double sum = 0;
    per_stage.resize(last.size());
    for (size_t i = 0; i < last.size(); ++i) {
      sum += last[i].ms;
      per_stage[i].push_back(last[i].ms);
    }
    total.push_back(sum);
  }
  t.median_ms = median(total);
  t.min_ms = total.empty() ? 0 : *std::min_element(total.begin(), total.end());
  for (size_t i = 0; i < per_stage.size(); ++i) {
    t.stages.push_back(last[i]);
    t.stages.back().ms = median(per_stage[i]);
  }
  return t;
}

Timing combine_repetitions(const std::vector<Timing>& each) {
  Timing t;
  std::vector<double> total;
  std::vector<std::vector<double>> per_stage;
  for (const Timing& one : each) {
    if (one.reps != 1) continue;  // untimed
    total.push_back(one.median_ms);
    per_stage.resize(std::max(per_stage.size(), one.stages.size()));
    for (size_t i = 0; i < one.stages.size(); ++i) per_stage[i].push_back(one.stages[i].ms);
  }
  if (total.empty()) return t;
  t.reps = static_cast<int>(total.size());
  t.median_ms = median(total);
  t.min_ms = *std::min_element(total.begin(), total.end());
  for (size_t i = 0; i < per_stage.size() && i < each.back().stages.size(); ++i) {
    t.stages.push_back(each.back().stages[i]);
    t.stages.back().ms = median(per_stage[i]), t.stages.back().counters.clear();
  }
  return t;
}

}  // namespace attn
