#ifndef VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_
#define VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/federated/wae_round.h"
#include "common/privacy/participation_ledger.h"
#include "common/privacy/secure_random.h"
#include "common/privacy/sign_ds.h"

namespace vfsynth {

// What a round of the horizontal mode asks of every party.
struct HorizontalRoundOptions {
  WaeOptions architecture;
  LocalUpdateOptions local;
  double top_k_ratio = 0.05;     // α = k/d
  double epsilon_per_round = 0;  // ε_r of one user's answer
};

// A party of the horizontal mode: its users (one tensor of encoded rows each, with a key
// for the ledger) and the secret its answers' randomness derives from.
class HorizontalParty {
 public:
  // `secret` never leaves the party: which users answer a round (the curator never learns
  // who), their local training's batches and prior samples, and SignDS's coins are streams
  // of (secret, purpose, round).
  HorizontalParty(std::vector<torch::Tensor> users, std::vector<std::string> user_keys,
                  privacy::ParticipationLedger* ledger, std::string secret)
      : users_(std::move(users)), keys_(std::move(user_keys)), ledger_(ledger), secret_(std::move(secret)) {}

  // Round `round`'s answer to the broadcast model `global`: `count` users drawn uniformly
  // from those under their cap (fewer if fewer remain), each charged in the ledger before
  // its update is trained, then one SignDS report per user. A round asked again (after a
  // restart or a reconnect) with the same model gets the same answer: the users it drew
  // then count as under their cap for it, and every stream restarts with the round.
  absl::StatusOr<std::vector<SignDsReport>> Answer(int64_t round, const torch::Tensor& global, int64_t count,
                                                   const HorizontalRoundOptions& options);

  int64_t users() const { return static_cast<int64_t>(users_.size()); }

 private:
  std::vector<torch::Tensor> users_;
  std::vector<std::string> keys_;
  privacy::ParticipationLedger* ledger_;
  const std::string secret_;
};

// Users party `party` is asked for in `round`, of a run whose parties hold `populations`
// users: the round's n split in proportion to the populations, so that a user is as likely
// to be asked as any other whichever party holds it. Party k gets
// floor((n C_(k+1) + o) / U) - floor((n C_k + o) / U), C_k the users of the parties before k,
// U all users and o = round * n mod U: the shares sum to n in every round and, as o runs
// over [0, U), average n * populations[k] / U.
int64_t UsersAskedOf(int64_t users_per_round, const std::vector<int64_t>& populations, size_t party, int64_t round);

// The horizontal mode's math in one process, the reference a distributed run equals: the
// model of `seed`, then per round every party's answer and the curator's step (γ).
absl::StatusOr<torch::Tensor> TrainHorizontalReference(const HorizontalRoundOptions& options, int64_t rounds,
                                                       int64_t users_per_round, double gamma, uint64_t seed,
                                                       std::vector<HorizontalParty*> parties);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_HORIZONTAL_PARTY_H_
