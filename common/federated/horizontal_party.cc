#include "common/federated/horizontal_party.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/federated/batched_wae_updates.h"
#include "common/federated/dp_fedavg.h"
#include "common/random/random_tensors.h"

namespace vfsynth {

absl::StatusOr<std::vector<SignDsReport>> HorizontalParty::Answer(
    int64_t round, const torch::Tensor& global, int64_t count,
    const HorizontalRoundOptions& options) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("asked for ", count, " users"));
  if (round < 0) return absl::InvalidArgumentError(absl::StrCat("round must be >= 0, got ", round));
  if (ledger_ == nullptr)
    return absl::FailedPreconditionError("SignDS answers need a participation ledger");
  // Bound before any user is drawn: the round's coins are fixed, so a second model
  // answered with them would reveal the users' values.
  RETURN_IF_ERROR(ledger_->BindRound(round, QuestionDigest(global, count)));
  if (last_round_.empty()) {
    for (const std::string& key : keys_) {
      last_round_.push_back(ledger_->last_round(key));
      participations_.push_back(ledger_->participations(key));
    }
  }
  const int64_t cap = ledger_->config().cap;
  std::vector<int64_t> eligible;
  for (int64_t u = 0; u < users(); ++u) {
    // Rounds run forwards: a user whose latest answer is to a later round sits out a
    // round asked again after a curator went back to its checkpoint.
    const int64_t last = last_round_[u];
    if (last == round || (last < round && participations_[u] < cap)) eligible.push_back(u);
  }
  const uint64_t counter = static_cast<uint64_t>(round);
  SecureRandom selection = SecureRandom::Derived(secret_, "horizontal-selection", counter);
  const int64_t held = static_cast<int64_t>(eligible.size());
  const torch::Tensor drawn = SampleWithoutReplacement(held, std::min(count, held), selection);
  std::vector<int64_t> users;
  std::vector<std::string> keys;
  for (int64_t i = 0; i < drawn.numel(); ++i) {
    users.push_back(eligible[drawn[i].item<int64_t>()]);
    keys.push_back(keys_[users.back()]);
  }
  RETURN_IF_ERROR(ledger_->TakeAll(round, keys));
  for (const int64_t user : users) {
    if (last_round_[user] != round) ++participations_[user];
    last_round_[user] = round;
  }
  const int64_t d = global.numel();
  const int64_t k = SignDsTopK(d, options.top_k_ratio);
  std::vector<SignDsReport> reports(users.size());
  ASSIGN_OR_RETURN(BatchedUpdateInputs inputs, InputsOf(users, counter));
  RETURN_IF_ERROR(LocalWaeUpdates(
      options.architecture, global, inputs, options.local, UsersPerBatch(d),
      [&](absl::Span<const int64_t> batch, const torch::Tensor& updates) -> absl::Status {
        for (size_t i = 0; i < batch.size(); ++i) {
          const int64_t position = batch[i];
          // The user's own coins: its answer to the round is one value, whichever others
          // a re-asked round draws with it.
          SecureRandom coins = SecureRandom::Derived(
              secret_, absl::StrCat("horizontal-signds/", keys[position]), counter);
          const torch::Tensor values = updates[static_cast<int64_t>(i)].contiguous();
          ASSIGN_OR_RETURN(reports[position],
                           SignDs(absl::MakeConstSpan(values.data_ptr<float>(), d), k,
                                  options.epsilon_per_round, coins));
        }
        return absl::OkStatus();
      }));
  return reports;
}

