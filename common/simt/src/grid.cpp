// grid.cpp: a kernel launch on the CPU. Checks the configuration as the GPU would, then spreads
// the blocks over a pool of OS threads, each running one block at a time with its BlockRunner.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "block_runner.h"
#include "env.h"
#include "runtime_state.h"
#include "simt/cpu/counters_hooks.h"
#include "symbols.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace simt {
namespace detail {
std::string current_thread_name();

namespace {

Order parse_order(const char* v) {
  if (!v || !*v || !std::strcmp(v, "forward") || !std::strcmp(v, "0")) return Order::forward;
  if (!std::strcmp(v, "reverse") || !std::strcmp(v, "1")) return Order::reverse;
  if (!std::strcmp(v, "shuffle") || !std::strcmp(v, "2")) return Order::shuffle;
  std::fprintf(stderr, "simt: SIMT_ORDER=%s is not one of forward, reverse, shuffle\n", v);
  std::exit(2);
}
Schedule from_environment() {
  Schedule s;
  s.order = parse_order(std::getenv("SIMT_ORDER"));
  s.seed = static_cast<unsigned>(env_number("SIMT_SEED", 1, 0, 4294967295L));
  s.workers = static_cast<int>(env_number("SIMT_WORKERS", 0, 0, 1024));  // 0: one per core
  s.lenient_exit = env_number("SIMT_LENIENT_EXIT", 0, 0, 1) != 0;
  s.quiet = env_number("SIMT_QUIET", 0, 0, 1) != 0;
  stack_bytes();  // read with the others, before any launch: a bad SIMT_STACK_KB is refused now
  return s;
}
std::mutex g_schedule_mu;
Schedule& schedule_ref() {
  static Schedule s = from_environment();
  return s;
}

// Persistent OS threads, so that each keeps its BlockRunner (and its fiber stacks) across launches.
class Pool {
 public:
  // Runs job(i) for i in [0, n) concurrently; the caller runs job(0).
  void run(int n, const std::function<void()>& job) {
    std::unique_lock<std::mutex> lock(mu_);
    while (static_cast<int>(threads_.size()) < n - 1) threads_.emplace_back([this, i = threads_.size()] { loop(i); });
    job_ = &job;
    active_ = n - 1;
    remaining_ = n - 1;
    ++generation_;
    cv_.notify_all();
    lock.unlock();
    job();
    lock.lock();
    done_.wait(lock, [this] { return remaining_ == 0; });
    job_ = nullptr;
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void loop(size_t index) {
    unsigned long seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (static_cast<int>(index) >= active_) continue;
      const std::function<void()>* job = job_;
      lock.unlock();
      (*job)();
      lock.lock();
      if (--remaining_ == 0) done_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::vector<std::thread> threads_;
  const std::function<void()>* job_ = nullptr;
  int active_ = 0, remaining_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
};

#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer reports faults itself
// A fault inside a kernel names the GPU thread that made it before the process dies.
void on_fault(int sig) {
  char buf[256];
  const std::string who = current_thread_name();
  if (!who.empty()) {
    const int n = std::snprintf(buf, sizeof buf, "simt: %s in %s\n", sig == SIGSEGV ? "segmentation fault" : "bus error",
                                who.c_str());
    if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  }
  signal(sig, SIG_DFL);
  raise(sig);
}
#endif
void install_fault_handler() {
#if !defined(__SANITIZE_ADDRESS__)
  // An alternate stack, so that a fiber's stack overflow can still be reported.
  thread_local std::vector<char> alt(1 << 16);
  thread_local bool done = false;
  if (!done) {
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    sigaltstack(&ss, nullptr);
    done = true;
  }
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_fault;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
  });
#endif
}

#if defined(__SANITIZE_ADDRESS__)
struct AsanNamesThread {
  AsanNamesThread() {
    __asan_set_error_report_callback([](const char*) {
      const std::string who = current_thread_name();
      if (!who.empty()) std::fprintf(stderr, "simt: the access above was made by %s\n", who.c_str());
    });
  }
} g_asan_names_thread;
#endif

std::mutex g_launch_mu;  // one launch at a time
std::string g_last_error_message;
}  // namespace

std::mutex g_observer_mu;
std::function<void(const LaunchRecord&)> g_observer;
void observe(const LaunchRecord& r) {
  std::lock_guard<std::mutex> g(g_observer_mu);
  if (g_observer) g_observer(r);
}

// simt::set_register_source's f; a function's static, so that another file's static initializer may set it.
std::mutex g_registers_mu;
std::function<int(const std::string&, const gpus::Gpu&)>& register_source() {
  static std::function<int(const std::string&, const gpus::Gpu&)> f;
  return f;
}
int registers_of(const void* kernel, const gpus::Gpu& g) {
  std::lock_guard<std::mutex> l(g_registers_mu);
  if (!register_source()) return 0;
  static std::map<const void*, std::string> names;  // demangled once per kernel
  auto it = names.find(kernel);
  if (it == names.end()) it = names.emplace(kernel, kernel_name(kernel)).first;
  return register_source()(it->second, g);
}

cudaError_t refuse_launch(cudaError_t e, const std::string& m) {
  g_last_error_message = m;
  if (!schedule().quiet) std::fprintf(stderr, "simt: launch refused: %s\n", m.c_str());
  return record_error(e);
}

cudaError_t run_grid(const void* kernel, dim3 grid, dim3 block, size_t smem, KernelBody body, int arch_specific) {
  std::lock_guard<std::mutex> launch_lock(g_launch_mu);
  g_last_error_message.clear();
  const Schedule s = schedule();
  const gpus::Gpu& gpu = simt::gpu();
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  const long long blocks = static_cast<long long>(grid.x) * grid.y * grid.z;
  char msg[320];
  std::snprintf(msg, sizeof msg, "invalid configuration: grid (%u,%u,%u), block (%u,%u,%u)", grid.x, grid.y, grid.z,
                block.x, block.y, block.z);
  if (threads < 1 || block.x > 1024 || block.y > 1024 || block.z > 64 || blocks < 1 || grid.x > 2147483647u ||
      grid.y > 65535 || grid.z > 65535)
    return refuse_launch(cudaErrorInvalidConfiguration, msg);
  const long long static_bytes = std::max(0LL, static_smem_bytes(kernel));
  const gpus::Refusal no = gpus::refusal(gpu, {.threads = threads,
                                               .dynamic_smem = static_cast<long long>(smem),
                                               .static_smem = static_bytes,
                                               .registers = registers_of(kernel, gpu)});
  if (no.limit == gpus::Limit::threads) return refuse_launch(cudaErrorInvalidConfiguration, no.why);
  if (arch_specific && arch_specific != gpu.cc())
    return refuse_launch(cudaErrorNoKernelImageForDevice,
                         "no kernel image for " + emulated_gpu_name() + ": this kernel's file is built for sm_" +
                             std::to_string(arch_specific) + "a alone, which only sm_" + std::to_string(arch_specific) +
                             " GPUs run");
  observe(LaunchRecord{kernel, grid, block, smem, static_smem_bytes(kernel)});
  const size_t limit = max_dynamic_smem(kernel);
  if (smem > limit) {
    std::snprintf(msg, sizeof msg,
                  "%zu bytes of dynamic shared memory, more than the %zu this kernel may use (above what 48 KB "
                  "leave beside its static shared memory a kernel must opt in with cudaFuncSetAttribute; %s "
                  "allows %d per block in all)",
                  smem, limit, emulated_gpu_name().c_str(), gpu.smem_optin_bytes);
    return refuse_launch(cudaErrorInvalidValue, msg);
  }
  if (no.limit == gpus::Limit::registers) return refuse_launch(cudaErrorLaunchOutOfResources, no.why);
  if (no.limit != gpus::Limit::none) return refuse_launch(cudaErrorInvalidValue, no.why);

  std::atomic<long long> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::string error;
  const std::function<void()> work = [&] {
    install_fault_handler();
    thread_local BlockRunner runner;
    t_block_dim = block;
    t_grid_dim = grid;
    while (!failed.load(std::memory_order_relaxed)) {
      const long long b = next.fetch_add(1);
      if (b >= blocks) break;
      const uint3 idx = make_uint3(static_cast<unsigned>(b % grid.x), static_cast<unsigned>((b / grid.x) % grid.y),
                                   static_cast<unsigned>(b / (static_cast<long long>(grid.x) * grid.y)));
      if (!runner.run(idx, block, smem, body, s)) {
        std::lock_guard<std::mutex> g(error_mu);
        if (!failed.exchange(true)) error = runner.error();
      }
    }
  };
  static Pool pool;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long long want = s.workers > 0 ? s.workers : hw;
  if (counters::launch_begin(kernel, grid, block, smem)) pool.run(static_cast<int>(std::min(want, blocks)), work);
  counters::launch_end(!failed);

  if (failed) {
    g_last_error_message = error;
    if (!s.quiet) std::fprintf(stderr, "simt: kernel failed: %s\n", error.c_str());
    return record_error(cudaErrorLaunchFailure);
  }
  return cudaSuccess;
}

}  // namespace detail

Schedule schedule() {
  std::lock_guard<std::mutex> g(detail::g_schedule_mu);
  return detail::schedule_ref();
}
void set_schedule(const Schedule& s) {
  std::lock_guard<std::mutex> g(detail::g_schedule_mu);
  detail::schedule_ref() = s;
}
const char* order_name(Order o) {
  switch (o) {
    case Order::forward: return "forward";
    case Order::reverse: return "reverse";
    case Order::shuffle: return "shuffle";
  }
  return "?";
}
std::string last_launch_error() { return detail::g_last_error_message; }
void set_register_source(std::function<int(const std::string&, const gpus::Gpu&)> f) {
  std::lock_guard<std::mutex> g(detail::g_registers_mu);
  detail::register_source() = std::move(f);
}
void set_launch_observer(std::function<void(const LaunchRecord&)> f) {
  std::lock_guard<std::mutex> g(detail::g_observer_mu);
  detail::g_observer = std::move(f);
}

}  // namespace simt
