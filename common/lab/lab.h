// lab.h: `profile` for a kernel of your own, with no registry entry and no edit to common/.
//
// A lab is a small program (cmake/Lab.cmake, flashsteps_add_lab): its kernels in .cu files, plain
// CUDA launched with simt::launch, and a main that hands each kernel's run to Lab::profile. The
// emulator runs it, with the counters on, at a few small sizes n; every count is then a polynomial
// in n (a GEMM's blocks grow as n^2 and each block's loop as n), so the counts at the size asked
// come from the polynomial through them, and one size more checks that they are that polynomial.
// The model (model/model.h) gives the time on each GPU asked, with the issue term, the latency
// floor and the registers from the lab's own SASS, compiled for each GPU's architecture when the
// lab was built (tools/lab_sass.py). labs/sgemm is the worked example; notes/performance_model.md
// ("A kernel of your own") walks through it.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/sass.h"

namespace lab {

// The lab's SASS data, written at build time by tools/lab_sass.py: a row per kernel and architecture.
struct SassRow {
  const char* arch;  // "sm_80"
  attn::SassKernel kernel;
};
struct SassData {
  const SassRow* rows;
  int count;
  const char* sources;  // the files compiled, for the table
  const char* missing;  // why there are no rows ("" when there are)
  const char* gpus;     // the GPUs the lab was built for (cmake/Lab.cmake's GPUS), comma-separated
};
// Defined in the lab's generated <lab>_sass.cpp.
extern const SassData kSass;

struct Options {
  std::vector<std::string> gpus;    // keys of common/gpus/gpus.h (--gpu); none: those the lab was built for
  long long n = 0;                  // the size modelled (--n)
  std::vector<long long> emulated;  // the sizes emulated (--emulated): the polynomial's degree + 2 of them
  int degree = 3;                   // of the counts in n (a GEMM's: 3)
  std::function<double(long long n)> flop;  // the useful operations at n, for TFLOP/s (optional)
  // Why the kernels cannot run at n ("" when they can), asked of every size before any run (optional).
  std::function<std::string(long long n)> refuse_size;
  // The largest size the emulator runs (0: any): its time grows as the work does, n^3 for a GEMM.
  long long max_emulated = 0;
};

class Lab {
 public:
  // --gpu KEY[,KEY...], --n N, --emulated N,N,... override the lab's defaults; a bad value: a
  // message and exit status 2 before any work. --help prints them.
  Lab(int argc, char** argv, Options defaults);
  // Runs `run(n)` with the counters on at each emulated size. `run` launches the kernels (checking
  // every launch) and returns whether their output matched the lab's own reference.
  void profile(const std::string& name, const std::function<bool(long long n)>& run);
  // The modelled time of a profiled run on a GPU it modelled (gpus.h's key), in us; 0 when none.
  double modelled_us(const std::string& name, const std::string& gpu) const;
  const Options& options() const { return o_; }
  // The exit status: 0, or 1 when a run failed its check or a count was not the polynomial.
  int finish() const { return failed_ ? 1 : 0; }

 private:
  Options o_;
  bool failed_ = false;
  std::map<std::pair<std::string, std::string>, double> us_;  // (run, GPU key): its launches' modelled us, summed
};

}  // namespace lab
