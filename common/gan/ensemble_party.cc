#include "common/gan/ensemble_party.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/dp/dp_sgd.h"
#include "common/dp/pate_vote.h"
#include "common/gan/model_factory.h"
#include "common/privacy/ensemble_accounting.h"
#include "common/random/random_tensors.h"

namespace vfsynth {
namespace {

ShardCritics::Options CriticOptions(const v1::TrainingConfig& training,
                                    const v1::ModelConfig& model,
                                    const v1::EnsembleConfig& ensemble, int width) {
  ShardCritics::Options options;
  options.shards = ensemble.shards();
  options.width = width;
  options.hidden = ensemble.shard_hidden();
  options.leaky_slope = model.experimental().leaky_slope();
  options.lr = training.lr_critic();
  options.beta1 = training.beta1();
  options.beta2 = training.beta2();
  return options;
}

// Which rows form which shard: secret to everyone but the party, fixed for the run.
std::vector<torch::Tensor> DrawShards(int64_t rows, int shards, const std::string& party_secret) {
  SecureRandom stream = SecureRandom::Derived(party_secret, "shards", 0);
  return AssignShards(rows, shards, stream);
}

ShardCritics DrawCritics(const ShardCritics::Options& options, const std::string& party_secret) {
  SecureRandom stream = SecureRandom::Derived(party_secret, "shard-init", 0);
  return ShardCritics(options, stream);
}

}  // namespace

EnsembleParty::EnsembleParty(const std::string& name, const v1::TrainingConfig& training,
                             const v1::ModelConfig& model, PartyPrivacy privacy,
                             const std::string& party_secret, torch::Tensor table, FeatureNet feat)
    : name_(name),
      training_(training),
      privacy_(std::move(privacy)),
      party_secret_(party_secret),
      table_(std::move(table)),
      feat_(std::move(feat)),
      shards_(DrawShards(table_.size(0), privacy_.ensemble.shards(), party_secret_)),
      critics_(DrawCritics(
          CriticOptions(training, model, privacy_.ensemble, static_cast<int>(table_.size(1))),
          party_secret_)) {
  feat_optimizer_ = MakeAdam(feat_->parameters(), training_.lr_critic(), training_);
  shard_batch_ = privacy_.ensemble.shard_batch();
  for (const torch::Tensor& shard : shards_) shard_batch_ = std::min(shard_batch_, shard.size(0));
}

absl::StatusOr<std::pair<torch::Tensor, torch::Tensor>> EnsembleParty::CriticFeatures(
    int64_t step, const torch::Tensor& real_batch, const torch::Tensor& fake_slice) {
  if (shard_batch_ < 1) {
    return absl::FailedPreconditionError(absl::StrCat(privacy_.ensemble.shards(), " shards of ",
                                                      table_.size(0), " rows leave a shard empty"));
  }
  // Shard critics train on their own rows only; nothing of this step leaves directly.
  SecureRandom stream =
      SecureRandom::Derived(party_secret_, "shard-batch", static_cast<uint64_t>(step));
  const int64_t e = critics_.shards();
  const torch::Tensor real =
      table_.index_select(0, SampleShardBatches(shards_, shard_batch_, stream).flatten())
          .view({e, shard_batch_, -1});
  const torch::Tensor fake =
      fake_slice.index_select(0, UniformIntegers(stream, 0, fake_slice.size(0), e * shard_batch_))
          .view({e, shard_batch_, -1});
  critics_.Step(real, fake, UniformTensor(stream, {e, shard_batch_, 1}, torch::kFloat32),
                training_.gp_lambda());

  // The shared critic's inputs: feat depends on synthetic data only, so each released
  // row has sensitivity 2·C_f; synthetic rows get the same noise so D_s cannot tell them apart by
  // it.
  torch::Tensor h_real;
  {
    torch::NoGradGuard no_grad;
    h_real = feat_->forward(real_batch);
  }
  pending_fake_features_ = feat_->forward(fake_slice);
  ASSIGN_OR_RETURN(NoisyRows released_real,
                   ClipAndNoiseRows(h_real, privacy_.feature_clip_norm, privacy_.noise_multiplier,
                                    privacy_.noise->real_features));
  ASSIGN_OR_RETURN(NoisyRows released_fake,
                   ClipAndNoiseRows(pending_fake_features_.detach(), privacy_.feature_clip_norm,
                                    privacy_.noise_multiplier, privacy_.noise->synthetic_features));
  return std::make_pair(released_real.rows, released_fake.rows);
}

absl::Status EnsembleParty::CriticUpdate(const torch::Tensor& grad_fake) {
  if (!pending_fake_features_.defined())
    return absl::FailedPreconditionError("no critic step is pending");
  // grad_real is never applied: it would train feat on real rows, which would then make
  // every later feature release depend on all of them.
  feat_optimizer_->zero_grad();
  (pending_fake_features_ * grad_fake).sum().backward();
  feat_optimizer_->step();
  pending_fake_features_ = torch::Tensor();
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> EnsembleParty::SanitisedSliceGradient(const torch::Tensor& slice) {
  const double b = static_cast<double>(slice.size(0));
  if (privacy_.mode == v1::PrivacyConfig::gswgan) {
    ASSIGN_OR_RETURN(const torch::Tensor grad, GswganGradient(slice));
    return grad / b;
  }
  if (privacy_.mode == v1::PrivacyConfig::pate) return PateGradient(slice) / b;
  return absl::InvalidArgumentError(
      absl::StrCat("'", v1::PrivacyConfig::Mode_Name(privacy_.mode), "' is not an ensemble mode"));
}

absl::StatusOr<torch::Tensor> EnsembleParty::GswganGradient(const torch::Tensor& slice) {
  // One shard critic per row, drawn uniformly and independently from a cryptographic
  // stream: the secret draw is what amplifies each row's release (q = 1/E).
  const torch::Tensor shard =
      UniformIntegers(privacy_.noise->shard_choice, 0, critics_.shards(), slice.size(0));
  const torch::Tensor grads = critics_.SelectedGeneratorLossGradients(slice, shard);
  ASSIGN_OR_RETURN(NoisyRows rows,
                   ClipAndNoiseRows(grads, privacy_.clip_norm, privacy_.noise_multiplier,
                                    privacy_.noise->slice_gradients));
  return rows.rows;
}

torch::Tensor EnsembleParty::PateGradient(const torch::Tensor& slice) {
  const v1::EnsembleConfig& vote = privacy_.ensemble;
  const torch::Tensor grads = critics_.GeneratorLossGradients(slice);  // [E, B, d]
  const double threshold = vote.vote_threshold() * critics_.shards();
  const double z = privacy_.noise_multiplier;
  if (vote.experimental().vote_aggregation() == v1::ExperimentalEnsembleConfig::gnmax) {
    // G-PATE: a data-independent random projection, a vote per projected coordinate.
    const int64_t p = vote.experimental().projection_dim();
    const torch::Tensor r =
        GaussianTensor(privacy_.noise->slice_gradients, {slice.size(1), p},
                       1.0 / std::sqrt(static_cast<double>(p)), torch::kFloat32);
    const torch::Tensor counts =
        BinVoteHistogram(grads.matmul(r), vote.vote_clip(), vote.experimental().gnmax_bins());
    const torch::Tensor winners =
        ConfidentGnmax(counts, threshold, /*sigma_threshold=*/z,
                       /*sigma_argmax=*/z * std::sqrt(2.0), privacy_.noise->slice_gradients);
    return BinMidpoints(winners, vote.vote_clip(), vote.experimental().gnmax_bins()).matmul(r.t()) /
           vote.vote_clip();
  }
  const torch::Tensor votes = TopKStochasticSignVotes(grads, vote.vote_top_k(), vote.vote_clip(),
                                                      privacy_.noise->slice_gradients);
  return NoisyThresholdVote(votes, threshold, z * privacy::VoteSumSensitivity(vote.vote_top_k()),
                            privacy_.noise->slice_gradients);
}

}  // namespace vfsynth
