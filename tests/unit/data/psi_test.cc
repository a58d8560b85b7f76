#include "common/data/psi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/data/alignment.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

std::vector<std::string> Ids(int first, int last) {
  std::vector<std::string> ids;
  for (int i = first; i <= last; ++i) ids.push_back(absl::StrCat("person-", i));
  return ids;
}

PsiParty Party(const std::string& secret, const std::vector<std::string>& ids) {
  absl::StatusOr<PsiParty> party = PsiParty::Create(secret, ids);
  EXPECT_TRUE(party.ok()) << party.status();
  return std::move(*party);
}

std::vector<std::string> Blinded(const PsiParty& party, const std::vector<std::string>& elements) {
  absl::StatusOr<std::vector<std::string>> blinded = party.Blind(elements);
  EXPECT_TRUE(blinded.ok()) << blinded.status();
  return blinded.ok() ? *blinded : std::vector<std::string>();
}

// The hash-to-group point of the protocol, computed here from its definition.
std::string UnblindedPoint(const std::string& id) {
  EXPECT_GE(sodium_init(), 0);
  const std::string input = "vfsynth-psi-v1" + id;
  unsigned char digest[crypto_hash_sha512_BYTES];
  crypto_hash_sha512(digest, reinterpret_cast<const unsigned char*>(input.data()), input.size());
  unsigned char point[crypto_core_ristretto255_BYTES];
  crypto_core_ristretto255_from_hash(point, digest);
  return std::string(reinterpret_cast<const char*>(point), sizeof(point));
}

TEST(PsiTest, BlindingCommutes) {
  const PsiParty a = Party("secret-a", {"42"});
  const PsiParty b = Party("secret-b", {"42"});
  const std::vector<std::string> ab = Blinded(b, a.own_list());
  const std::vector<std::string> ba = Blinded(a, b.own_list());
  ASSERT_THAT(ab, SizeIs(1));
  EXPECT_EQ(ab, ba);
  EXPECT_NE(ab[0], a.own_list()[0]);
}

TEST(PsiTest, OwnListIsTheBlindedHashOfEachId) {
  // (H(id)^a)^b == (H(id)^b)^a where the test computes H(id) itself: the parties
  // hash ids as specified, and a list never carries the bare hash.
  const PsiParty a = Party("secret-a", {"7"});
  const PsiParty b = Party("secret-b", {"7"});
  const std::string hashed = UnblindedPoint("7");
  EXPECT_EQ(Blinded(b, Blinded(a, {hashed})), Blinded(b, a.own_list()));
  EXPECT_NE(a.own_list()[0], hashed);
}

TEST(PsiTest, DifferentIdsGiveDifferentPoints) {
  const PsiParty a = Party("secret-a", Ids(0, 99));
  const PsiParty b = Party("secret-b", {"x"});
  const std::vector<std::string> twice = Blinded(b, a.own_list());
  EXPECT_EQ(std::set<std::string>(a.own_list().begin(), a.own_list().end()).size(), 100u);
  EXPECT_EQ(std::set<std::string>(twice.begin(), twice.end()).size(), 100u);
  EXPECT_TRUE(CheckPsiList(a.own_list()).ok());
}

TEST(PsiTest, OnePartysListIsNotComparableWithAnothersNorWithTokens) {
  // What the curator receives at hop 0: the same ids give unrelated elements at two
  // parties, and nothing equals an HMAC token of the parties' shared key.
  const std::vector<std::string> ids = Ids(0, 19);
  const PsiParty a = Party("secret-a", ids);
  const PsiParty b = Party("secret-b", ids);
  const std::set<std::string> a_list(a.own_list().begin(), a.own_list().end());
  for (const std::string& element : b.own_list()) EXPECT_EQ(a_list.count(element), 0u);
  for (const std::string& id : ids) {
    const std::string token = AlignmentToken("shared-alignment-key", id);
    const std::string token_bytes = absl::HexStringToBytes(token);
    for (const PsiParty* party : {&a, &b}) {
      for (const std::string& element : party->own_list()) {
        EXPECT_NE(element, token_bytes);
        EXPECT_NE(element, token.substr(0, kPsiElementBytes));
      }
    }
  }
}

