// The curator's Prometheus text: every family typed once, labels escaped, counters exact.
#include "server/core/metrics_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::StatusResponse MakeStatus() {
  v1::StatusResponse status;
  status.set_run_id("run-7");
  status.set_state(v1::training);
  status.set_round(12);
  status.set_total_rounds(60);
  status.set_rounds_per_second(0.25);
  status.set_epsilon_spent(3.5);
  status.set_epsilon_planned(10);
  status.set_delta(1e-5);
  v1::ObserverGuarantee* published = status.add_guarantees();
  published->set_observer("published");
  published->set_epsilon_planned(10);
  published->set_epsilon_spent(3.5);
  v1::ObserverGuarantee* parties = status.add_guarantees();
  parties->set_observer("other_party");
  parties->set_not_dp("dpsgd sends un-noised features");
  status.set_critic_loss(-0.75);
  status.set_generator_loss(0.5);
  v1::PartyStatus* a = status.add_parties();
  a->set_name("hospital");
  a->set_connected(true);
  a->set_bytes_sent(123456789012);
  a->set_bytes_received(987654321);
  a->set_epsilon_spent(1.25);
  a->set_seconds_since_last_message(0.5);
  v1::PartyStatus* b = status.add_parties();
  b->set_name("in\"sur\\er\n");
  b->set_connected(false);
  b->set_seconds_since_last_message(-1);
  return status;
}

TEST(MetricsTextTest, ReportsProgressPrivacyAndParties) {
  const std::string text = FormatPrometheusMetrics(MakeStatus());
  EXPECT_THAT(text, HasSubstr("\nvfsynth_round 12\n"));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_rounds_total 60\n"));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_rounds_per_second 0.25\n"));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_epsilon_spent{observer=\"published\"} 3.5\n"));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_epsilon_planned{observer=\"published\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_differentially_private{observer=\"published\"} 1\n"));
  // No number where the run is not DP against the observer.
  EXPECT_THAT(text, HasSubstr("\nvfsynth_differentially_private{observer=\"other_party\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("vfsynth_epsilon_spent{observer=\"other_party\"}")));
  EXPECT_THAT(text, HasSubstr("\nvfsynth_delta 1e-05\n"));
  EXPECT_THAT(text, HasSubstr("vfsynth_run_info{run_id=\"run-7\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vfsynth_run_state{state=\"training\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vfsynth_run_state{state=\"failed\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vfsynth_party_connected{party=\"hospital\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vfsynth_party_epsilon_spent{party=\"hospital\"} 1.25\n"));
  EXPECT_THAT(text, Not(HasSubstr("vfsynth_party_epsilon_spent{party=\"in")));
  EXPECT_THAT(text,
              HasSubstr("vfsynth_party_seconds_since_last_message{party=\"hospital\"} 0.5\n"));
  // Byte counters are exact integers, not rounded to 6 digits.
  EXPECT_THAT(text, HasSubstr("vfsynth_party_sent_bytes_total{party=\"hospital\"} 123456789012\n"));
  EXPECT_THAT(text,
              HasSubstr("vfsynth_party_received_bytes_total{party=\"hospital\"} 987654321\n"));
}

// Losses are shown only when the curator publishes them (modes where D_s sees released
// features alone); otherwise their families are absent, not a misleading 0.
TEST(MetricsTextTest, ShowsLossesOnlyWhenPublished) {
  v1::StatusResponse status = MakeStatus();
  EXPECT_THAT(FormatPrometheusMetrics(status), HasSubstr("\nvfsynth_critic_loss -0.75\n"));
  status.clear_critic_loss();
  status.clear_generator_loss();
  const std::string text = FormatPrometheusMetrics(status);
  EXPECT_THAT(text, Not(HasSubstr("vfsynth_critic_loss")));
  EXPECT_THAT(text, Not(HasSubstr("vfsynth_generator_loss")));
}

TEST(MetricsTextTest, EscapesLabelValues) {
  const std::string text = FormatPrometheusMetrics(MakeStatus());
  EXPECT_THAT(text, HasSubstr("vfsynth_party_connected{party=\"in\\\"sur\\\\er\\n\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("sur\\er\n\"")));
}

TEST(MetricsTextTest, EveryFamilyHasOneHelpAndTypeBeforeItsSamples) {
  const std::string text = FormatPrometheusMetrics(MakeStatus());
  std::set<std::string> typed;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# TYPE ")) {
      const std::vector<std::string> words = absl::StrSplit(line, ' ');
      ASSERT_EQ(words.size(), 4u) << line;
      EXPECT_TRUE(typed.insert(words[2]).second) << "family typed twice: " << words[2];
      EXPECT_THAT(words[3], ::testing::AnyOf("gauge", "counter"));
      continue;
    }
    if (absl::StartsWith(line, "# HELP ")) continue;
    const std::string name(line.substr(0, line.find_first_of("{ ")));
    EXPECT_EQ(typed.count(name), 1u) << "sample before its TYPE line: " << line;
  }
  EXPECT_GE(typed.size(), 15u);
}

}  // namespace
}  // namespace vfsynth
