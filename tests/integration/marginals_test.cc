// The measured-marginals mode over loopback mTLS: three parties measure the plan's
// histograms (their own, and each pair's cross histograms by packed Paillier through
// lists the curator relays sealed), the curator fits G to them and publishes. Noise off,
// the release equals the plaintext counts; what the curator relays opens only with the
// parties' key; a forged, replayed or second list is refused; the ledger is charged
// before anything noisy leaves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/core/marginals_party_core.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/data/csv.h"
#include "common/data/split.h"
#include "common/marginals/central_measurement.h"
#include "common/marginals/party_measurement.h"
#include "common/secure/packed_counts.h"
#include "common/secure/authenticated_list.h"
#include "common/secure/paillier.h"
#include "common/secure/signed_list.h"
#include "server/core/measured_marginals.h"
#include "client/core/party_session.h"
#include "client/grpc/grpc_curator_link.h"
#include "server/grpc/curator_server.h"
#include "tests/integration/party_sessions.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

const std::string kSource = VFSYNTH_SOURCE_DIR;
const std::vector<std::string> kParties = {"hospital", "insurer", "bank"};
constexpr char kAlignmentKey[] = "marginals-test-alignment-key-0123";
constexpr int kRows = 300;
constexpr int kPositionBins = 4;

MeasuredMarginals& ProtocolOf(CuratorServer& curator) {
  return static_cast<MeasuredMarginals&>(curator.core().protocol());
}

class MarginalsTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/marginals_test_", ::getpid()));
    std::filesystem::create_directories(*dir_);
    // Adult's first rows, split by columns into the three parties of deploy/parties.
    auto adult = ReadCsv(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv");
    ASSERT_TRUE(adult.ok()) << adult.status();
    adult->rows.resize(kRows);
    ASSERT_TRUE(WriteCsv(*dir_ + "/adult.csv", *adult).ok());
    ASSERT_TRUE(SplitFiles(*dir_ + "/adult.csv", kSource + "/deploy/schemas/adult.schema.json",
                           kSource + "/deploy/parties/adult-3.json", *dir_ + "/parties", false)
                    .ok());
    const std::string certs = "bash " + kSource + "/deploy/gen-certs.sh ";
    ASSERT_EQ(std::system((certs + *dir_ + "/certs hospital insurer bank > /dev/null").c_str()), 0);
    // Another CA's certificates for the same names: not the run's.
    ASSERT_EQ(
        std::system((certs + *dir_ + "/othercerts hospital insurer bank > /dev/null").c_str()), 0);
    ASSERT_TRUE(WriteFileAtomically(*dir_ + "/secrets.txt",
                                    absl::StrCat("sampling_secret=marginals-test-sampling-0123456789\n"
                                                 "alignment_key=",
                                                 kAlignmentKey, "\n"))
                    .ok());
  }

  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    dir_ = nullptr;
  }

 protected:
  static std::string TestDir() {
    return *dir_ + "/runs/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static v1::TlsConfig Tls(const std::string& name) { return TestTls(*dir_ + "/certs", name); }

  static void SetPrivacy(v1::PrivacyConfig* privacy) {
    privacy->set_mode(v1::PrivacyConfig::marginals);
    privacy->set_epsilon(4.0);
    privacy->mutable_measurement()->set_position_bins(kPositionBins);
  }

  // A fresh curator clears the test's directory; a resumed one continues from it.
  static std::unique_ptr<CuratorServer> StartCurator(bool resume = false) {
    if (!resume) {
      std::filesystem::remove_all(TestDir());
      std::filesystem::create_directories(TestDir());
    }
    v1::CuratorConfig config;
    config.set_run_id("it-marginals");
    config.set_listen("127.0.0.1:0");
    config.set_checkpoint_dir(TestDir() + "/curator");
    *config.mutable_tls() = Tls("curator");
    for (const auto& p : kParties) config.add_parties(p);
    SetPrivacy(config.mutable_privacy());
    config.mutable_training()->set_rounds(20);
    config.mutable_training()->set_batch_size(64);
    config.mutable_training()->set_seed(5);
    config.mutable_training()->set_threads(1);
    config.mutable_training()->set_log_every(10);
    config.mutable_output()->set_synthetic_csv(TestDir() + "/synthetic.csv");
    config.set_join_timeout_seconds(120);
    config.set_round_timeout_seconds(120);
    const absl::Status resolved = ResolveCuratorConfig("", &config);
    EXPECT_TRUE(resolved.ok()) << resolved;
    auto server = CuratorServer::BuildAndStart({config, resume});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  }

  static v1::PartyConfig PartyConfigFor(size_t k, int port) {
    const std::string& name = kParties[k];
    v1::PartyConfig config;
    config.set_name(name);
    config.set_curator(absl::StrCat("127.0.0.1:", port));
    *config.mutable_tls() = Tls(name);
    config.set_data(*dir_ + "/parties/" + name + ".csv");
    config.set_schema(*dir_ + "/parties/" + name + ".schema.json");
    config.set_secrets(*dir_ + "/secrets.txt");
    config.set_checkpoint_dir(TestDir() + "/" + name);
    SetPrivacy(config.mutable_privacy());
    config.mutable_privacy()->set_ledger(TestDir() + "/" + name + ".ledger");
    config.set_connect_timeout_seconds(30);
    const absl::Status resolved = ResolvePartyConfig("", &config);
    EXPECT_TRUE(resolved.ok()) << resolved;
    return config;
  }

  // A run of the three parties against `curator` (noise off with `noiseless`): each
  // party's outcome, then the curator's.
  static std::vector<absl::Status> Run(CuratorServer& curator, bool noiseless,
                                       std::vector<std::unique_ptr<MarginalsPartyCore>>* cores,
                                       bool resume = false) {
    for (size_t k = 0; k < kParties.size(); ++k) {
      auto core = MarginalsPartyCore::Create(PartyConfigFor(k, curator.port()), resume);
      EXPECT_TRUE(core.ok()) << core.status();
      if (!core.ok()) return {core.status()};
      if (noiseless) (*core)->set_noiseless_for_testing();
      cores->push_back(std::move(*core));
    }
    absl::Status run_status;
    std::thread run([&] { run_status = curator.Run(); });
    std::vector<absl::Status> results = RunPartySessions<MarginalsPartyCore>(
        *cores, [&](size_t k) { return PartyConfigFor(k, curator.port()); });
    run.join();
    results.push_back(run_status);  // the curator's, last
    return results;
  }

  // A list as its receiver opens it: the parties' list key, then its sender's signature
  // under the run's CA.
  static absl::StatusOr<std::string> OpenList(const secure::ListHeader& header,
                                              const std::string& sealed) {
    ASSIGN_OR_RETURN(const std::string key, MarginalsListKey(kAlignmentKey));
    ASSIGN_OR_RETURN(const std::string signed_payload, secure::Open(key, header, sealed));
    ASSIGN_OR_RETURN(const std::string ca, ReadFile(*dir_ + "/certs/ca.crt"));
    ASSIGN_OR_RETURN(const secure::ListVerifier verifier, secure::ListVerifier::FromCaPem(ca));
    return verifier.Verify(header, PartyIdentityUri(header.sender), signed_payload);
  }

  // `payload` signed with the key and certificate of `signer` under `certs` (the run's, or
  // another CA's) and sealed with the parties' list key: what a party colluding with the
  // curator can make.
  static absl::StatusOr<std::string> SealList(const secure::ListHeader& header,
                                              const std::string& payload,
                                              const std::string& signer,
                                              const std::string& certs = "certs") {
    ASSIGN_OR_RETURN(const std::string key, MarginalsListKey(kAlignmentKey));
    ASSIGN_OR_RETURN(const std::string private_key, ReadFile(*dir_ + "/" + certs + "/" + signer + ".key"));
    ASSIGN_OR_RETURN(const std::string cert, ReadFile(*dir_ + "/" + certs + "/" + signer + ".crt"));
    ASSIGN_OR_RETURN(const secure::ListSigner list_signer,
                     secure::ListSigner::FromPem(private_key, cert));
    ASSIGN_OR_RETURN(const std::string signed_payload, list_signer.Sign(header, payload));
    return secure::Seal(key, header, signed_payload);
  }

  // A finished run leaves no party's Paillier secret key on disk.
  static void ExpectNoPaillierKeyLeft() {
    for (const std::string& name : kParties) {
      const std::filesystem::path state = TestDir() + "/" + name + "/marginals";
      EXPECT_TRUE(std::filesystem::exists(state)) << state;
      EXPECT_FALSE(std::filesystem::exists(state / "paillier.key")) << name;
    }
  }

  static void ExpectListFromHospitalRefused(const std::string& signer, const std::string& certs,
                                            const std::string& why);
  static void RestartHospitalMidMeasurement(
      const std::function<bool(const v1::PartyMessage&)>& stop_after);

  static std::string* dir_;
};

