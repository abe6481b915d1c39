// split_kv.cu: step c, Flash-Decoding. Each sequence's keys cut into p.splits ranges, one block
// per (query row, range): the grid grows by the split count. Each block writes its row's O
// (normalised by its own sum) and log-sum-exp; a second kernel, the combine, merges the ranges of
// each row with weights 2^(lse_s - max lse): the online softmax's rescaling once more.
// Why: step b's grid is B x Lq x Hq blocks, 32 at B = 1 and Hq = 32 on 132 SMs, each streaming a
// whole sequence alone.
// Cost: the partial O and lse go to memory and back (splits x rows x (d + 1) x 4 bytes twice,
// small beside the cache), and a second launch. The host picks the count (split_heuristic).
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {
namespace {

// A block per query row; each thread a column: the ranges' weights from their lse, then O.
template <class T>
__global__ void combine_kernel(const attn::DecodeParams p, const float* part_o, const float* part_lse) {
  const long long row = blockIdx.x, rows = static_cast<long long>(p.B) * p.Lq * p.Hq;
  float M = -INFINITY;
  for (int s = 0; s < p.splits; ++s) M = fmaxf(M, part_lse[s * rows + row]);
  for (int c = static_cast<int>(threadIdx.x); c < p.d; c += static_cast<int>(blockDim.x)) {
    float sum = 0.f, o = 0.f;
    if (M != -INFINITY)
      for (int s = 0; s < p.splits; ++s) {
        const float w = exp2f(part_lse[s * rows + row] - M);  // 0 for a range the row sees nothing of
        sum += w, o += w * part_o[(s * rows + row) * p.d + c];
      }
    attn::store(static_cast<T*>(p.o) + row * p.d + c, sum > 0.f ? o / sum : 0.f);
  }
}

}  // namespace

size_t split_workspace(int B, int Lq, int Hq, int d, int splits) {
  return static_cast<size_t>(splits) * B * Lq * Hq * (d + 1) * sizeof(float);
}

cudaError_t combine(const attn::DecodeParams& p) {
  if (p.splits <= 1) return cudaSuccess;
  const Partials part = partials(p);
  const dim3 grid(static_cast<unsigned>(static_cast<long long>(p.B) * p.Lq * p.Hq)), block(128);
  return attn::dispatch_dtype(p.dtype, [&](auto tag) {
    return simt::launch(combine_kernel<decltype(tag)>, grid, block, 0, p, static_cast<const float*>(part.o),
                        static_cast<const float*>(part.lse));
  });
}

cudaError_t split_kv(const attn::DecodeParams& p) {
  if (p.splits <= 1) return launch_decode<1, false, false>(p, nullptr, nullptr);
  const Partials part = partials(p);
  return launch_decode<1, true, false>(p, part.o, part.lse);
}

}  // namespace ch08
