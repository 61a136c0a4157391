// A candidate CPU decode-attention kernel (issue 16, item 4), measured by scripts/decode_kernel/measure.py; not
// used by the model. One new token per query head: each KV head's query group (G rows) streams its K and V once,
// with an online softmax over key blocks, so a GQA group shares one pass over the cache.
// q: (B, KV, G, 64) contiguous; k, v: (B, KV, S, 64) with contiguous rows (views of a longer cache are fine).
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

torch::Tensor decode_attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale) {
  constexpr int D = 64, BLK = 128;
  TORCH_CHECK(q.dim() == 4 && q.size(3) == D && q.is_contiguous() && q.scalar_type() == torch::kFloat,
              "q must be a contiguous float32 (B, KV, G, 64) tensor");
  TORCH_CHECK(k.scalar_type() == torch::kFloat && v.scalar_type() == torch::kFloat && k.stride(3) == 1 &&
              v.stride(3) == 1 && k.stride(2) == D && v.stride(2) == D, "k and v need contiguous rows of 64");
  const int64_t B = q.size(0), KV = q.size(1), G = q.size(2), S = k.size(2);
  auto out = torch::empty_like(q);
  const float* qp = q.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const float* kp = k.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  const int64_t k0 = k.stride(0), k1 = k.stride(1), v0 = v.stride(0), v1 = v.stride(1);
  at::parallel_for(0, B * KV, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> sc(G * BLK), acc(G * D), m(G), l(G), qs(G * D);
    for (int64_t t = begin; t < end; ++t) {
      const float* kb = kp + (t / KV) * k0 + (t % KV) * k1;
      const float* vb = vp + (t / KV) * v0 + (t % KV) * v1;
      const float* qq = qp + t * G * D;
      for (int64_t i = 0; i < G * D; ++i) qs[i] = qq[i] * static_cast<float>(scale);
      std::fill(acc.begin(), acc.end(), 0.f);
      std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
      std::fill(l.begin(), l.end(), 0.f);
      for (int64_t j0 = 0; j0 < S; j0 += BLK) {
        const int n = static_cast<int>(std::min<int64_t>(BLK, S - j0));
        for (int j = 0; j < n; ++j) {  // scores: one dot product per key and query of the group
          const float* __restrict kr = kb + (j0 + j) * D;
          __builtin_prefetch(kr + BLK * D, 0, 0);
          for (int64_t g = 0; g < G; ++g) {
            const float* __restrict qg = &qs[g * D];
            float s = 0.f;
#pragma omp simd reduction(+ : s)
            for (int d = 0; d < D; ++d) s += qg[d] * kr[d];
            sc[g * BLK + j] = s;
          }
        }
        for (int64_t g = 0; g < G; ++g) {  // online softmax: rescale what came before to the new maximum
          float* __restrict sg = &sc[g * BLK];
          float top = m[g];
          for (int j = 0; j < n; ++j) top = std::max(top, sg[j]);
          const float corr = std::exp(m[g] - top);
          float sum = 0.f;
#pragma omp simd reduction(+ : sum)
          for (int j = 0; j < n; ++j) {
            sg[j] = std::exp(sg[j] - top);
            sum += sg[j];
          }
          l[g] = l[g] * corr + sum;
          m[g] = top;
          float* __restrict a = &acc[g * D];
          for (int d = 0; d < D; ++d) a[d] *= corr;
        }
        for (int j = 0; j < n; ++j) {  // output: each V row once for the whole group
          const float* __restrict vr = vb + (j0 + j) * D;
          __builtin_prefetch(vr + BLK * D, 0, 0);
          for (int64_t g = 0; g < G; ++g) {
            const float p = sc[g * BLK + j];
            float* __restrict a = &acc[g * D];
#pragma omp simd
            for (int d = 0; d < D; ++d) a[d] += p * vr[d];
          }
        }
      }
      float* o = op + t * G * D;
      for (int64_t g = 0; g < G; ++g)
        for (int d = 0; d < D; ++d) o[g * D + d] = acc[g * D + d] / l[g];
    }
  });
  return out;
}