std::string* MarginalsTest::dir_ = nullptr;

TEST_F(MarginalsTest, NoiselessRunPublishesThePlaintextCountsThroughSealedLists) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  // What the curator relays, as it relays it.
  absl::Mutex mu;
  std::vector<std::pair<int, v1::MarginalsTask>> relayed;
  ProtocolOf(*curator).set_relay_hook_for_testing([&](int party, v1::MarginalsTask task) {
    absl::MutexLock lock(&mu);
    if (task.has_sum() || task.has_decrypt()) relayed.emplace_back(party, task);
    return std::vector<v1::MarginalsTask>{std::move(task)};
  });
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  for (const absl::Status& result : Run(*curator, /*noiseless=*/true, &cores)) {
    EXPECT_TRUE(result.ok()) << result;
  }
  EXPECT_TRUE(std::filesystem::exists(TestDir() + "/synthetic.csv"));
  ExpectNoPaillierKeyLeft();

  // The release equals the plaintext counts of the joint aligned table, every histogram.
  const v1::PrivacyPlan& plan = cores[0]->privacy_plan();
  std::vector<const TableEncoder*> encoders;
  std::vector<torch::Tensor> tables;
  for (const auto& core : cores) {
    encoders.push_back(&core->encoder());
    tables.push_back(core->aligned_table());
  }
  const marginals::MeasuredLayout layout =
      marginals::LayoutOf(encoders, "", plan.privacy().measurement());
  auto shape = marginals::ReleaseShape(layout.blocks, plan);
  ASSERT_TRUE(shape.ok()) << shape.status();
  const torch::Tensor joint_table = torch::cat(tables, 1);
  const torch::Tensor exact =
      (shape->TableProbabilities(joint_table) * static_cast<double>(joint_table.size(0)))
          .round()
          .to(torch::kLong);
  std::vector<int64_t> released;
  for (const auto& histogram : ProtocolOf(*curator).counts_for_testing()) {
    released.insert(released.end(), histogram.begin(), histogram.end());
  }
  ASSERT_EQ(static_cast<int64_t>(released.size()), exact.numel());
  EXPECT_EQ(released, std::vector<int64_t>(exact.data_ptr<int64_t>(),
                                           exact.data_ptr<int64_t>() + exact.numel()));
  int cross = 0;
  for (const v1::MeasuredHistogram& m : plan.measurements()) cross += m.cross_party() ? 1 : 0;
  EXPECT_GT(cross, 0);

  // Relayed: sealed lists only, each opening with the parties' key where it is addressed,
  // and with neither the alignment key itself nor at another receiver.
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(relayed.empty());
  const std::string key = *MarginalsListKey(kAlignmentKey);
  // Never a record's PSI token under the alignment key (the old HMAC-of-a-label key).
  EXPECT_NE(key, AlignmentToken(kAlignmentKey, "vfsynth/marginals/list-key"));
  EXPECT_NE(key, AlignmentToken(kAlignmentKey, "marginals/lists"));
  for (const auto& [party, task] : relayed) {
    const bool sums = task.has_decrypt();
    const std::string& sealed = sums ? task.decrypt().sealed() : task.sum().sealed();
    const std::string& peer = sums ? task.decrypt().peer() : task.sum().peer();
    secure::ListHeader header{
        "it-marginals", peer, kParties[party],
        cores[party]->ListPurpose(sums ? "marginals/sums" : "marginals/records"), 0};
    auto payload = OpenList(header, sealed);
    ASSERT_TRUE(payload.ok()) << payload.status();
    EXPECT_FALSE(secure::Open(kAlignmentKey, header, sealed).ok());
    header.receiver = peer;
    EXPECT_FALSE(secure::Open(key, header, sealed).ok());
    // Ciphertexts only: a records list is the rows' ciphertexts, a sums list one block
    // of ciphertexts per column.
    if (sums) {
      v1::EncryptedSums list;
      ASSERT_TRUE(list.ParseFromString(*payload));
      EXPECT_EQ(list.sums_size(), list.columns_size());
      for (const std::string& block : list.sums()) EXPECT_EQ(block.size() % 512, 0u);
    } else {
      v1::EncryptedRecords list;
      ASSERT_TRUE(list.ParseFromString(*payload));
      EXPECT_EQ(list.ciphertexts().size() % (512 * static_cast<size_t>(kRows)), 0u);
    }
  }
}

