// compare.h: is a kernel's output right?
//
// Always: no NaN or Inf anywhere in the output (a NaN passes no `error > tol` test, so it is
// counted, and one is a failure), and |o - ref| <= atol + rtol * |ref| element by element, with
// atol = rtol = the dtype's tolerance. For fp16 and bf16 also FlashAttention's own rule: the
// largest error against the double reference is at most twice that of a naive computation in
// the same dtype, plus one unit in the last place of the largest output.
#pragma once
#include <string>
#include <vector>

#include "reference.h"

namespace attn {

double tolerance(DType t);  // fp32 2e-5, fp16 2e-3 (4 ulp), bf16 1.6e-2 (4 ulp)
// The log-sum-exp's absolute tolerance for one row: it grows with the row's scores
// (score_bound: Expected::score_bound) and with |lse|; the reasoning is in compare.cpp.
double lse_tolerance(const Problem& p, double lse, double score_bound);

struct Verdict {
  size_t checked = 0;           // output elements compared
  long long nonfinite = 0;      // NaN or Inf in the whole output
  double max_abs = 0, max_rel = 0;  // max |o - ref|, and that over max |ref|
  double ref_max = 0;
  double naive_err = -1, bound = -1;  // FlashAttention's rule (fp16, bf16)
  double lse_max_abs = -1;            // when the variant writes the log-sum-exp
  bool pass = false;
  std::string why;  // what failed
};

// out: the whole output tensor as float; lse: the whole lse tensor or empty.
Verdict compare(const Problem& p, const Selection& sel, const std::vector<float>& out, const Expected& ref,
                const std::vector<double>* naive, const std::vector<float>* lse);

}  // namespace attn
