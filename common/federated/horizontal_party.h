#ifndef VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_
#define VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/federated/batched_wae_updates.h"
#include "common/federated/wae_round.h"
#include "common/privacy/participation_ledger.h"
#include "common/privacy/sign_ds.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// dpfedavg's release of a round: each of a party's users drawn with probability
// sample_rate, each drawn user's update clipped to clip_norm, the party's sum noised at
// noise_multiplier · 2 · clip_norm (NoisedClippedSum).
struct DpFedAvgOptions {
  double sample_rate = 0;
  double clip_norm = 1;
  double noise_multiplier = 0;
};

// What a round of the horizontal mode asks of every party.
struct HorizontalRoundOptions {
  WaeOptions architecture;
  LocalUpdateOptions local;
  double top_k_ratio = 0.05;                 // signds: α = k/d
  double epsilon_per_round = 0;              // signds: ε_r of one user's answer
  std::optional<DpFedAvgOptions> dp_fedavg;  // set: mode dpfedavg, else signds
};

// A party of the horizontal mode: its users (one tensor of encoded rows each, with a key
// for the ledger) and the secret its answers' randomness derives from.
class HorizontalParty {
 public:
  // `secret` never leaves the party: which users answer a round (the curator never learns
  // who), their local training's batches and prior samples, SignDS's coins and dpfedavg's
  // noise are streams of (secret, purpose, round), a user's training and its SignDS coins
  // per user too. Drawn users' local updates train as one batch (LocalWaeUpdates). `ledger` (signds; null under dpfedavg, whose rounds the caller charges to its
  // privacy ledger) caps each user's answers.
  HorizontalParty(std::vector<torch::Tensor> users, std::vector<std::string> user_keys,
                  privacy::ParticipationLedger* ledger, std::string secret)
      : users_(std::move(users)),
        keys_(std::move(user_keys)),
        ledger_(ledger),
        secret_(std::move(secret)) {}

  // Round `round`'s answer to the broadcast model `global`: `count` users drawn uniformly
  // from those under their cap (fewer if fewer remain), each charged in the ledger before
  // its update is trained, then one SignDS report per user. The round is bound in the
  // ledger to its question (QuestionDigest) first: asked again (a restart, a reconnect,
  // a replay) with the same model and count it gets the same answer, as the users it drew
  // then count as under their cap for it and a user's training and coins are streams of
  // (secret, user, round); with another, FAILED_PRECONDITION before any user is drawn.
  absl::StatusOr<std::vector<SignDsReport>> Answer(int64_t round, const torch::Tensor& global,
                                                   int64_t count,
                                                   const HorizontalRoundOptions& options);

  // dpfedavg: round `round`'s release for `global`: every user drawn independently with
  // probability options.dp_fedavg->sample_rate, each drawn user's update trained as for
  // Answer, and the noised sum of the clipped updates (NoisedClippedSum). A round asked
  // again with the same model gets the same sum: the draws, the training and the noise
  // restart with the round. The caller charges the round before the sum leaves.
  absl::StatusOr<torch::Tensor> AnswerSum(int64_t round, const torch::Tensor& global,
                                          const HorizontalRoundOptions& options);
  // dpfedavg: the users round `round` draws, each independently with probability
  // `sample_rate` (one coin per user, in order, from a stream of the secret and the round).
  std::vector<int64_t> DrawnUsers(int64_t round, double sample_rate) const;

  int64_t users() const { return static_cast<int64_t>(users_.size()); }

 private:
  // The local updates' inputs of `users` in round `round`: their rows and each one's own
  // training stream.
  absl::StatusOr<BatchedUpdateInputs> InputsOf(const std::vector<int64_t>& users,
                                               uint64_t round) const;

  std::vector<torch::Tensor> users_;
  std::vector<std::string> keys_;
  privacy::ParticipationLedger* ledger_;
  const std::string secret_;
  // signds: the ledger's record of each user (by position), read once and kept in step
  // with the takes: a round's eligibility is then one pass over two arrays.
  std::vector<int64_t> last_round_;
  std::vector<int64_t> participations_;
};

// The digest a signds round is bound to: the broadcast model's float32 values and the
// users asked.
std::string QuestionDigest(const torch::Tensor& global, int64_t count);

// Users party `party` is asked for in `round`, of a run whose parties hold `populations`
// users: the round's n split in proportion to the populations, so that a user is as likely
// to be asked as any other whichever party holds it. Party k gets
// floor((n C_(k+1) + o) / U) - floor((n C_k + o) / U), C_k the users of the parties before k,
// U all users and o = round * n mod U: the shares sum to n in every round and, as o runs
// over [0, U), average n * populations[k] / U.
int64_t UsersAskedOf(int64_t users_per_round, const std::vector<int64_t>& populations, size_t party,
                     int64_t round);

// The horizontal mode's math in one process, the reference a distributed run equals: the
// model of `seed`, then per round every party's answer (SignDS reports, or under
// options.dp_fedavg its noised sum) and the curator's step (signds: ±γ/n per report;
// dpfedavg: FedAdam at learning rate γ on the average).
absl::StatusOr<torch::Tensor> TrainHorizontalReference(const HorizontalRoundOptions& options,
                                                       int64_t rounds, int64_t users_per_round,
                                                       double gamma, uint64_t seed,
                                                       std::vector<HorizontalParty*> parties);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_