TEST_F(MarginalsTest, PartiesChargeTheirLedgerBeforeTheirFirstCountsLeave) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  absl::Mutex mu;
  std::vector<bool> charged_at_first(kParties.size(), false);
  std::vector<bool> seen(kParties.size(), false);
  curator->core().hub().SetInboundObserver([&](int party, const v1::PartyMessage& message) {
    if (!message.has_measured_counts()) return;
    absl::MutexLock lock(&mu);
    if (seen[party]) return;
    seen[party] = true;
    const privacy::PrivacyLedger* ledger = cores[party]->ledger();
    charged_at_first[party] = ledger != nullptr && ledger->IsCharged(0);
  });
  for (const absl::Status& result : Run(*curator, /*noiseless=*/false, &cores)) {
    EXPECT_TRUE(result.ok()) << result;
  }
  absl::MutexLock lock(&mu);
  for (size_t k = 0; k < kParties.size(); ++k) {
    EXPECT_TRUE(seen[k]) << kParties[k];
    EXPECT_TRUE(charged_at_first[k]) << kParties[k];
    EXPECT_GT(cores[k]->ledger()->Spent().epsilon, 0) << kParties[k];
  }
}

TEST_F(MarginalsTest, ResumedCuratorFitsToTheCheckpointedCountsWithoutMeasuringAgain) {
  std::vector<std::vector<int64_t>> measured;
  {
    auto curator = StartCurator();
    ASSERT_NE(curator, nullptr);
    std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
    for (const absl::Status& result : Run(*curator, /*noiseless=*/false, &cores)) {
      ASSERT_TRUE(result.ok()) << result;
    }
    measured = ProtocolOf(*curator).counts_for_testing();
  }
  auto curator = StartCurator(/*resume=*/true);
  ASSERT_NE(curator, nullptr);
  absl::Mutex mu;
  int answers = 0;
  curator->core().hub().SetInboundObserver([&](int, const v1::PartyMessage& message) {
    absl::MutexLock lock(&mu);
    answers += message.has_measured_counts() || message.has_sealed_list() ? 1 : 0;
  });
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  for (const absl::Status& result : Run(*curator, /*noiseless=*/false, &cores, /*resume=*/true)) {
    EXPECT_TRUE(result.ok()) << result;
  }
  absl::MutexLock lock(&mu);
  EXPECT_EQ(answers, 0);
  EXPECT_EQ(ProtocolOf(*curator).counts_for_testing(), measured);
}

// The first failure of a run's outcomes (the refusing party's own comes before the others',
// which end with the curator's word).
std::string FirstFailure(const std::vector<absl::Status>& results) {
  for (const absl::Status& result : results) {
    if (!result.ok()) return std::string(result.message());
  }
  return "";
}

// A curator asking a party for a histogram twice (twice the noisy counts of one cell set)
// or for one outside the attested plan: refused before anything is charged or drawn.
TEST_F(MarginalsTest, PartyRefusesATaskOutsideItsAttestedPlanAndChargesNothing) {
  for (const bool twice : {true, false}) {
    SCOPED_TRACE(twice ? "a histogram twice" : "a histogram outside the plan");
    auto curator = StartCurator();
    ASSERT_NE(curator, nullptr);
    ProtocolOf(*curator).set_relay_hook_for_testing([twice](int, v1::MarginalsTask task) {
      if (task.has_own() && task.own().histograms_size() > 0) {
        task.mutable_own()->add_histograms(twice ? task.own().histograms(0) : 100000);
      }
      return std::vector<v1::MarginalsTask>{std::move(task)};
    });
    std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
    EXPECT_THAT(FirstFailure(Run(*curator, /*noiseless=*/false, &cores)),
                HasSubstr("other histograms than this party's own in the attested plan"));
    for (size_t k = 0; k < cores.size(); ++k) {
      const privacy::PrivacyLedger* ledger = cores[k]->ledger();
      EXPECT_TRUE(ledger == nullptr || !ledger->IsCharged(0)) << kParties[k];
    }
  }
}

