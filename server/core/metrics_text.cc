#include "server/core/metrics_text.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace vfsynth {
namespace {

// Label values escape backslash, double quote and newline (exposition format).
std::string EscapeLabel(absl::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Counters (bytes) must stay exact; StrCat's 6 significant digits would round them.
  if (value == std::trunc(value) && std::fabs(value) < 9.007199254740992e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrFormat("%.9g", value);
}

// Appends one metric family: HELP and TYPE lines, then its samples.
class Family {
 public:
  Family(std::string* out, absl::string_view name, absl::string_view type, absl::string_view help)
      : out_(out), name_(name) {
    absl::StrAppend(out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  Family& Sample(double value) {
    absl::StrAppend(out_, name_, " ", FormatValue(value), "\n");
    return *this;
  }
  Family& Sample(absl::string_view label, absl::string_view label_value, double value) {
    absl::StrAppend(out_, name_, "{", label, "=\"", EscapeLabel(label_value), "\"} ",
                    FormatValue(value), "\n");
    return *this;
  }

 private:
  std::string* out_;
  absl::string_view name_;
};

// One family with a sample per party, labelled party="<name>".
void PartyFamily(std::string* out, const v1::StatusResponse& status, absl::string_view name,
                 absl::string_view type, absl::string_view help,
                 const std::function<double(const v1::PartyStatus&)>& value) {
  Family family(out, name, type, help);
  for (const v1::PartyStatus& party : status.parties())
    family.Sample("party", party.name(), value(party));
}

}  // namespace

std::string FormatPrometheusMetrics(const v1::StatusResponse& status) {
  std::string out;
  Family(&out, "vfsynth_run_info", "gauge", "The run (value 1); labels name it.")
      .Sample("run_id", status.run_id(), 1);
  {
    Family state(&out, "vfsynth_run_state", "gauge", "1 for the run's current state, else 0.");
    const google::protobuf::EnumDescriptor* phases = v1::RunPhase_descriptor();
    for (int i = 0; i < phases->value_count(); ++i) {
      const google::protobuf::EnumValueDescriptor* phase = phases->value(i);
      if (phase->number() == v1::unspecified) continue;
      state.Sample("state", phase->name(), status.state() == phase->number() ? 1 : 0);
    }
  }
  Family(&out, "vfsynth_round", "gauge", "Generator rounds completed.").Sample(status.round());
  Family(&out, "vfsynth_rounds_total", "gauge", "Generator rounds the run will train.")
      .Sample(status.total_rounds());
  Family(&out, "vfsynth_rounds_per_second", "gauge", "Training speed since the run (re)started.")
      .Sample(status.rounds_per_second());
  Family(&out, "vfsynth_eta_seconds", "gauge", "Estimated seconds until training ends.")
      .Sample(status.eta_seconds());
  Family(&out, "vfsynth_aligned_records", "gauge", "Records in the parties' intersection.")
      .Sample(status.aligned_records());
  if (status.has_critic_loss()) {
    Family(&out, "vfsynth_critic_loss", "gauge",
           "Shared critic loss of the last critic step (released features only).")
        .Sample(status.critic_loss());
  }
  if (status.has_generator_loss()) {
    Family(&out, "vfsynth_generator_loss", "gauge", "Generator loss of the last generator step.")
        .Sample(status.generator_loss());
  }
  // Only observers against whom the run is DP get a sample: no number where it is not.
  {
    Family spent(
        &out, "vfsynth_epsilon_spent", "gauge",
        "Epsilon of the rounds done against each observer where the run is DP, at vfsynth_delta.");
    for (const v1::ObserverGuarantee& g : status.guarantees()) {
      if (g.has_epsilon_spent()) spent.Sample("observer", g.observer(), g.epsilon_spent());
    }
  }
  {
    Family planned(&out, "vfsynth_epsilon_planned", "gauge",
                   "Epsilon of the whole run against each observer where the run is DP.");
    for (const v1::ObserverGuarantee& g : status.guarantees()) {
      if (g.has_epsilon_planned()) planned.Sample("observer", g.observer(), g.epsilon_planned());
    }
  }
  {
    Family dp(&out, "vfsynth_differentially_private", "gauge",
              "1 if the run is differentially private against the observer, else 0.");
    for (const v1::ObserverGuarantee& g : status.guarantees()) {
      dp.Sample("observer", g.observer(), g.has_epsilon_planned() ? 1 : 0);
    }
  }
  Family(&out, "vfsynth_delta", "gauge", "The run's delta.").Sample(status.delta());

  PartyFamily(&out, status, "vfsynth_party_connected", "gauge",
              "1 if the party's Train stream is open.",
              [](const v1::PartyStatus& p) { return p.connected() ? 1.0 : 0.0; });
  PartyFamily(&out, status, "vfsynth_party_seconds_since_last_message", "gauge",
              "Seconds since the party's last Train message (-1: none yet).",
              [](const v1::PartyStatus& p) { return p.seconds_since_last_message(); });
  {
    Family own(
        &out, "vfsynth_party_epsilon_spent", "gauge",
        "Epsilon of the party's own releases so far, at vfsynth_delta (where the run is DP).");
    for (const v1::PartyStatus& party : status.parties()) {
      if (party.has_epsilon_spent()) own.Sample("party", party.name(), party.epsilon_spent());
    }
  }
  PartyFamily(&out, status, "vfsynth_party_sent_bytes_total", "counter",
              "Train stream bytes sent to the party.",
              [](const v1::PartyStatus& p) { return static_cast<double>(p.bytes_sent()); });
  PartyFamily(&out, status, "vfsynth_party_received_bytes_total", "counter",
              "Train stream bytes received from the party.",
              [](const v1::PartyStatus& p) { return static_cast<double>(p.bytes_received()); });
  return out;
}

}  // namespace vfsynth
