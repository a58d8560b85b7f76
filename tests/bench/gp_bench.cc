// vfsynth-gp-bench: the WGAN-GP penalty plus its backward pass, autograd's double
// backward (GradientPenalty) vs the analytic MlpGradientPenalty, on the critics the
// project trains. One thread; prints the median milliseconds of each and their ratio.
// A measurement, not a test: timings depend on the machine and its load.
//
// Usage: vfsynth-gp-bench [iterations, default 300]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/nn/mlp_gradient_penalty.h"
#include "common/nn/networks.h"
#include "common/nn/wgan.h"

namespace vfsynth {
namespace {

constexpr double kSlope = 0.2;

struct Case {
  std::string name;
  std::vector<CriticStage> stages;
  CriticFn critic;
  int64_t width;
  int64_t batch;
};

Case FeatAndHead(const std::string& name, int d_k, std::vector<int> hidden, int d_h,
                 int64_t batch) {
  v1::ModelConfig config;
  for (int h : hidden) config.add_feature_hidden(h);
  config.set_feature_dim(d_h);
  config.mutable_experimental()->set_leaky_slope(kSlope);
  FeatureNet feat(d_k, config);
  ScoreNet head(d_h, std::vector<int>{}, kSlope);
  return {name,
          {feat.ptr(), head.ptr()},
          [feat, head](const torch::Tensor& x) mutable { return head->forward(feat->forward(x)); },
          d_k,
          batch};
}

Case Shared(const std::string& name, int width, std::vector<int> hidden, int64_t batch) {
  ScoreNet net(width, hidden, kSlope);
  return {name,
          {net.ptr()},
          [net](const torch::Tensor& x) mutable { return net->forward(x); },
          width,
          batch};
}

// Median wall time (ms) of `run` over `iterations` calls, after a warm-up.
double MedianMs(const std::function<void()>& run, int iterations) {
  for (int i = 0; i < 20; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

int Run(int iterations) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  std::vector<Case> cases;
  cases.push_back(FeatAndHead("feat 53-256-128 + head 128-1, B=64", 53, {256}, 128, 64));
  cases.push_back(Shared("D_s 256-128-1, B=64", 256, {128}, 64));
  cases.push_back(FeatAndHead("feat 53-128 + head 128-1, B=256", 53, {}, 128, 256));
  cases.push_back(Shared("D_s 384-256-256-1, B=256", 384, {256, 256}, 256));

  std::printf(
      "| critic | autograd GP+backward (ms) | analytic (ms) | speed-up |\n|---|---|---|---|\n");
  for (const Case& c : cases) {
    const torch::Tensor real = torch::randn({c.batch, c.width});
    const torch::Tensor fake = torch::randn({c.batch, c.width});
    const torch::Tensor alpha = torch::rand({c.batch, 1});
    std::vector<torch::Tensor> params;
    for (const CriticStage& stage : c.stages) {
      for (const torch::Tensor& p : stage->parameters()) params.push_back(p);
    }
    auto clear = [&] {
      for (torch::Tensor& p : params) p.mutable_grad().reset();
    };
    // The two must agree before their times mean anything.
    const double old_value = GradientPenalty(c.critic, real, fake, alpha).item<double>();
    const absl::StatusOr<torch::Tensor> new_value = MlpGradientPenalty(c.stages, real, fake, alpha);
    if (!new_value.ok() ||
        std::abs(new_value->item<double>() - old_value) > 1e-4 * (1 + old_value)) {
      std::fprintf(stderr, "%s: penalties differ or failed\n", c.name.c_str());
      return 1;
    }
    const double autograd_ms = MedianMs(
        [&] {
          clear();
          GradientPenalty(c.critic, real, fake, alpha).backward();
        },
        iterations);
    const double analytic_ms = MedianMs(
        [&] {
          clear();
          (*MlpGradientPenalty(c.stages, real, fake, alpha)).backward();
        },
        iterations);
    std::printf("| %s | %.3f | %.3f | %.2fx |\n", c.name.c_str(), autograd_ms, analytic_ms,
                autograd_ms / analytic_ms);
  }
  return 0;
}

}  // namespace
}  // namespace vfsynth

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 300;
  if (iterations < 1) {
    std::fprintf(stderr, "usage: %s [iterations >= 1]\n", argv[0]);
    return 2;
  }
  return vfsynth::Run(iterations);
}