TEST_F(MarginalsTest, PartyRefusesAForgedList) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  ProtocolOf(*curator).set_relay_hook_for_testing([](int, v1::MarginalsTask task) {
    if (task.has_sum()) (*task.mutable_sum()->mutable_sealed())[100] ^= 1;
    return std::vector<v1::MarginalsTask>{std::move(task)};
  });
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  EXPECT_THAT(FirstFailure(Run(*curator, true, &cores)),
              HasSubstr("list from 'hospital' does not open"));
}

TEST_F(MarginalsTest, PartyRefusesAListReplayedToItInAnotherPlace) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  // The records list hospital sealed for insurer, replayed to hospital as insurer's sums.
  absl::Mutex mu;
  std::string records;
  ProtocolOf(*curator).set_relay_hook_for_testing([&](int, v1::MarginalsTask task) {
    absl::MutexLock lock(&mu);
    if (task.has_sum() && task.sum().peer() == "hospital" && records.empty()) {
      records = task.sum().sealed();
    }
    if (task.has_decrypt() && !records.empty()) task.mutable_decrypt()->set_sealed(records);
    return std::vector<v1::MarginalsTask>{std::move(task)};
  });
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  EXPECT_THAT(FirstFailure(Run(*curator, true, &cores)), HasSubstr("does not open"));
}

TEST_F(MarginalsTest, PartyRefusesASecondDifferentListFromTheSameSender) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  // After the honest sums task, a second one carrying another (validly sealed) list from
  // the same sender: as if the sender had been made to encrypt twice.
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  bool sent = false;
  ProtocolOf(*curator).set_relay_hook_for_testing([&](int party, v1::MarginalsTask task) {
    std::vector<v1::MarginalsTask> tasks = {task};
    if (task.has_sum() && !sent) {
      sent = true;
      const secure::ListHeader header{"it-marginals", task.sum().peer(), kParties[party],
                                      cores[party]->ListPurpose("marginals/records"), 0};
      auto payload = OpenList(header, task.sum().sealed());
      EXPECT_TRUE(payload.ok()) << payload.status();
      v1::EncryptedRecords list;
      list.ParseFromString(*payload);
      std::string& ciphertexts = *list.mutable_ciphertexts();
      std::rotate(ciphertexts.begin(), ciphertexts.begin() + 512, ciphertexts.end());
      // Signed by the sender itself.
      auto resealed = SealList(header, list.SerializeAsString(), task.sum().peer());
      EXPECT_TRUE(resealed.ok());
      task.mutable_sum()->set_sealed(*resealed);
      tasks.push_back(std::move(task));
    }
    return tasks;
  });
  EXPECT_THAT(FirstFailure(Run(*curator, true, &cores)),
              HasSubstr("second, different marginals/records list from 'hospital'"));
}

