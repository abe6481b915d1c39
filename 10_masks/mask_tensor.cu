// mask_tensor.cu: step a, the baseline. A pattern (a sliding window, a prefix, documents...) is
// written out as the boolean attn_mask torch takes, [Lq, Lk] bytes, by a kernel of its own, and
// chapter 05's lean_loop runs with it as with any attn_mask.
// Cost: Lq * Lk bytes written once and read by every (batch, head); every K/V tile is loaded and
// multiplied, even one the mask hides wholly; every score goes through the masked path.
#include "05_flash_v2/flash_v2.h"
#include "kernels/mask_mod.h"
#include "masks.h"
#include "simt/simt.h"

namespace ch10 {
namespace {

// One byte per (query, key), grid-stride: the rule's verdict. The book's rules are the same for
// every (batch, head), so one [Lq, Lk] plane serves them all (a mask with stride 0).
__global__ void write_mask_kernel(const attn::AttentionParams p, uint8_t* mask) {
  const attn::BookMod rule = attn::BookMod::of(p);
  const long long n = static_cast<long long>(p.Lq) * p.Lk;
  for (long long at = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; at < n;
       at += static_cast<long long>(gridDim.x) * blockDim.x)
    mask[at] = rule(0, 0, static_cast<int>(at / p.Lk), static_cast<int>(at % p.Lk)) ? 1 : 0;
}

}  // namespace

cudaError_t write_mask(const attn::AttentionParams& p, uint8_t* mask) {
  if (!has_rule(p)) return cudaErrorInvalidValue;
  const long long n = static_cast<long long>(p.Lq) * p.Lk, blocks = (n + 255) / 256;
  return simt::launch(write_mask_kernel, dim3(static_cast<unsigned>(blocks < 4096 ? blocks : 4096)), dim3(256), 0, p,
                      mask);
}

cudaError_t mask_tensor(const attn::AttentionParams& p, const uint8_t* mask) {
  attn::AttentionParams a = p;
  a.causal = attn::Causal::none;  // is_causal is in the tensor too
  a.mod.kind = attn::ModKind::none;
  a.mask_kind = attn::MaskKind::boolean;
  a.mask = mask;
  a.mask_stride_b = a.mask_stride_h = 0;
  return ch05::lean_loop(a);
}

}  // namespace ch10
