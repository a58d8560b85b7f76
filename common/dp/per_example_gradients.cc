#include "common/dp/per_example_gradients.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/dp/fast_cast.h"
#include "common/nn/mlp_critic.h"

namespace vfsynth {
namespace {

absl::Status CheckShapes(const MlpCritic& critic, const CriticExamples& ex) {
  if (absl::Status status = CheckCriticBatch(critic, ex.real, ex.fake, ex.alpha); !status.ok())
    return status;
  const int64_t b = ex.real.size(0);
  const int64_t d_1 = StageOutputWidth(critic, 0);
  for (const torch::Tensor* g : {&ex.upstream_real, &ex.upstream_fake}) {
    if (g->defined() && (g->dim() != 2 || g->size(0) != b || g->size(1) != d_1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream feature gradients must be [B, ", d_1, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<torch::Tensor>> CriticParameters(
    const std::vector<CriticStage>& stages) {
  absl::StatusOr<MlpCritic> critic = ParseMlpCritic(stages);
  if (!critic.ok()) return critic.status();
  return critic->params;
}

absl::StatusOr<FactoredPerExampleGradients> CriticFactoredGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options) {
  absl::StatusOr<MlpCritic> critic = ParseMlpCritic(stages);
  if (!critic.ok()) return critic.status();
  if (absl::Status status = CheckShapes(*critic, examples); !status.ok()) return status;
  try {
    torch::NoGradGuard no_grad;  // explicit math below; nothing needs a graph
    const std::vector<MlpLayer>& layers = critic->layers;
    const size_t first_stage_end = critic->stage_ends.front();
    const int64_t b = examples.real.size(0);
    const torch::Tensor real = examples.real.detach();
    const torch::Tensor fake = examples.fake.detach();
    const torch::Tensor x_hat = examples.alpha * real + (1 - examples.alpha) * fake;

    // Forward over the rows [r; f; x̂]: each Linear's and each LeakyReLU's input.
    torch::Tensor output;
    const std::vector<torch::Tensor> inputs =
        LayerInputs(*critic, torch::cat({real, fake, x_hat}, 0), &output);
    const torch::Tensor first_stage_out =
        first_stage_end < layers.size() ? inputs[first_stage_end] : output;
    const torch::Tensor scores = output.squeeze(1);  // [3B]

    // First-order part of ℓ_i: D(f_i) - D(r_i) + <g_r, stage_1(r_i)> + <g_f, stage_1(f_i)>,
    // back-propagated over the rows [r; f]. delta[l] = ∂ℓ/∂(output of Linear l).
    const auto opts = real.options();
    torch::Tensor g = torch::cat({-torch::ones({b, 1}, opts), torch::ones({b, 1}, opts)}, 0);
    std::vector<torch::Tensor> delta(layers.size());
    for (size_t l = layers.size(); l-- > 0;) {
      if (l + 1 == first_stage_end) {
        torch::Tensor up_r = examples.upstream_real.defined() ? examples.upstream_real.detach()
                                                              : torch::zeros({b, g.size(1)}, opts);
        torch::Tensor up_f = examples.upstream_fake.defined() ? examples.upstream_fake.detach()
                                                              : torch::zeros({b, g.size(1)}, opts);
        g = g + torch::cat({up_r, up_f}, 0);
      }
      if (layers[l].linear == nullptr) {
        g = ThroughLeaky(g, inputs[l].narrow(0, 0, 2 * b), layers[l].slope);
      } else {
        delta[l] = g;
        g = g.mm(layers[l].linear->weight);
      }
    }

    // The penalty λ(‖grad_x D(x̂)‖ - 1)²: its gradient for W_l is u_l ⊗ ρ_l (mlp_critic.h).
    const std::vector<ChainLayer> chain = ChainAt(*critic, inputs, 2 * b, b);
    std::vector<torch::Tensor> u;
    const torch::Tensor v = ScoreInputGradient(chain, b, &u);
    torch::Tensor rho;
    const torch::Tensor penalty = PenaltyRows(v, examples.gp_lambda, &rho);
    const std::vector<torch::Tensor> rho_at = PenaltyWeightFactors(chain, rho);

    FactoredPerExampleGradients result;
    for (size_t l = 0; l < layers.size(); ++l) {
      if (layers[l].linear == nullptr) continue;
      const torch::Tensor d_r = delta[l].narrow(0, 0, b), d_f = delta[l].narrow(0, b, b);
      FactoredGradient weight;
      weight.left = {d_r, d_f, u[l]};
      weight.right = {inputs[l].narrow(0, 0, b), inputs[l].narrow(0, b, b), rho_at[l]};
      // δ(f_i) ⊗ a(f_i) is the fake row's term; the penalty's is at x̂_i, which mixes in r_i.
      if (examples.fake_terms_public) weight.synthetic = {false, true, false};
      result.grads.push_back(std::move(weight));
      if (layers[l].linear->options.bias()) {
        FactoredGradient bias{{d_r, d_f}, {}, {}};
        if (examples.fake_terms_public) bias.synthetic = {false, true};
        result.grads.push_back(std::move(bias));
      }
    }
    torch::Tensor loss =
        scores.narrow(0, b, b) - scores.narrow(0, 0, b) + examples.gp_lambda * penalty;
    if (examples.upstream_real.defined()) {
      loss = loss + (first_stage_out.narrow(0, 0, b) * examples.upstream_real.detach()).sum(1);
    }
    if (examples.upstream_fake.defined()) {
      loss = loss + (first_stage_out.narrow(0, b, b) * examples.upstream_fake.detach()).sum(1);
    }
    result.loss = loss;
    if (options.input_gradients) {
      // The penalty's input gradient vanishes (piecewise-constant derivatives again).
      result.input_grad_real = g.narrow(0, 0, b);
      result.input_grad_fake = g.narrow(0, b, b);
    }
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("per-example gradients: ", e.what_without_backtrace()));
  }
}

std::vector<FactoredGradient> SelectTerms(const std::vector<FactoredGradient>& gradients,
                                          bool synthetic) {
  std::vector<FactoredGradient> selected;
  for (const FactoredGradient& g : gradients) {
    FactoredGradient kept;
    for (size_t m = 0; m < g.left.size(); ++m) {
      if ((m < g.synthetic.size() && g.synthetic[m]) != synthetic) continue;
      kept.left.push_back(g.left[m]);
      if (!g.right.empty()) kept.right.push_back(g.right[m]);
    }
    selected.push_back(std::move(kept));
  }
  return selected;
}

torch::Tensor Materialize(const FactoredGradient& gradient) {
  torch::NoGradGuard no_grad;
  if (gradient.right.empty()) {
    torch::Tensor sum = gradient.left[0];
    for (size_t m = 1; m < gradient.left.size(); ++m) sum = sum + gradient.left[m];
    return sum;
  }
  // [B, out, M] x [B, M, in]: all outer products of an example in one bmm.
  return torch::bmm(torch::stack(gradient.left, 2), torch::stack(gradient.right, 1));
}

torch::Tensor FactoredSquaredNorms(const std::vector<FactoredGradient>& gradients) {
  torch::NoGradGuard no_grad;
  torch::Tensor sq;
  for (const FactoredGradient& g : gradients) {
    torch::Tensor s;
    if (g.right.empty()) {
      s = CastCopy(Materialize(g), torch::kDouble).pow(2).sum(1);
    } else {
      // ‖Σ_m l_m r_mᵀ‖² = Σ_{m,n} (l_m·l_n)(r_m·r_n), in double (the clip bound must not
      // depend on float rounding).
      std::vector<torch::Tensor> l, r;
      for (const auto& t : g.left) l.push_back(CastCopy(t, torch::kDouble));
      for (const auto& t : g.right) r.push_back(CastCopy(t, torch::kDouble));
      for (size_t m = 0; m < l.size(); ++m) {
        for (size_t n = m; n < l.size(); ++n) {
          const torch::Tensor term = (l[m] * l[n]).sum(1) * (r[m] * r[n]).sum(1);
          const torch::Tensor weighted = m == n ? term : 2 * term;
          s = s.defined() ? s + weighted : weighted;
        }
      }
    }
    sq = sq.defined() ? sq + s : s;
  }
  return sq;
}

torch::Tensor FactoredWeightedSum(const FactoredGradient& gradient, const torch::Tensor& weights) {
  torch::NoGradGuard no_grad;
  const torch::Tensor w = weights.to(gradient.left[0].scalar_type()).unsqueeze(1);
  // Rows of zero weight are dropped outright (0 * inf would be NaN); usually there are none.
  const torch::Tensor keep = (weights != 0).unsqueeze(1);
  const bool all_kept = keep.all().item<bool>();
  auto clean = [&](const torch::Tensor& t) {
    return all_kept ? t : torch::where(keep, t, torch::zeros_like(t));
  };
  torch::Tensor sum;
  for (size_t m = 0; m < gradient.left.size(); ++m) {
    const torch::Tensor left = clean(gradient.left[m]) * w;
    if (gradient.right.empty()) {
      sum = sum.defined() ? sum.add_(left.sum(0)) : left.sum(0);
    } else {
      const torch::Tensor right = clean(gradient.right[m]);
      sum = sum.defined() ? sum.addmm_(left.t(), right) : left.t().mm(right);
    }
  }
  return sum;
}

absl::StatusOr<PerExampleGradients> CriticPerExampleGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options) {
  absl::StatusOr<FactoredPerExampleGradients> factored =
      CriticFactoredGradients(stages, examples, options);
  if (!factored.ok()) return factored.status();
  try {
    PerExampleGradients result;
    for (const FactoredGradient& g : factored->grads) result.grads.push_back(Materialize(g));
    result.loss = factored->loss;
    result.input_grad_real = factored->input_grad_real;
    result.input_grad_fake = factored->input_grad_fake;
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("per-example gradients: ", e.what_without_backtrace()));
  }
}

torch::Tensor FlattenPerExample(const std::vector<torch::Tensor>& per_example) {
  std::vector<torch::Tensor> flat;
  flat.reserve(per_example.size());
  for (const auto& g : per_example) flat.push_back(g.reshape({g.size(0), -1}));
  return torch::cat(flat, 1);
}

torch::Tensor PerExampleNorms(const std::vector<torch::Tensor>& per_example) {
  torch::Tensor sq;
  for (const auto& g : per_example) {
    const torch::Tensor s = g.reshape({g.size(0), -1}).to(torch::kDouble).pow(2).sum(1);
    sq = sq.defined() ? sq + s : s;
  }
  return sq.sqrt();
}

}  // namespace vfsynth