TEST(PsiTest, TheSameSecretGivesTheSameListAnotherADifferentOrderAndExponent) {
  const std::vector<std::string> ids = Ids(0, 49);
  const PsiParty first = Party("secret-a", ids);
  const PsiParty again = Party("secret-a", ids);
  const PsiParty other = Party("secret-b", ids);
  EXPECT_EQ(first.own_list(), again.own_list());  // a resumed party resends its list
  absl::StatusOr<std::vector<int64_t>> first_rows = first.Rows({0, 1, 2, 3, 4, 5, 6, 7});
  absl::StatusOr<std::vector<int64_t>> other_rows = other.Rows({0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_TRUE(first_rows.ok() && other_rows.ok());
  EXPECT_NE(*first_rows, *other_rows);
  EXPECT_NE(*first_rows, std::vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}));  // shuffled
}

// The whole protocol for three parties, relayed here as the curator relays it.
TEST(PsiTest, ThreePartiesFindExactlyTheIntersectionInTheReferenceOrder) {
  const std::vector<std::vector<std::string>> ids = {Ids(0, 59), Ids(20, 79), Ids(10, 49)};
  std::vector<PsiParty> parties;
  for (size_t k = 0; k < ids.size(); ++k)
    parties.push_back(Party(absl::StrCat("run-secret-", k), ids[k]));
  const size_t count = parties.size();
  std::vector<std::vector<std::string>> lists;
  for (const PsiParty& party : parties) lists.push_back(party.own_list());
  for (size_t hop = 1; hop < count; ++hop) {
    for (size_t start = 0; start < count; ++start)
      lists[start] = Blinded(parties[(start + hop) % count], lists[start]);
  }
  const std::vector<std::vector<int64_t>> positions = PsiIntersectionPositions(lists);
  ASSERT_THAT(positions, SizeIs(count));

  // The reference: HMAC tokens intersected in the clear, rows in token order.
  const std::string key = "shared-alignment-key";
  std::vector<std::vector<std::string>> tokens;
  for (const auto& party_ids : ids) tokens.push_back(*AlignmentTokens(key, party_ids));
  const std::vector<std::string> common = IntersectTokens(tokens);
  ASSERT_THAT(common, SizeIs(30));  // person-20 .. person-49
  const absl::StatusOr<std::vector<int64_t>> first_order = RowOrder(tokens[0], common);
  ASSERT_TRUE(first_order.ok());
  for (size_t k = 0; k < count; ++k) {
    ASSERT_THAT(positions[k], SizeIs(common.size()));
    absl::StatusOr<std::vector<int64_t>> rows = parties[k].Rows(positions[k]);
    ASSERT_TRUE(rows.ok()) << rows.status();
    // The party's canonical order: its intersection rows sorted by their tokens.
    std::vector<std::string> own_common;
    for (const int64_t row : *rows) own_common.push_back(tokens[k][static_cast<size_t>(row)]);
    std::sort(own_common.begin(), own_common.end());
    EXPECT_EQ(own_common, common);
    absl::StatusOr<std::vector<int64_t>> order = RowOrder(tokens[k], own_common);
    absl::StatusOr<std::vector<int64_t>> reference = RowOrder(tokens[k], common);
    ASSERT_TRUE(order.ok() && reference.ok());
    EXPECT_EQ(*order, *reference);
    for (size_t i = 0; i < order->size(); ++i) {  // the same person at each position at every party
      EXPECT_EQ(ids[k][static_cast<size_t>((*order)[i])],
                ids[0][static_cast<size_t>((*first_order)[i])]);
    }
  }
}

