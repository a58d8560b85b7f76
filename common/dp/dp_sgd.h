#ifndef VFSYNTH_COMMON_DP_DP_SGD_H_
#define VFSYNTH_COMMON_DP_DP_SGD_H_

#include <torch/torch.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dp/per_example_gradients.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// DP-SGD sanitisation (docs/privacy.md). Neighbouring datasets differ by replacing one record,
// so a clipped contribution has L2 sensitivity 2C and the noise std is z·2C.
// Clipping and noise depend only on C, z, the local per-example gradients and the
// injected generator: nothing a remote peer sends can weaken them.
//
// The diagnostics below are functions of private data and are NOT differentially
// private: log them locally, never send or publish them.

struct DpSgdOptions {
  double clip_norm = 1.0;         // C > 0: bound on each example's joint L2 norm.
  double noise_multiplier = 0.0;  // z >= 0: noise std per coordinate is z·2C (before /B).
};

struct ClipDiagnostics {
  int64_t batch_size = 0;
  double mean_norm = 0.0;         // Mean pre-clip joint norm over the examples.
  double max_norm = 0.0;          // Largest pre-clip joint norm.
  double fraction_clipped = 0.0;  // Share of examples with norm > C.
  int64_t nonfinite = 0;          // Examples with a NaN/inf gradient, counted as zero.
  double noise_std = 0.0;         // Std of the noise on the written gradient: z·2C/B.
};

// Every `log_every` steps (never when it is 0), logs `clip`'s diagnostics as
// `dp step S (critic):` (`dp step S:` when `critic` is empty). They are functions of
// private data, for the owner's own log only: with few examples clipped a lower C would
// cut the noise; with all clipped, C only scales the step.
void LogClipDiagnostics(std::string_view critic, int64_t step, int log_every,
                        const ClipDiagnostics& clip);

// Clips each example's gradient (all parameters jointly) to norm <= C and sums over the
// batch. per_example[p] is [B, ...] (row i = example i). Returns one summed tensor per
// parameter, shape per_example[p].sizes()[1:], not divided by B. Examples with norm <= C
// are unchanged; an example with a non-finite entry contributes zero.
struct ClippedSum {
  std::vector<torch::Tensor> sum;
  ClipDiagnostics diagnostics;
};
absl::StatusOr<ClippedSum> ClipAndSum(const std::vector<torch::Tensor>& per_example,
                                      double clip_norm);

// One DP-SGD gradient: for each parameter p,
//   params[p].grad() = ( Σ_i clip_C(g_i)[p] + N(0, (z·2C)² I) ) / B,
// with B = per_example[p].size(0) (the fixed, public batch size). Overwrites (does not
// accumulate into) .grad(), so the caller's optimizer can step() right after. Noise is
// drawn from `noise`, a cryptographic stream (SecureRandom::FromOsEntropy() in
// production, a fixed key in tests); no noise is drawn when z == 0. per_example must match params
// in order and shape (as returned by CriticPerExampleGradients / CriticParameters).
absl::StatusOr<ClipDiagnostics> DpSgdStep(const std::vector<torch::Tensor>& params,
                                          const std::vector<torch::Tensor>& per_example,
                                          const DpSgdOptions& options, SecureRandom& noise);

// DpSgdStep on factored per-example gradients (CriticFactoredGradients): norms and
// the clipped sum come from the factors, the [B, ...] gradients are never formed. The
// noise is drawn exactly as above. When the factors flag synthetic terms
// (CriticExamples::fake_terms_public), each example's gradient is split in two halves,
// the terms that involve its real row and those of its fake row only, and each half is
// clipped to C on its own: replacing one record changes only the real-row half of one
// example, so the sensitivity stays 2C while the clipping no longer spends the bound on
// the fake row. The diagnostics then describe the real-row half.
absl::StatusOr<ClipDiagnostics> DpSgdStepFactored(const std::vector<torch::Tensor>& params,
                                                  const std::vector<FactoredGradient>& per_example,
                                                  const DpSgdOptions& options, SecureRandom& noise);

// Expected L2 norm of the noise DP-SGD adds to one step's mean gradient, relative to
// the clip bound: z·2C·√P / B divided by C, for P noised parameters and batch size B.
// The clipped mean itself is at most about C, so above a few the noise outweighs what
// the batch can contribute (a planning figure, from public settings only).
double MeanGradientNoiseToClip(double noise_multiplier, int64_t parameters, int64_t batch_size);

// `strict` mode's feature release: every row of `rows` [B, d] is clipped to L2 norm
// <= C_f, then N(0, (z·2C_f)²) noise is added to every entry. Nothing is divided by B.
// Apply the same call to synthetic rows so the curator cannot tell them apart by noise.
struct NoisyRows {
  torch::Tensor rows;           // [B, d], detached.
  ClipDiagnostics diagnostics;  // noise_std here is z·2C_f (per entry).
};
absl::StatusOr<NoisyRows> ClipAndNoiseRows(const torch::Tensor& rows, double clip_norm,
                                           double noise_multiplier, SecureRandom& noise);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DP_DP_SGD_H_
