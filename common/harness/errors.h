// errors.h: the two ways a run can end early. Bad input (sizes, head dims, dtypes, names, memory
// a problem would need) is the user's to fix: exit code 2. A failed CUDA call is a bug: exit 1.
#pragma once
#include <stdexcept>
#include <string>

namespace attn {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attn
