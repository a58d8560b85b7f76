// The alignment chain's MACs (which list a party may blind), the answered hops and the
// alignment secrets a party keeps.
#include "client/core/alignment_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/core/alignment_secret.h"
#include "client/core/answered_hops.h"
#include "common/base/file_io.h"
#include "common/data/psi.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

constexpr char kKey[] = "chain-test-alignment-key-0123";
constexpr char kRun[] = "chain-run";
const std::vector<std::string> kRoster = {"a", "b", "c"};

AlignmentChain Chain(const std::string& self, const std::string& run = kRun,
                     const std::vector<std::string>& roster = kRoster,
                     const std::string& key = kKey) {
  absl::StatusOr<AlignmentChain> chain = AlignmentChain::Create(key, run, roster, self);
  EXPECT_TRUE(chain.ok()) << chain.status();
  return *std::move(chain);
}

std::vector<std::string> List(const std::string& secret, int size) {
  std::vector<std::string> ids;
  for (int i = 0; i < size; ++i) ids.push_back(absl::StrCat("id", i));
  return PsiParty::Create(secret, ids)->own_list();
}

std::string MacOf(const AlignmentChain& chain, int hop, const std::vector<std::string>& list) {
  absl::StatusOr<std::string> mac = chain.Mac(hop, list);
  EXPECT_TRUE(mac.ok()) << mac.status();
  return mac.value_or("");
}

TEST(AlignmentChainTest, EachPartyAcceptsTheListItsPredecessorSentItForTheHop) {
  // Three parties: at hop 1 b blinds a's list, c b's, a c's; at hop 2 c blinds the list
  // that started at a, sent by b.
  const std::vector<std::string> list = List("s", 6);
  EXPECT_TRUE(Chain("b").Verify(1, list, MacOf(Chain("a"), 0, list)).ok());
  EXPECT_TRUE(Chain("a").Verify(1, list, MacOf(Chain("c"), 0, list)).ok());
  EXPECT_TRUE(Chain("c").Verify(2, list, MacOf(Chain("b"), 1, list)).ok());
  EXPECT_TRUE(Chain("a").Verify(2, list, MacOf(Chain("c"), 1, list)).ok());
}

TEST(AlignmentChainTest, RefusesATamperedPaddedOrShortenedList) {
  const std::vector<std::string> list = List("s", 6);
  const std::string mac = MacOf(Chain("a"), 0, list);
  std::vector<std::string> tampered = list;
  tampered[3] = List("other", 6)[3];
  std::vector<std::string> padded = list;
  padded.push_back(List("guess", 1)[0]);
  std::vector<std::string> shortened = list;
  shortened.pop_back();
  std::vector<std::string> reordered = list;
  std::swap(reordered[0], reordered[1]);
  for (const std::vector<std::string>& changed : {tampered, padded, shortened, reordered}) {
    const absl::Status status = Chain("b").Verify(1, changed, mac);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_THAT(status.message(), HasSubstr("refusing to blind"));
  }
  std::string flipped = mac;
  flipped[0] ^= 1;
  EXPECT_EQ(Chain("b").Verify(1, list, flipped).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Chain("b").Verify(1, list, "").code(), absl::StatusCode::kPermissionDenied);
  std::vector<std::string> odd = list;
  odd[2] += "x";  // one split of the bytes only
  EXPECT_EQ(Chain("b").Verify(1, odd, mac).code(), absl::StatusCode::kInvalidArgument);
}

TEST(AlignmentChainTest, RefusesAListOfAnotherHopRunKeyOrRoster) {
  const std::vector<std::string> list = List("s", 4);
  // b's hop-1 list (started at a) is c's to blind at hop 2, and nobody's at hop 1.
  const std::string hop1 = MacOf(Chain("b"), 1, list);
  EXPECT_TRUE(Chain("c").Verify(2, list, hop1).ok());
  EXPECT_FALSE(Chain("c").Verify(1, list, hop1).ok());
  // a's own list is b's at hop 1, not c's at hop 2 (nor c's at hop 1: c takes b's).
  const std::string own = MacOf(Chain("a"), 0, list);
  EXPECT_FALSE(Chain("c").Verify(2, list, own).ok());
  EXPECT_FALSE(Chain("c").Verify(1, list, own).ok());
  // A fully blinded list goes to the curator only.
  EXPECT_FALSE(Chain("a").Verify(2, list, MacOf(Chain("c"), 2, list)).ok());
  EXPECT_FALSE(Chain("a").Verify(1, list, MacOf(Chain("c"), 2, list)).ok());
  // Another run's list (a replay), another key, or a roster shown differently.
  EXPECT_FALSE(Chain("b").Verify(1, list, MacOf(Chain("a", "another-run"), 0, list)).ok());
  EXPECT_FALSE(
      Chain("b")
          .Verify(1, list, MacOf(Chain("a", kRun, kRoster, "another-key-0123456789"), 0, list))
          .ok());
  EXPECT_FALSE(
      Chain("b").Verify(1, list, MacOf(Chain("a", kRun, {"a", "b", "c", "d"}), 0, list)).ok());
  // Out of range hops are refused by name.
  EXPECT_THAT(Chain("b").Verify(0, list, own).message(), HasSubstr("not one of 1 to 2"));
  EXPECT_THAT(Chain("b").Verify(3, list, own).message(), HasSubstr("not one of 1 to 2"));
}