TEST(PsiTest, DisjointSetsShareNothing) {
  const PsiParty a = Party("secret-a", Ids(0, 9));
  const PsiParty b = Party("secret-b", Ids(10, 19));
  const std::vector<std::vector<int64_t>> positions =
      PsiIntersectionPositions({Blinded(b, a.own_list()), Blinded(a, b.own_list())});
  EXPECT_TRUE(positions[0].empty());
  EXPECT_TRUE(positions[1].empty());
}

TEST(PsiTest, InvalidPointsAreRefusedWhenBlindingAndMalformedListsByTheCurator) {
  const PsiParty a = Party("secret-a", {"1", "2"});
  const std::string garbage(kPsiElementBytes, '\xff');  // not a canonical encoding
  const std::string identity(kPsiElementBytes, '\0');
  for (const std::string& bad :
       {garbage, identity, std::string(31, 'a'), std::string(33, 'a'), std::string()}) {
    std::vector<std::string> list = a.own_list();
    list.push_back(bad);
    const absl::StatusOr<std::vector<std::string>> blinded = a.Blind(list);
    EXPECT_EQ(blinded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(blinded.status().message(), HasSubstr("alignment element 2"));
    if (bad == garbage) continue;  // the curator does not decode points
    const absl::Status checked = CheckPsiList(list);
    EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(checked.message(), HasSubstr("alignment element 2"));
  }
  EXPECT_THAT(a.Blind({garbage}).status().message(), HasSubstr("not a valid ristretto255 point"));
  EXPECT_THAT(CheckPsiList({identity}).message(), HasSubstr("is the identity"));
  std::vector<std::string> duplicated = a.own_list();
  duplicated.push_back(duplicated[0]);
  EXPECT_THAT(CheckPsiList(duplicated).message(), HasSubstr("more than once"));
  EXPECT_TRUE(CheckPsiList(a.own_list()).ok());
}

// Long lists are blinded on several threads: the result is element for element the
// single-threaded one, and a bad element deep in a later slice is named by its index.
TEST(PsiTest, LongListsBlindElementByElementAndNameTheFirstBadElement) {
  const PsiParty a = Party("secret-a", Ids(0, 12999));
  const PsiParty b = Party("secret-b", Ids(0, 3));
  const std::vector<std::string>& list = a.own_list();
  ASSERT_EQ(list.size(), 13000u);
  absl::StatusOr<std::vector<std::string>> whole = b.Blind(list);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t i : {size_t{0}, size_t{4095}, size_t{4096}, size_t{9000}, size_t{12999}}) {
    absl::StatusOr<std::vector<std::string>> one = b.Blind({list[i]});
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*whole)[i], (*one)[0]) << i;
  }
  std::vector<std::string> damaged = list;
  damaged[11000] = std::string(kPsiElementBytes, '\xff');
  damaged[12000] = "short";
  EXPECT_THAT(b.Blind(damaged).status().message(), HasSubstr("alignment element 11000"));
}

TEST(PsiTest, BadIdsAndPositionsAreErrors) {
  EXPECT_THAT(PsiParty::Create("s", {"1", "2", "1"}).status().message(),
              HasSubstr("'1' appears more than once"));
  EXPECT_EQ(PsiParty::Create("s", {}).status().code(), absl::StatusCode::kInvalidArgument);
  const PsiParty a = Party("secret-a", Ids(0, 4));
  EXPECT_THAT(a.Rows({5}).status().message(), HasSubstr("outside this party's 5 records"));
  EXPECT_THAT(a.Rows({-1}).status().message(), HasSubstr("outside"));
  EXPECT_THAT(a.Rows({2, 1}).status().message(), HasSubstr("ascending"));
  EXPECT_THAT(a.Rows({1, 1}).status().message(), HasSubstr("ascending"));
  absl::StatusOr<std::vector<int64_t>> all = a.Rows({0, 1, 2, 3, 4});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(std::set<int64_t>(all->begin(), all->end()), std::set<int64_t>({0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace vfsynth
