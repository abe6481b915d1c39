// score_mod.cu: step d, score_mod. Step c's kernel, block mask and all, with the score itself
// changed before the row maximum: FlexAttention's score_mod(score, b, h, q_idx, kv_idx), here
// FlashAttention-2's softcap and ALiBi (kernels/score_mod.h), as the Policy's score_mod. Step c's
// full tiles kept the raw scores and folded the scale into the exponent; a score_mod needs the
// scaled score, so every visited tile now scales first, then modifies (fa2_tile.cuh: score_tile).
// A problem without a score_mod runs step c's kernel: the choice is made at launch, as
// FlashAttention-2 instantiates its kernel per softcap and ALiBi.
// Cost: per score, a multiply for the scale and the mod's own instructions: softcap a MUFU.TANH and
// two multiplies (a second special-function instruction beside the exponential), ALiBi an integer
// distance, a conversion and an FFMA.
#include "listed_tiles.cuh"

namespace ch10 {
namespace {

template <int Br, int Bc>
using ScoredTiles = attn::WithBookScore<ListedTiles<Br, Bc>>;

}  // namespace

cudaError_t score_mod(const attn::AttentionParams& p, const void* lists) {
  if (!has_score_mod(p)) return block_mask(p, lists);
  return launch_listed<ScoredTiles>(p, lists);
}

}  // namespace ch10