// The most likely cause of a MAC that does not verify is a party set up with another
// secrets file: the refusal names the predecessor and tells the user what to do.
TEST(AlignmentChainTest, AListUnderAnotherAlignmentKeyNamesThePartyAndTheSecretsFile) {
  const std::vector<std::string> list = List("s", 4);
  const absl::Status refused = Chain("b").Verify(
      1, list, MacOf(Chain("a", kRun, kRoster, "another-key-0123456789"), 0, list));
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.message(),
              HasSubstr("party 'a' holds another alignment_key than this party"));
  EXPECT_THAT(refused.message(), HasSubstr("give every party the same secrets file"));
}

TEST(AlignmentChainTest, NeedsThePartyInTheRosterAndAKey) {
  EXPECT_FALSE(AlignmentChain::Create(kKey, kRun, kRoster, "d").ok());
  EXPECT_FALSE(AlignmentChain::Create(kKey, "", kRoster, "a").ok());
  EXPECT_FALSE(AlignmentChain::Create("short", kRun, kRoster, "a").ok());
  // With a name twice, a party's own MAC would be the one it expects from its predecessor.
  EXPECT_THAT(AlignmentChain::Create(kKey, kRun, {"a", "a"}, "a").status().message(),
              HasSubstr("'a' is used twice"));
  EXPECT_FALSE(AlignmentChain::Create(kKey, kRun, {"a", ""}, "a").ok());
}

std::string HopsPath(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/answered_hops_test";
  EXPECT_TRUE(MakeDirectories(dir).ok());
  const std::string path = dir + "/" + name;
  std::filesystem::remove(path);
  return path;
}

TEST(AnsweredHopsTest, KeepsOneListPerHopAcrossALoad) {
  const std::string path = HopsPath("keeps");
  absl::StatusOr<AnsweredHops> hops = AnsweredHops::Load(path, kRun);
  ASSERT_TRUE(hops.ok()) << hops.status();
  EXPECT_TRUE(hops->Check(1, "list-1").ok());
  ASSERT_TRUE(hops->Record(1, "list-1").ok());
  EXPECT_TRUE(hops->Record(1, "list-1").ok());  // the same list again
  EXPECT_THAT(hops->Record(1, "list-2").message(), HasSubstr("refusing a second list"));
  EXPECT_TRUE(hops->Check(2, "list-2").ok());

  absl::StatusOr<AnsweredHops> loaded = AnsweredHops::Load(path, kRun);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->Check(1, "list-1").ok());
  EXPECT_EQ(loaded->Check(1, "list-2").code(), absl::StatusCode::kFailedPrecondition);
}

// The curator names the run: one that moves the party to another run and back finds the
// first run's hops still answered.
TEST(AnsweredHopsTest, KeepsEveryRunsHops) {
  const std::string path = HopsPath("runs");
  ASSERT_TRUE(AnsweredHops::Load(path, kRun)->Record(1, "list-1").ok());
  absl::StatusOr<AnsweredHops> other = AnsweredHops::Load(path, "another-run");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->Check(1, "list-2").ok());
  ASSERT_TRUE(other->Record(1, "list-2").ok());
  absl::StatusOr<AnsweredHops> first = AnsweredHops::Load(path, kRun);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->Check(1, "list-2").message(), HasSubstr("refusing a second list"));
  EXPECT_TRUE(first->Check(1, "list-1").ok());
  EXPECT_EQ(AnsweredHops::Load(path, "another-run")->Check(1, "list-1").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(AnsweredHopsTest, RefusesAFileOfAnotherFormat) {
  const std::string path = HopsPath("corrupt");
  ASSERT_TRUE(WriteFileAtomically(path, "vfsynth-answered-hops 1\nrun x\n").ok());
  EXPECT_EQ(AnsweredHops::Load(path, kRun).status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(WriteFileAtomically(path, "garbage").ok());
  EXPECT_EQ(AnsweredHops::Load(path, kRun).status().code(), absl::StatusCode::kDataLoss);
}

TEST(AnsweredHopsTest, RefusesAMalformedHopLineNamingIt) {
  const std::string path = HopsPath("malformed");
  ASSERT_TRUE(AnsweredHops::Load(path, kRun)->Record(1, "list-1").ok());
  const std::string kept = *ReadFile(path);
  for (const std::string& line : {"hop run 1", "hop run one list", "hop run 0 list", "hops"}) {
    ASSERT_TRUE(WriteFileAtomically(path, absl::StrCat(kept, line, "\n")).ok());
    const absl::Status status = AnsweredHops::Load(path, kRun).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << line;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(path, " line 3")));
    EXPECT_THAT(status.message(), HasSubstr("blinds nothing more"));
  }
}

// Kept per run before the list leaves, private to the party, and read back for that run
// only.
TEST(AlignmentSecretTest, KeepsOneSecretPerRunPrivately) {
  const std::string path = HopsPath("alignment.secret");
  const absl::StatusOr<std::string> first = KeptOrNewAlignmentSecret(path, kRun);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const absl::StatusOr<std::string> other = KeptOrNewAlignmentSecret(path, "another-run");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *first);
  EXPECT_EQ(KeptOrNewAlignmentSecret(path, kRun).value_or(""), *first);
  EXPECT_EQ(KeptAlignmentSecret(path, "another-run").value_or(std::nullopt), *other);
  EXPECT_EQ(KeptAlignmentSecret(path, "third-run").value_or("x"), std::nullopt);

  ASSERT_TRUE(WriteFileAtomically(path, "vfsynth-alignment-secret 2\n").ok());
  const absl::Status status = KeptAlignmentSecret(path, kRun).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("format version 1"));
}

}  // namespace
}  // namespace vfsynth