TEST_F(MarginalsTest, PartyRefusesSumsInflatedByTheSummingParty) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  // Insurer (colluding here with the curator, which reseals with its key) returns
  // hospital's sums with one more record in every released count: no count leaves
  // [0, records], but each histogram sums to more than the records.
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  absl::Mutex mu;
  std::optional<secure::PaillierPublicKey> hospital_key;
  ProtocolOf(*curator).set_relay_hook_for_testing([&](int party, v1::MarginalsTask task) {
    absl::MutexLock lock(&mu);
    if (task.has_sum() && task.sum().peer() == "hospital" && !hospital_key.has_value()) {
      auto payload = OpenList({"it-marginals", "hospital", kParties[party],
                               cores[party]->ListPurpose("marginals/records"), 0},
                              task.sum().sealed());
      EXPECT_TRUE(payload.ok()) << payload.status();
      v1::EncryptedRecords list;
      list.ParseFromString(*payload);
      auto pk = secure::PaillierPublicKey::Deserialize(list.public_key());
      EXPECT_TRUE(pk.ok());
      hospital_key = *pk;
    }
    if (task.has_decrypt() && task.decrypt().peer() == "insurer") {
      const v1::PrivacyPlan& plan = cores[0]->privacy_plan();
      marginals::CrossPair pair;
      for (const marginals::CrossPair& p : marginals::CrossPairsOf(plan)) {
        if (p.low == 0 && p.high == 1) pair = p;
      }
      auto layout = marginals::LowLayout(plan, pair, hospital_key->modulus_bits());
      EXPECT_TRUE(layout.ok()) << layout.status();
      const secure::ListHeader header{"it-marginals", "insurer", "hospital",
                                      cores[0]->ListPurpose("marginals/sums"), 0};
      auto payload = OpenList(header, task.decrypt().sealed());
      EXPECT_TRUE(payload.ok()) << payload.status();
      v1::EncryptedSums sums;
      sums.ParseFromString(*payload);
      secure::BnCtxPtr ctx = secure::NewBnCtx();
      for (int j = 0; j < sums.sums_size(); ++j) {
        // +1 in every slot whose count is released, 0 in the masked ones.
        const std::vector<double> sigmas =
            marginals::SlotSigmas(plan, pair, *layout, sums.columns(j), true);
        std::vector<int64_t> extra(sigmas.size());
        for (size_t s = 0; s < sigmas.size(); ++s) extra[s] = sigmas[s] == 0 ? 1 : 0;
        auto plaintexts = secure::PackSlots(*layout, extra);
        EXPECT_TRUE(plaintexts.ok());
        std::string& block = *sums.mutable_sums(j);
        const size_t count = block.size() / hospital_key->ciphertext_bytes();
        auto ciphertexts = secure::DeserializeCiphertexts(*hospital_key, block, count);
        EXPECT_TRUE(ciphertexts.ok()) << ciphertexts.status();
        for (size_t i = 0; i < count; ++i) {
          auto one = secure::Encrypt(*hospital_key,
                                     (*plaintexts)[i % layout->num_ciphertexts()].get(), ctx.get());
          EXPECT_TRUE(one.ok());
          (*ciphertexts)[i] = secure::Add(*hospital_key, (*ciphertexts)[i], *one, ctx.get());
        }
        block = secure::SerializeCiphertexts(*hospital_key, *ciphertexts);
      }
      auto resealed = SealList(header, sums.SerializeAsString(), "insurer");
      EXPECT_TRUE(resealed.ok());
      task.mutable_decrypt()->set_sealed(*resealed);
    }
    return std::vector<v1::MarginalsTask>{std::move(task)};
  });
  const std::string failure = FirstFailure(Run(*curator, true, &cores));
  EXPECT_THAT(failure, HasSubstr("histogram "));
  EXPECT_THAT(failure, HasSubstr("forged or scaled sum"));
}

// Hospital (which encrypts and decrypts for both pairs) stopped once an answer that
// `stop_after` selects has reached the curator, and restarted with --resume: it sends its
// kept answers again, byte for byte, charges its ledger once, and the run publishes.
void MarginalsTest::RestartHospitalMidMeasurement(
    const std::function<bool(const v1::PartyMessage&)>& stop_after) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  for (size_t k = 0; k < kParties.size(); ++k) {
    auto core = MarginalsPartyCore::Create(PartyConfigFor(k, curator->port()));
    ASSERT_TRUE(core.ok()) << core.status();
    cores.push_back(std::move(*core));
  }
  // Hospital (which encrypts and decrypts for both pairs) is stopped once its first answer
  // has reached the curator.
  const v1::PartyConfig hospital = PartyConfigFor(0, curator->port());
  PartySession first(hospital, cores[0].get(), std::make_unique<GrpcCuratorLink>(hospital));
  absl::Mutex mu;
  std::vector<v1::PartyMessage> answers;  // hospital's, in arrival order
  bool stopped = false;
  curator->core().hub().SetInboundObserver([&](int party, const v1::PartyMessage& message) {
    if (party != 0 || !(message.has_measured_counts() || message.has_sealed_list())) return;
    absl::MutexLock lock(&mu);
    answers.push_back(message);
    if (!stopped && stop_after(message)) {
      stopped = true;
      first.Cancel();
    }
  });
  absl::Status run_status;
  std::thread run([&] { run_status = curator->Run(); });
  std::vector<absl::Status> others(kParties.size());
  std::vector<std::thread> threads;
  for (size_t k = 1; k < kParties.size(); ++k) {
    threads.emplace_back([&, k] {
      const v1::PartyConfig config = PartyConfigFor(k, curator->port());
      PartySession session(config, cores[k].get(), std::make_unique<GrpcCuratorLink>(config));
      others[k] = session.Run();
    });
  }
  EXPECT_EQ(first.Run().code(), absl::StatusCode::kCancelled);
  size_t before = 0;
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(stopped);
    before = answers.size();
  }
  // As if its process ended (its ledger's lock goes with it), then started again on the
  // same checkpoint_dir and ledger with --resume.
  cores[0].reset();
  auto resumed = MarginalsPartyCore::Create(hospital, /*resume=*/true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  PartySession second(hospital, resumed->get(), std::make_unique<GrpcCuratorLink>(hospital));
  EXPECT_TRUE(second.Run().ok());
  for (std::thread& t : threads) t.join();
  run.join();
  EXPECT_TRUE(run_status.ok()) << run_status;
  for (size_t k = 1; k < kParties.size(); ++k) EXPECT_TRUE(others[k].ok()) << others[k];
  EXPECT_TRUE(std::filesystem::exists(TestDir() + "/synthetic.csv"));
  ExpectNoPaillierKeyLeft();

  // Every answer sent again after the restart is the one sent before, byte for byte.
  absl::MutexLock lock(&mu);
  ASSERT_GT(answers.size(), before);
  int resent = 0;
  for (size_t i = before; i < answers.size(); ++i) {
    for (size_t j = 0; j < before; ++j) {
      if (answers[j].step() != answers[i].step()) continue;
      ++resent;
      EXPECT_EQ(answers[i].SerializeAsString(), answers[j].SerializeAsString())
          << "step " << answers[i].step();
    }
  }
  EXPECT_GT(resent, 0);
  // The plan charged once: as much as a party that never stopped, within the plan's ε.
  const privacy::PrivacyLedger* ledger = (*resumed)->ledger();
  ASSERT_NE(ledger, nullptr);
  EXPECT_DOUBLE_EQ(ledger->Spent().epsilon, cores[1]->ledger()->Spent().epsilon);
  const double planned = (*resumed)->privacy_plan().privacy().epsilon();
  EXPECT_LE(ledger->Spent().epsilon, planned * (1 + 1e-9));
  EXPECT_GT(ledger->Spent().epsilon, planned * 0.99);
}

