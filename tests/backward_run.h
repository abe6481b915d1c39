// backward_run.h: what a test needs to run backward variants on one problem: the inputs, dO, the
// reference gradients' checker and the device buffers.
#pragma once
#include <vector>

#include "harness/backward/backward.h"
#include "harness/reference.h"

namespace attn {

struct BackwardRun {
  Problem p;
  Inputs in;
  std::vector<float> dout;
  BackwardChecker checker;
  BackwardInputs dev;
  // dout_scale: seeded_dout's (a loss scaler's factor)
  BackwardRun(const Problem& problem, const RunOptions& o, double dout_scale = 1)
      : p(problem), in(Inputs::generate(p)), dout(seeded_dout(p, dout_scale)), checker(p, in, dout, o), dev(p, in, dout) {}
  // O and L from the fp64 reference, so that no forward kernel's error reaches the gradients' inputs.
  BackwardRun& reference_forward() {
    dev.set_forward(p, reference(p, in, Selection::all(p)));
    return *this;
  }
};
// Run once, untimed, every row checked.
inline RunOptions untimed() {
  RunOptions o;
  o.reps = 0;
  o.sample = false;
  return o;
}

}  // namespace attn
