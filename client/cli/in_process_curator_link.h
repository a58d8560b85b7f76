#ifndef VFSYNTH_CLIENT_CLI_IN_PROCESS_CURATOR_LINK_H_
#define VFSYNTH_CLIENT_CLI_IN_PROCESS_CURATOR_LINK_H_

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "client/core/curator_link.h"
#include "server/core/curator_core.h"

namespace vfsynth {

// A party's link to a CuratorCore in the same process, for the audit's shadow runs: the
// same calls and Train stream as over gRPC (the curator's ServeTrainStream on its own
// thread per stream), with the link itself as the party's authenticated identity.
class InProcessCuratorLink final : public CuratorLink {
 public:
  InProcessCuratorLink(CuratorCore* curator, std::string party)
      : curator_(curator), party_(std::move(party)) {}
  ~InProcessCuratorLink() override;

  absl::Status Connect(absl::Duration timeout) override;
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request,
                                                absl::Duration timeout) override;
  absl::StatusOr<v1::AlignResponse> Align(const v1::AlignRequest& request,
                                          absl::Duration timeout) override;
  absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const v1::AttestPlanRequest& request,
                                                    absl::Duration timeout) override;
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const v1::ShareLabelsRequest& request,
                                                      absl::Duration timeout) override;
  absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(const v1::LabelPairsRequest& request,
                                                           absl::Duration timeout) override;
  absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(const v1::MarginalsRequest& request,
                                                         absl::Duration timeout) override;
  absl::StatusOr<std::unique_ptr<TrainStream>> OpenTrain() override;
  void Cancel() override;

  class Connection;  // one Train stream's two directions

 private:
  // The party a call names, if it is this link's; PERMISSION_DENIED otherwise.
  absl::StatusOr<std::string> Authenticate(const std::string& claimed) const;
  // A unary call: cancelled, authenticated, then the curator's answer (named `what`).
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(const std::string& what, const Request& request,
                                absl::StatusOr<Response> (CuratorCore::*method)(const std::string&,
                                                                                const Request&));

  CuratorCore* curator_;
  const std::string party_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<Connection> active_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CLI_IN_PROCESS_CURATOR_LINK_H_
