#include "problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "errors.h"

namespace attn {

float Problem::scale() const {
  return static_cast<float>(scale_override ? *scale_override : 1.0 / std::sqrt(static_cast<double>(d)));
}

void Problem::validate() const {
  auto positive = [](const char* what, long long v) {
    if (v < 1) throw UsageError(std::string(what) + " must be at least 1 (got " + std::to_string(v) + ")");
  };
  positive("batch (B)", B);
  positive("heads (H)", H);
  positive("query length (Lq)", Lq);
  positive("key length (Lk)", Lk);
  positive("head dim (d)", d);
  if (causal != Causal::none && mask != MaskKind::none)
    throw UsageError("is_causal and an attn_mask cannot be combined (torch refuses it too): choose one");
  // Byte counts are size_t products and the cost models doubles: 2^56 elements (of 8 bytes at
  // most) keeps both exact. Far beyond any device: 2^56 pairs are hours of work at d = 64 for a
  // GPU that does 10^15 FLOP/s.
  const double pairs = static_cast<double>(B) * H * Lq * Lk, elems = static_cast<double>(B) * H * std::max(Lq, Lk) * d;
  const double most = std::ldexp(1.0, 56);
  if (pairs > most || elems > most) {
    std::ostringstream s;
    s << "the problem is too large: B*H*Lq*Lk = " << pairs << " (query, key) pairs and B*H*max(Lq, Lk)*d = " << elems
      << " elements; at most 2^56 = " << most << " of each keep every byte count exact (and no GPU runs that in minutes)";
    throw UsageError(s.str());
  }
  // The kernels number heads (and rows within a head) with 32-bit ints, as FlashAttention does.
  if (static_cast<long long>(B) * H > std::numeric_limits<int>::max())
    throw UsageError("B*H = " + std::to_string(static_cast<long long>(B) * H) + " heads: the kernels number them with "
                     "32-bit ints, so at most " + std::to_string(std::numeric_limits<int>::max()));
  if (scale_override) {
    const double s = *scale_override;
    if (!std::isfinite(s)) throw UsageError(std::string("the scale must be a finite number, not ") + (std::isnan(s) ? "nan" : "inf"));
    // |scale * q.k| <= |scale| * d * kInputBound^2, times log2(e) in the exp2 variants: in fp32.
    const double largest = static_cast<double>(std::numeric_limits<float>::max()) / (d * kInputBound * kInputBound * 1.4427);
    if (std::fabs(s) > largest) {
      std::ostringstream m;
      m << "the scale " << s << " would let scores (|scale| * q.k, up to |scale| * " << d * kInputBound * kInputBound
        << " at d = " << d << ") overflow fp32, in which every kernel computes them: |scale| must be at most " << largest;
      throw UsageError(m.str());
    }
  }
}

const char* causal_name(Causal c) {
  switch (c) {
    case Causal::none: return "none";
    case Causal::top_left: return "top-left";
    case Causal::bottom_right: return "bottom-right";
  }
  return "?";
}
const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::none: return "none";
    case MaskKind::boolean: return "bool";
    case MaskKind::additive: return "additive";
  }
  return "?";
}

std::string Problem::describe() const {
  std::ostringstream s;
  s << "B=" << B << " H=" << H << " Lq=" << Lq << " Lk=" << Lk << " d=" << d << " " << dtype_name(dtype);
  if (causal != Causal::none) s << " causal(" << causal_name(causal) << ")";
  if (mask != MaskKind::none) s << " mask(" << mask_name(mask) << (mask_per_head ? ", per head" : "") << ")";
  if (scale_override) s << " scale=" << *scale_override;
  return s.str();
}

size_t Problem::mask_elems() const {
  if (mask == MaskKind::none) return 0;
  return (mask_per_head ? heads() : 1) * static_cast<size_t>(Lq) * Lk;
}
size_t Problem::mask_bytes() const { return mask_elems() * (mask == MaskKind::boolean ? 1 : 4); }

long long Problem::visible_pairs() const {
  const long long lq = Lq, lk = Lk;
  if (causal == Causal::none) return lq * lk;
  const long long off = causal == Causal::bottom_right ? lk - lq : 0;
  long long n = 0;  // row i sees keys 0 .. min(i + off, lk - 1)
  for (long long i = 0; i < lq; ++i) n += std::max(0LL, std::min(i + off + 1, lk));
  return n;
}
double Problem::flops() const { return 4.0 * static_cast<double>(heads()) * d * static_cast<double>(visible_pairs()); }
double Problem::fa2_bytes(int Br) const {
  const double t = dtype_size(dtype), Tr = (Lq + Br - 1) / Br;
  return static_cast<double>(heads()) * t * (2.0 * Lq * d + Tr * 2.0 * Lk * d);
}
double Problem::fa2_bytes_visited(long long pairs, int Bc) const {
  return static_cast<double>(heads()) * dtype_size(dtype) * d * (2.0 * Lq + 2.0 * Bc * static_cast<double>(pairs));
}
double Problem::qkvo_bytes() const {
  return static_cast<double>(dtype_size(dtype)) * (2.0 * static_cast<double>(q_elems()) + 2.0 * static_cast<double>(kv_elems()));
}


Inputs Inputs::generate(const Problem& p) {
  Inputs in;
  Bell bell{p.seed * 0x2545F4914F6CDD1Dull + 1};
  auto fill = [&](std::vector<float>& x, size_t n) {
    x.resize(n);
    for (float& e : x) e = round_to(p.dtype, bell());
  };
  fill(in.q, p.q_elems());
  fill(in.k, p.kv_elems());
  fill(in.v, p.kv_elems());
  std::mt19937_64 rng(p.seed);
  // Masks: every 7th query row (from row 3) is wholly masked, to exercise the fully-masked-row
  // convention (its output is 0); elsewhere about 1 key in 5 is masked.
  const size_t planes = p.mask_elems() / (static_cast<size_t>(p.Lq) * p.Lk);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  if (p.mask == MaskKind::boolean) {
    in.mask_bool.resize(p.mask_elems());
    for (size_t pl = 0; pl < planes; ++pl)
      for (int i = 0; i < p.Lq; ++i)
        for (int j = 0; j < p.Lk; ++j)
          in.mask_bool[(pl * p.Lq + i) * p.Lk + j] = i % 7 == 3 ? 0 : u(rng) >= 0.2f;
  } else if (p.mask == MaskKind::additive) {
    in.mask_add.resize(p.mask_elems());
    for (size_t pl = 0; pl < planes; ++pl)
      for (int i = 0; i < p.Lq; ++i)
        for (int j = 0; j < p.Lk; ++j) {
          const float r = u(rng);
          in.mask_add[(pl * p.Lq + i) * p.Lk + j] = i % 7 == 3 || r < 0.1f ? -INFINITY : 4.f * u(rng) - 2.f;
        }
  }
  return in;
}

float Inputs::mask_at(const Problem& p, int b, int h, int i, int j) const {
  if (p.mask == MaskKind::none) return 0.f;
  const size_t plane = p.mask_per_head ? static_cast<size_t>(b) * p.H + h : 0;
  const size_t at = (plane * p.Lq + i) * p.Lk + j;
  if (p.mask == MaskKind::boolean) return mask_bool[at] ? 0.f : -INFINITY;
  return mask_add[at];
}

}  // namespace attn
