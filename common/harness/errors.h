// errors.h: the two ways a run can end early. Bad input (sizes, head dims, dtypes, names, memory
// a problem would need, an allocation that fails) is the user's to fix: exit code 2. A failed CUDA
// call is a bug: exit 1.
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
// An allocation that failed although the memory check let the problem through (another process
// took the memory meanwhile, a limit the check cannot see): the user's to fix too, exit code 2.
struct OutOfMemory : UsageError {
  using UsageError::UsageError;
};

}  // namespace attn
