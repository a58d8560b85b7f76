#ifndef VFSYNTH_COMMON_NN_WAE_H_
#define VFSYNTH_COMMON_NN_WAE_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/status/status.h"

namespace vfsynth {

// The Wasserstein autoencoder of the horizontal mode (WAE-MMD, Tolstikhin et al. 2018, as
// DP-FED-WAE uses it): encoder Linear(D, h) → ReLU → Linear(h, d_z), decoder Linear(d_z, h)
// → ReLU → Linear(h, D) giving logits over the encoded row's D columns.
struct WaeOptions {
  int64_t input_dim = 0;  // D, the width of an encoded row
  int64_t hidden = 64;
  int64_t latent = 16;
};

// The number of parameters of a Wae of `options`: the length of its FlatParameters.
int64_t WaeParameterCount(const WaeOptions& options);

class WaeImpl : public torch::nn::Module {
 public:
  explicit WaeImpl(const WaeOptions& options);
  torch::Tensor Encode(const torch::Tensor& x);
  torch::Tensor DecodeLogits(const torch::Tensor& z);
  int64_t latent() const { return options_.latent; }

 private:
  WaeOptions options_;
  torch::nn::Sequential encoder_{nullptr};
  torch::nn::Sequential decoder_{nullptr};
};
TORCH_MODULE(Wae);

// The unbiased estimate of MMD² between codes `q` and prior samples `p` (n × d_z and
// m × d_z) under the inverse multiquadratic kernel k(x, y) = κ / (κ + ||x − y||²); a side
// of one sample contributes no within term.
torch::Tensor ImqMmd(const torch::Tensor& q, const torch::Tensor& p, double kappa);
// ImqMmd for B independent pairs of samples at once: q is B × n × d_z, p is B × m × d_z;
// one estimate per pair (a tensor of B).
torch::Tensor BatchedImqMmd(const torch::Tensor& q, const torch::Tensor& p, double kappa);

// WAE loss on a batch of encoded rows `x` (values in [0, 1]): mean binary cross-entropy of
// the reconstruction + `lambda` · ImqMmd(codes, prior) with κ = 2·d_z (prior N(0, I)).
torch::Tensor WaeLoss(Wae& model, const torch::Tensor& x, const torch::Tensor& prior,
                      double lambda = 1.0);

// Every parameter of `module` as one vector, in registration order: the coordinates a
// SignDS index and a federated update refer to, the same at the curator and every party.
torch::Tensor FlatParameters(torch::nn::Module& module);
// Writes `flat` (as FlatParameters returns it) back into the parameters; INVALID_ARGUMENT,
// changing nothing, if it is not one vector of as many values as there are parameters.
absl::Status AssignFlatParameters(torch::nn::Module& module, const torch::Tensor& flat);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_WAE_H_
