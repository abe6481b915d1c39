// head_dims.h: the head dims a kernel family is compiled for, declared once as a type. The same
// list drives the kernels' dispatch (attn::dispatch_head_dim in numeric.cuh) and the registry's
// HeadDims (as_vector), so the two cannot disagree.
#pragma once
#include <vector>

namespace attn {

template <int... Ds>
struct HeadDimList {
  static constexpr int values[] = {Ds...};
};

template <int... Ds>
std::vector<int> as_vector(HeadDimList<Ds...>) {
  return {Ds...};
}

}  // namespace attn
