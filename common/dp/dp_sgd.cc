#include "common/dp/dp_sgd.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/dp/fast_cast.h"
#include "common/random/random_tensors.h"

namespace vfsynth {
namespace {

absl::Status CheckParams(double clip_norm, double noise_multiplier) {
  if (!std::isfinite(clip_norm) || clip_norm <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip norm must be finite and > 0, got ", clip_norm));
  }
  if (!std::isfinite(noise_multiplier) || noise_multiplier < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("noise multiplier must be finite and >= 0, got ", noise_multiplier));
  }
  return absl::OkStatus();
}

// Per-example factors min(1, C/‖g_i‖) (0 for a non-finite g_i) and, unless diag is
// null, diagnostics.
torch::Tensor ClipFactors(const torch::Tensor& sq_norms, double clip_norm, ClipDiagnostics* diag) {
  const torch::Tensor norms = sq_norms.sqrt();  // double
  const torch::Tensor finite = torch::isfinite(norms);
  const torch::Tensor safe = torch::where(finite, norms, torch::zeros_like(norms));
  // Only examples above C are scaled, so small ones stay bit-identical.
  torch::Tensor factor =
      torch::where(safe > clip_norm, clip_norm / safe.clamp_min(clip_norm), torch::ones_like(safe));
  factor = torch::where(finite, factor, torch::zeros_like(factor));
  if (diag == nullptr) return factor;
  diag->batch_size = norms.size(0);
  diag->nonfinite = (~finite).sum().item<int64_t>();
  diag->mean_norm = safe.mean().item<double>();
  diag->max_norm = safe.max().item<double>();
  diag->fraction_clipped = (safe > clip_norm).to(torch::kDouble).mean().item<double>();
  return factor;
}

torch::Tensor Noise(at::IntArrayRef sizes, double stddev, SecureRandom& rng,
                    const torch::TensorOptions& options) {
  return GaussianTensor(rng, sizes, stddev, c10::typeMetaToScalarType(options.dtype()));
}

// params[p].grad() = (sums[p] + N(0, (z·2C)²)) / B; returns the written noise std.
double WriteNoisyMean(const std::vector<torch::Tensor>& params,
                      const std::vector<torch::Tensor>& sums, int64_t batch,
                      const DpSgdOptions& options, SecureRandom& noise) {
  torch::NoGradGuard no_grad;
  const auto b = static_cast<double>(batch);
  const double stddev = options.noise_multiplier * 2.0 * options.clip_norm;
  for (size_t p = 0; p < params.size(); ++p) {
    torch::Tensor grad = sums[p];
    if (stddev > 0) grad = grad + Noise(grad.sizes(), stddev, noise, grad.options());
    params[p].mutable_grad() = (grad / b).to(params[p].options());
  }
  return stddev / b;
}

}  // namespace