absl::StatusOr<torch::Tensor> HorizontalParty::AnswerSum(int64_t round, const torch::Tensor& global,
                                                         const HorizontalRoundOptions& options) {
  if (round < 0) return absl::InvalidArgumentError(absl::StrCat("round must be >= 0, got ", round));
  if (!options.dp_fedavg.has_value())
    return absl::InvalidArgumentError("a dpfedavg answer needs its options");
  const DpFedAvgOptions& dp = *options.dp_fedavg;
  if (!(dp.sample_rate > 0 && dp.sample_rate <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sample rate must be in (0, 1], got ", dp.sample_rate));
  }
  const uint64_t counter = static_cast<uint64_t>(round);
  const int64_t d = global.numel();
  ClippedSumAccumulator sum(d, dp.clip_norm);
  ASSIGN_OR_RETURN(BatchedUpdateInputs inputs, InputsOf(DrawnUsers(round, dp.sample_rate), counter));
  RETURN_IF_ERROR(LocalWaeUpdates(
      options.architecture, global, inputs, options.local, UsersPerBatch(d),
      [&](absl::Span<const int64_t>, const torch::Tensor& updates) { return sum.Add(updates); }));
  SecureRandom noise = SecureRandom::Derived(secret_, "horizontal-noise", counter);
  return sum.Noised(dp.noise_multiplier, noise);
}

absl::StatusOr<BatchedUpdateInputs> HorizontalParty::InputsOf(const std::vector<int64_t>& users,
                                                              uint64_t round) const {
  BatchedUpdateInputs inputs;
  for (const int64_t user : users) {
    if (user < 0 || user >= this->users())
      return absl::InternalError(absl::StrCat("no user ", user, " of ", this->users()));
    inputs.rows.push_back(&users_[user]);
    // Streams of the user and the round: its update is one value, whichever users train
    // beside it.
    inputs.generators.push_back(at::make_generator<at::CPUGeneratorImpl>(
        SecureRandom::Derived(secret_, absl::StrCat("horizontal-training/", keys_[user]), round)
            .NextUint64()));
  }
  return inputs;
}

std::vector<int64_t> HorizontalParty::DrawnUsers(int64_t round, double sample_rate) const {
  SecureRandom coins =
      SecureRandom::Derived(secret_, "horizontal-poisson", static_cast<uint64_t>(round));
  std::vector<int64_t> drawn;
  for (int64_t u = 0; u < users(); ++u) {
    if (coins.Uniform() < sample_rate) drawn.push_back(u);
  }
  return drawn;
}

std::string QuestionDigest(const torch::Tensor& global, int64_t count) {
  const torch::Tensor model = global.to(torch::kFloat32).contiguous();
  return Sha256Builder()
      .Add(absl::string_view(static_cast<const char*>(model.data_ptr()),
                             static_cast<size_t>(model.numel()) * sizeof(float)))
      .Add(absl::StrCat(count))
      .Hex();
}

int64_t UsersAskedOf(int64_t users_per_round, const std::vector<int64_t>& populations, size_t party,
                     int64_t round) {
  int64_t all = 0;
  int64_t before = 0;  // users of the parties before `party`
  for (size_t k = 0; k < populations.size(); ++k) {
    if (k < party) before += populations[k];
    all += populations[k];
  }
  if (all <= 0 || party >= populations.size()) return 0;
  const int64_t offset = (round % all) * (users_per_round % all) % all;
  auto below = [&](int64_t users) { return (users_per_round * users + offset) / all; };
  return below(before + populations[party]) - below(before);
}

absl::StatusOr<torch::Tensor> TrainHorizontalReference(const HorizontalRoundOptions& options,
                                                       int64_t rounds, int64_t users_per_round,
                                                       double gamma, uint64_t seed,
                                                       std::vector<HorizontalParty*> parties) {
  if (parties.empty())
    return absl::InvalidArgumentError("a horizontal run needs at least one party");
  torch::manual_seed(seed);
  Wae model(options.architecture);
  torch::Tensor flat = FlatParameters(*model);
  std::vector<int64_t> populations;
  for (const HorizontalParty* party : parties) populations.push_back(party->users());
  FedAdam fed_adam(flat.numel(), gamma);
  for (int64_t round = 0; round < rounds; ++round) {
    if (options.dp_fedavg.has_value()) {
      std::vector<torch::Tensor> sums;
      for (HorizontalParty* party : parties) {
        ASSIGN_OR_RETURN(torch::Tensor sum, party->AnswerSum(round, flat, options));
        sums.push_back(std::move(sum));
      }
      ASSIGN_OR_RETURN(const torch::Tensor average, FedAvgAverage(sums, users_per_round));
      fed_adam.Step(average, flat);
      continue;
    }
    std::vector<SignDsReport> reports;
    for (size_t p = 0; p < parties.size(); ++p) {
      ASSIGN_OR_RETURN(
          std::vector<SignDsReport> answer,
          parties[p]->Answer(round, flat, UsersAskedOf(users_per_round, populations, p, round),
                             options));
      reports.insert(reports.end(), answer.begin(), answer.end());
    }
    RETURN_IF_ERROR(ApplySignDsReports(reports, gamma, flat));
  }
  return flat;
}

}  // namespace vfsynth
