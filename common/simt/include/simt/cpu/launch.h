// simt/cpu/launch.h: what a kernel launch becomes on the CPU, and the per-thread state behind
// threadIdx, blockIdx and the warp collectives.
//
// A block's GPU threads are fibers on one OS thread; blocks are spread over a pool of OS threads.
// So a function-local `static thread_local` variable is exactly "one copy per resident block",
// which is how `__shared__` is mapped (simt/cpu/builtins.h).
#pragma once
// The toolkit headers come first: cuda_runtime.h uses `gridDim` and `blockDim` as parameter
// names, which become macros below. Later includes of them are then no-ops.
#include <cuda_runtime.h>
#include <vector_functions.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpus/gpus.h"
#include "simt/launch_error.h"

// A kernel file built for one architecture alone (sm_90a: wgmma, setmaxnreg) says which with
// -DSIMT_ARCH_SPECIFIC=90 (cmake/Kernels.cmake); its launches then carry it, and the emulator
// refuses them on any other GPU, as a GPU finds no image to run.
#ifndef SIMT_ARCH_SPECIFIC
#define SIMT_ARCH_SPECIFIC 0
#endif

namespace simt {

// Order in which a block's runnable threads are resumed. A cooperative scheduler runs a thread
// until it blocks, so one fixed order can hide a missing barrier; the others expose it.
enum class Order { forward, reverse, shuffle };

struct Schedule {
  Order order = Order::forward;
  unsigned seed = 1;      // for Order::shuffle
  int workers = 0;        // OS threads running blocks; 0: one per core. 1 for gdb.
  bool lenient_exit = false;  // a barrier after some threads returned: error (default) or ignore
  bool quiet = false;     // do not print launch errors to stderr (tests that provoke them)
};

// The schedule in force: from SIMT_ORDER (forward|reverse|shuffle), SIMT_SEED, SIMT_WORKERS,
// SIMT_LENIENT_EXIT and SIMT_QUIET at first use, or from set_schedule.
Schedule schedule();
void set_schedule(const Schedule& s);
const char* order_name(Order o);


// The GPU the emulator stands for (common/gpus/gpus.h): its launches are held to that GPU's compute
// capability, shared memory and threads, and the runtime API reports its properties. SIMT_GPU (a
// key of the table) at first use, the H100 SXM5 without it; set_gpu changes it.
const gpus::Gpu& gpu();
void set_gpu(const gpus::Gpu& g);

// What a launch asked of the GPU, as the emulator saw it before running (or refusing) it.
struct LaunchRecord {
  const void* kernel;
  dim3 grid, block;
  size_t dynamic_smem;
  long long static_smem;  // the kernel's own static __shared__ (-1: its symbol was not found)
};
// Calls f with every launch from now on, run or refused (tests: what a variant's kernels ask for);
// an empty f stops it.
void set_launch_observer(std::function<void(const LaunchRecord&)> f);

// The registers per thread the compiler allotted a kernel (named as the symbol table demangles it)
// for GPU g's architecture, 0 when not known: the harness reads them from its SASS data (model/
// sass.h). With a source set, a launch whose warps ask more of the register file than a block may
// have is refused as the GPU refuses it (cudaErrorLaunchOutOfResources); without one (the default,
// an empty f) registers are not checked.
void set_register_source(std::function<int(const std::string& kernel, const gpus::Gpu& g)> f);

namespace detail {

struct AsyncCopy {  // one cp.async in flight: read at issue, written at its wait_group
  void* dst;
  unsigned char bytes[16];
  int size;
  int group;
};

// One GPU thread's state.
struct Thread {
  uint3 tid;
  unsigned linear, lane, warp;
  // Exchange area of the warp collectives: each lane publishes `in` and its arguments; the last
  // lane to arrive computes every lane's `out`.
  alignas(16) unsigned char in[64];
  alignas(16) unsigned char out[64];
  int arg;
  int width;
  const void* addr;
  const char* file;  // where the collective in progress was called, for its error messages
  int line;
  std::vector<AsyncCopy> copies;
  int committed_groups = 0;
  const void* mbarrier = nullptr;  // the mbarrier this thread waits on, for the parity below
  unsigned parity = 0;
  unsigned named = 0;  // the named barrier this thread waits at
};

using CollectiveFn = void (*)(Thread* const* lanes, unsigned mask, const void* arg);
inline void no_op(Thread* const*, unsigned, const void*) {}  // __syncwarp's collective

extern thread_local constinit Thread* t_thread;
extern thread_local constinit uint3 t_block_idx;
extern thread_local constinit dim3 t_block_dim;
extern thread_local constinit dim3 t_grid_dim;

enum class Barrier { plain, count, all, any };
// Block barrier; returns the reduced predicate (count, and, or).
int block_barrier(Barrier kind, int pred, const char* what, const char* file, int line);
// All lanes of `mask` must arrive at the same call site; the last one runs fn once for all.
void warp_collective(unsigned mask, const char* what, const char* file, int line, CollectiveFn fn,
                     const void* arg);
unsigned active_mask();
void* dynamic_smem_base();
// cp.async.wait_group: the calling thread's copies land, but for the newest `pending` groups.
void wait_async_copies(int pending);
// mbarrier (simt/mbarrier.cuh): the block's runner keeps each one's state by its address.
void mbarrier_init(void* bar, unsigned count, const char* file, int line);
// One arrival, after adding tx_bytes to the phase's transaction count; returns the phase arrived at.
uint64_t mbarrier_arrive(void* bar, unsigned tx_bytes, const char* what, const char* file, int line);
// Adds delta to the phase's transaction count (expect_tx: +bytes; complete_tx: -bytes).
void mbarrier_tx(void* bar, long long delta, const char* what, const char* file, int line);
void mbarrier_wait_parity(void* bar, unsigned parity, const char* file, int line);
// bar.sync (wait) or bar.arrive with barrier `id` (1..15) and `threads` (simt/named_barrier.cuh).
void named_barrier(unsigned id, unsigned threads, bool wait, const char* file, int line);
// TMA (simt/tma.cuh): the box of the tensor map `map` at coords[0..rank) into dst, its bytes on bar.
void tma_load(void* dst, const void* map, int rank, const int* coords, void* bar, const char* file, int line);
// wgmma (simt/wgmma.cuh): a thread's accumulator while wgmma on it are in flight; what each lane
// publishes (Thread::in) for its warp's part of a wgmma; the instruction's shape; the collectives.
struct WgmmaInFlight {
  unsigned ops = 0;
  const char* file = nullptr;  // the latest of them
  int line = 0;
};
struct WgmmaLane {
  float* d;
  WgmmaInFlight* flight;
  uint64_t desc_a, desc_b;
  uint32_t a[4];
  int accumulate;
};
struct WgmmaShape {
  int n;
  bool bf16, a_in_registers, trans_a, trans_b;
};
void wgmma_issue(Thread* const* lanes, unsigned mask, const void* shape);
void wgmma_fence(Thread* const* lanes, unsigned mask, const void*);
void wgmma_commit(Thread* const* lanes, unsigned mask, const void*);
void wgmma_wait(Thread* const* lanes, unsigned mask, const void* pending);
uint32_t wgmma_smem_offset(const void* p, const char* file, int line);  // checked: in dynamic shared memory
[[noreturn]] void wgmma_early_access(const WgmmaInFlight& f);
[[noreturn]] void wgmma_out_of_scope(const WgmmaInFlight& f);
// setmaxnreg by warp `warp` (simt/setmaxnreg.cuh): checked against its warpgroup's other warps.
void register_change(unsigned warp, bool inc, unsigned regs, const char* file, int line);
// An instruction that GPUs before compute capability cc lack (cc = 80: sm_80), or with `specific`,
// that only cc has (sm_90a's): fails the running block on an emulated GPU without it, where a GPU
// build for that GPU has no such code, or traps (simt/ptx.cuh).
void require_arch(int cc, const char* instruction, const char* file, int line, bool specific = false);
// Fails the running block with a message naming file:line (the launch returns an error).
[[noreturn]] void kernel_error(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

struct KernelBody {
  void (*invoke)(const void* call);
  const void* call;
};
// arch_specific: 0, or the compute capability (90) the kernel's file alone is built for.
cudaError_t run_grid(const void* kernel, dim3 grid, dim3 block, size_t smem, KernelBody body, int arch_specific);

}  // namespace detail

template <class T>
inline T* dynamic_smem() {
  return static_cast<T*>(detail::dynamic_smem_base());
}

// kernel<<<grid, block, smem>>>(args...) on the CPU; returns the launch's error, as
// cudaGetLastError would after a synchronize (the emulator runs the grid to completion). Arch: the
// file's SIMT_ARCH_SPECIFIC, a template argument so that files built for different targets
// instantiate different functions.
template <int Arch = SIMT_ARCH_SPECIFIC, class... P, class... A>
cudaError_t launch_exact(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "wrong number of kernel arguments");
  struct Call {
    void (*kernel)(P...);
    std::tuple<std::decay_t<P>...> args;  // by value, like CUDA's parameter space
  };
  const Call call{kernel, {static_cast<P>(std::forward<A>(args))...}};
  // Each GPU thread calls the kernel with its own copy of the arguments.
  auto invoke = [](const void* c) {
    const Call& k = *static_cast<const Call*>(c);
    std::apply(k.kernel, k.args);
  };
  return detail::run_grid(reinterpret_cast<const void*>(kernel), grid, block, smem,
                          detail::KernelBody{invoke, &call}, Arch);
}

namespace detail {
// The opt-in of simt::launch; on failure the launch's message says what was asked and allowed.
cudaError_t opt_in(const void* kernel, size_t smem, int arch_specific);
}  // namespace detail

template <int Arch = SIMT_ARCH_SPECIFIC, class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  if (smem > 0)  // as simt/gpu.h: 48 KB without the opt-in counts static __shared__ too
    if (const cudaError_t e = detail::opt_in(reinterpret_cast<const void*>(kernel), smem, Arch); e != cudaSuccess)
      return e;
  return launch_exact<Arch>(kernel, grid, block, smem, std::forward<A>(args)...);
}

}  // namespace simt