absl::StatusOr<ClippedSum> ClipAndSum(const std::vector<torch::Tensor>& per_example,
                                      double clip_norm) {
  if (absl::Status s = CheckParams(clip_norm, 0.0); !s.ok()) return s;
  if (per_example.empty()) return absl::InvalidArgumentError("no per-example gradients");
  const int64_t b = per_example[0].dim() >= 1 ? per_example[0].size(0) : 0;
  if (b < 1) return absl::InvalidArgumentError("per-example gradients need a batch dimension");
  for (const auto& g : per_example) {
    if (!g.defined() || g.dim() < 1 || g.size(0) != b) {
      return absl::InvalidArgumentError(
          absl::StrCat("every per-example gradient must be [", b, ", ...]"));
    }
  }
  try {
    torch::NoGradGuard no_grad;
    torch::Tensor sq;
    for (const auto& g : per_example) {
      const torch::Tensor s = CastCopy(g.reshape({b, -1}), torch::kDouble).pow(2).sum(1);
      sq = sq.defined() ? sq + s : s;
    }
    ClippedSum result;
    const torch::Tensor factor = ClipFactors(sq, clip_norm, &result.diagnostics);
    for (const auto& g : per_example) {
      // Zero out non-finite rows explicitly: 0 * inf would be NaN.
      const torch::Tensor flat = CastCopy(g.reshape({b, -1}), torch::kDouble);
      const torch::Tensor clean =
          torch::where(torch::isfinite(flat), flat, torch::zeros_like(flat));
      const torch::Tensor summed = (clean * factor.unsqueeze(1)).sum(0);
      result.sum.push_back(CastCopy(summed.reshape(g.sizes().slice(1)), g.scalar_type()));
    }
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("clip: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<ClipDiagnostics> DpSgdStep(const std::vector<torch::Tensor>& params,
                                          const std::vector<torch::Tensor>& per_example,
                                          const DpSgdOptions& options, SecureRandom& noise) {
  if (absl::Status s = CheckParams(options.clip_norm, options.noise_multiplier); !s.ok()) return s;
  if (params.size() != per_example.size()) {
    return absl::InvalidArgumentError(absl::StrCat(params.size(), " parameters but ",
                                                   per_example.size(), " per-example gradients"));
  }
  for (size_t p = 0; p < params.size(); ++p) {
    if (!per_example[p].defined() || per_example[p].dim() != params[p].dim() + 1 ||
        !per_example[p].sizes().slice(1).equals(params[p].sizes())) {
      return absl::InvalidArgumentError(
          absl::StrCat("per-example gradient ", p, " does not match its parameter's shape"));
    }
  }
  absl::StatusOr<ClippedSum> clipped = ClipAndSum(per_example, options.clip_norm);
  if (!clipped.ok()) return clipped.status();
  try {
    clipped->diagnostics.noise_std =
        WriteNoisyMean(params, clipped->sum, clipped->diagnostics.batch_size, options, noise);
    return clipped->diagnostics;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("DP-SGD step: ", e.what_without_backtrace()));
  }
}

void LogClipDiagnostics(std::string_view critic, int64_t step, int log_every,
                        const ClipDiagnostics& clip) {
  if (log_every <= 0 || step % log_every != 0) return;
  spdlog::info(
      "dp step {}{}: per-example norm mean {:.3g} max {:.3g}, clipped {:.0f}%, noise std {:.3g}",
      step, critic.empty() ? "" : " (" + std::string(critic) + ")", clip.mean_norm, clip.max_norm,
      100 * clip.fraction_clipped, clip.noise_std);
}

double MeanGradientNoiseToClip(double noise_multiplier, int64_t parameters, int64_t batch_size) {
  if (parameters <= 0 || batch_size <= 0) return 0;
  return 2 * noise_multiplier * std::sqrt(static_cast<double>(parameters)) /
         static_cast<double>(batch_size);
}

absl::StatusOr<ClipDiagnostics> DpSgdStepFactored(const std::vector<torch::Tensor>& params,
                                                  const std::vector<FactoredGradient>& per_example,
                                                  const DpSgdOptions& options,
                                                  SecureRandom& noise) {
  if (absl::Status s = CheckParams(options.clip_norm, options.noise_multiplier); !s.ok()) return s;
  if (params.size() != per_example.size() || params.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(params.size(), " parameters but ",
                                                   per_example.size(), " per-example gradients"));
  }
  const int64_t b = per_example[0].left.empty() ? 0 : per_example[0].left[0].size(0);
  for (size_t p = 0; p < params.size(); ++p) {
    const FactoredGradient& g = per_example[p];
    const bool weight = !g.right.empty();
    bool ok = !g.left.empty() && params[p].dim() == (weight ? 2 : 1) &&
              (!weight || g.right.size() == g.left.size());
    for (size_t m = 0; ok && m < g.left.size(); ++m) {
      ok = g.left[m].dim() == 2 && g.left[m].size(0) == b &&
           g.left[m].size(1) == params[p].size(0) &&
           (!weight || (g.right[m].dim() == 2 && g.right[m].size(0) == b &&
                        g.right[m].size(1) == params[p].size(1)));
    }
    if (!ok || b < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("per-example gradient ", p, " does not match its parameter's shape"));
    }
  }
  const bool split = std::any_of(per_example.begin(), per_example.end(),
                                 [](const FactoredGradient& g) { return !g.synthetic.empty(); });
  for (size_t p = 0; split && p < per_example.size(); ++p) {
    const std::vector<bool>& flags = per_example[p].synthetic;
    const auto synthetic_terms = std::count(flags.begin(), flags.end(), true);
    if (flags.size() != per_example[p].left.size() || synthetic_terms == 0 ||
        synthetic_terms == static_cast<int64_t>(flags.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("per-example gradient ", p,
                       " must flag each term and have real-row and synthetic terms"));
    }
  }
  try {
    ClipDiagnostics diagnostics;
    std::vector<torch::Tensor> sums;
    if (!split) {
      const torch::Tensor factor =
          ClipFactors(FactoredSquaredNorms(per_example), options.clip_norm, &diagnostics);
      for (const FactoredGradient& g : per_example) sums.push_back(FactoredWeightedSum(g, factor));
    } else {
      // Each half is clipped to C on its own: only the real-row half can differ between
      // neighbouring batches, so it alone carries the 2C sensitivity the noise covers;
      // the synthetic half is clipped too so that the two keep comparable weights.
      const std::vector<FactoredGradient> real = SelectTerms(per_example, false);
      const std::vector<FactoredGradient> synthetic = SelectTerms(per_example, true);
      const torch::Tensor real_factor =
          ClipFactors(FactoredSquaredNorms(real), options.clip_norm, &diagnostics);
      const torch::Tensor synthetic_factor =
          ClipFactors(FactoredSquaredNorms(synthetic), options.clip_norm, /*diag=*/nullptr);
      for (size_t p = 0; p < per_example.size(); ++p) {
        sums.push_back(FactoredWeightedSum(real[p], real_factor)
                           .add_(FactoredWeightedSum(synthetic[p], synthetic_factor)));
      }
    }
    diagnostics.noise_std = WriteNoisyMean(params, sums, b, options, noise);
    return diagnostics;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("DP-SGD step: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<NoisyRows> ClipAndNoiseRows(const torch::Tensor& rows, double clip_norm,
                                           double noise_multiplier, SecureRandom& noise) {
  if (absl::Status s = CheckParams(clip_norm, noise_multiplier); !s.ok()) return s;
  if (!rows.defined() || rows.dim() != 2 || rows.size(0) < 1) {
    return absl::InvalidArgumentError("rows must be [B, d] with B >= 1");
  }
  try {
    torch::NoGradGuard no_grad;
    const torch::Tensor flat = CastCopy(rows.detach(), torch::kDouble);
    const torch::Tensor clean = torch::where(torch::isfinite(flat), flat, torch::zeros_like(flat));
    NoisyRows result;
    // A row with a non-finite entry is released as pure noise.
    const torch::Tensor factor = ClipFactors(flat.pow(2).sum(1), clip_norm, &result.diagnostics);
    torch::Tensor out = clean * factor.unsqueeze(1);
    const double stddev = noise_multiplier * 2.0 * clip_norm;
    if (stddev > 0) out = out + Noise(out.sizes(), stddev, noise, out.options());
    result.rows = CastCopy(out, rows.scalar_type());
    result.diagnostics.noise_std = stddev;
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("feature release: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