TEST_F(MarginalsTest, PartyRestartedAfterItsFirstAnswerResendsItAndChargesOnce) {
  RestartHospitalMidMeasurement([](const v1::PartyMessage&) { return true; });
}

TEST_F(MarginalsTest, PartyRestartedAfterItsRecordsLeftDecryptsWithItsKeptKey) {
  RestartHospitalMidMeasurement(
      [](const v1::PartyMessage& message) { return message.has_sealed_list(); });
}

// With three parties every one holds the list key: bank, colluding with the curator,
// seals a records list "from hospital" to insurer. Signed by bank's own key, or by a
// "hospital" certificate from another CA, it is refused.
void MarginalsTest::ExpectListFromHospitalRefused(const std::string& signer,
                                                  const std::string& certs,
                                                  const std::string& why) {
  auto curator = StartCurator();
  ASSERT_NE(curator, nullptr);
  std::vector<std::unique_ptr<MarginalsPartyCore>> cores;
  ProtocolOf(*curator).set_relay_hook_for_testing([&](int party, v1::MarginalsTask task) {
    if (task.has_sum() && task.sum().peer() == "hospital" && kParties[party] == "insurer") {
      const secure::ListHeader header{"it-marginals", "hospital", "insurer",
                                      cores[party]->ListPurpose("marginals/records"), 0};
      auto payload = OpenList(header, task.sum().sealed());
      EXPECT_TRUE(payload.ok()) << payload.status();
      auto forged = SealList(header, *payload, signer, certs);
      EXPECT_TRUE(forged.ok()) << forged.status();
      task.mutable_sum()->set_sealed(*forged);
    }
    return std::vector<v1::MarginalsTask>{std::move(task)};
  });
  const std::string failure = FirstFailure(Run(*curator, true, &cores));
  EXPECT_THAT(failure, HasSubstr("records list from 'hospital' does not open"));
  EXPECT_THAT(failure, HasSubstr(why));
}

TEST_F(MarginalsTest, PartyRefusesAListSignedByAnotherPartysKey) {
  ExpectListFromHospitalRefused("bank", "certs", "names 'spiffe://vfsynth/party/bank'");
}

TEST_F(MarginalsTest, PartyRefusesAListSignedUnderAnotherCa) {
  ExpectListFromHospitalRefused("hospital", "othercerts", "does not chain to the run's CA");
}

}  // namespace
}  // namespace vfsynth
