#include "sweep.h"

namespace attn {

std::vector<Problem> shape_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  std::vector<Problem> out;
  for (Lengths l : {Lengths{1, 1}, Lengths{17, 17}, Lengths{97, 97}, Lengths{257, 257}, Lengths{17, 97},
                    Lengths{97, 17}, Lengths{1, 257}, Lengths{200, 1}})
    for (int d : {32, 64, 80, 128})
      for (DType t : {DType::fp32, DType::fp16, DType::bf16})
        for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
          Problem p;
          const bool big = l.Lq >= 97 || l.Lk >= 97;  // keeps the emulated sweep within minutes
          p.B = big ? 1 : 2;
          p.H = big ? 2 : 3;
          p.Lq = l.Lq, p.Lk = l.Lk, p.d = d, p.dtype = t, p.causal = c;
          p.seed = static_cast<uint64_t>(l.Lq * 1000 + l.Lk + d);
          out.push_back(p);
        }
  // The other head dims the tensor-core chapters state: 96 and 256.
  for (Lengths l : {Lengths{17, 97}, Lengths{97, 17}, Lengths{130, 130}})
    for (int d : {96, 256})
      for (DType t : {DType::fp16, DType::bf16})
        for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
          Problem p;
          p.B = 1, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk, p.d = d, p.dtype = t, p.causal = c;
          out.push_back(p);
        }
  return out;
}

std::vector<Problem> mask_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  std::vector<Problem> out;
  for (Lengths l : {Lengths{17, 97}, Lengths{97, 17}, Lengths{130, 130}})
    for (MaskKind m : {MaskKind::boolean, MaskKind::additive})
      for (bool per_head : {false, true})
        for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
          Problem p;
          p.B = 2, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk, p.d = 64, p.dtype = t;
          p.mask = m, p.mask_per_head = per_head;
          out.push_back(p);
        }
  for (DType t : {DType::fp32, DType::fp16}) {  // rows too long to keep on chip (chapter 02's long-row path)
    Problem p;
    p.B = 1, p.H = 1, p.Lq = 3, p.Lk = 60001, p.d = 32, p.dtype = t, p.mask = MaskKind::additive;
    out.push_back(p);
  }
  Problem scaled;  // an explicit scale, as torch's scale= argument
  scaled.Lq = 40, scaled.Lk = 70, scaled.d = 64, scaled.dtype = DType::fp16, scaled.scale_override = 0.05;
  out.push_back(scaled);
  return out;
}

std::vector<Problem> backward_sweep() {
  struct Lengths {
    int Lq, Lk;
  };
  std::vector<Problem> out;
  // Lengths crossing the tiles of 32 (step b) and 64 (steps c, d) rows, and with Lq > Lk under
  // bottom-right alignment, rows that see no key. Head dims and dtypes in turn, so that every
  // length meets several of each.
  const Lengths lengths[] = {{1, 1}, {1, 70}, {70, 1}, {33, 33}, {37, 100}, {100, 37}, {130, 97}};
  const int dims[] = {32, 64, 128, 80, 96};
  const DType types[] = {DType::fp16, DType::bf16, DType::fp32};
  int k = 0;
  for (Lengths l : lengths)
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (int rep = 0; rep < 2; ++rep, ++k) {
        Problem p;
        p.B = 1, p.H = 2, p.Lq = l.Lq, p.Lk = l.Lk, p.causal = c;
        p.d = dims[k % 5];
        p.dtype = types[k % 3];
        if (p.d == 80 && p.dtype != DType::fp32) p.d = 64;  // 80: the CUDA-core steps only
        p.seed = static_cast<uint64_t>(k + 1);
        out.push_back(p);
      }
  for (MaskKind m : {MaskKind::boolean, MaskKind::additive})  // every 7th row (from row 3) fully masked
    for (DType t : {DType::fp16, DType::bf16, DType::fp32}) {
      Problem p;
      p.B = 2, p.H = 1, p.Lq = 45, p.Lk = 77, p.d = t == DType::fp32 ? 80 : 64, p.dtype = t, p.mask = m;
      p.mask_per_head = t == DType::bf16;
      out.push_back(p);
    }
  Problem scaled;  // an explicit scale, as torch's scale= argument
  scaled.B = 1, scaled.H = 1, scaled.Lq = 40, scaled.Lk = 70, scaled.d = 128, scaled.dtype = DType::fp16;
  scaled.scale_override = 0.05;
  out.push_back(scaled);
  return out;
}

}  // namespace attn
