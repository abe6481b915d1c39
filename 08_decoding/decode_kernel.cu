// decode_kernel.cu: step b. A kernel made for one query row: a block per (sequence, new token,
// query head) streams its KV head's keys with 16-byte loads, d / 8 lanes per key and 8 keys of
// 16 lanes side by side at d = 128, four keys ahead per lane; the softmax online, per group of
// lanes, merged once at the end (decode.cuh).
// Why: chapter 05's kernel, given one query row, fills a 64- or 128-row tile with one row and
// computes the others for nothing; here every thread's work is that row's.
// Cost: each of the g query heads of a KV head reads the whole cache of that head for itself
// (g x the bytes; the L2 may catch some), and the grid is B x Lq x Hq blocks: 32 at B = 1, Hq = 32,
// a quarter of an H100's SMs. Step c fills the SMs, step d reads each KV head once.
#include "decode.cuh"
#include "decoding.h"

namespace ch08 {

cudaError_t decode_kernel(const attn::DecodeParams& p) { return launch_decode<1, false, false>(p, nullptr, nullptr); }

}  // namespace ch08
