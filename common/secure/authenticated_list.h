#ifndef VFSYNTH_COMMON_SECURE_AUTHENTICATED_LIST_H_
#define VFSYNTH_COMMON_SECURE_AUTHENTICATED_LIST_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth::secure {

// What a list relayed by the curator is: which run, from whom to whom, for what, and its
// place in the exchange. The MAC binds all of it, so the curator can neither forge a list
// nor deliver one in another place (another run, direction, purpose or index: a replay).
struct ListHeader {
  std::string run_id;
  std::string sender;
  std::string receiver;
  std::string purpose;
  uint64_t index = 0;
};

// The header as the MAC (and a sender's signature, signed_list.h) covers it: a magic,
// every field length-prefixed, and the payload's length, so no two headers encode alike.
std::string EncodeListHeader(const ListHeader& header, uint64_t payload_length);

// At least this many bytes of key shared by the parties (never by the curator).
inline constexpr size_t kMinListKeyBytes = 16;

// The key that seals lists for `purpose`, derived from a key the parties share for
// another use (the alignment key, whose HMAC of a record id is that record's PSI token):
// HKDF-SHA256 with an info string that starts "vfsynth\0list-key\0", so it is never the
// HMAC of any id under that key, and another purpose never gets the same key. 32 bytes.
absl::StatusOr<std::string> DeriveListKey(absl::string_view shared_key, absl::string_view purpose);

// Shows that two parties hold the same `secret` (a key they share) for run `run_id`,
// and nothing else about it to whoever relays the value: HKDF-SHA256 of the secret with
// another salt than DeriveListKey's and an info string "vfsynth\0key-check\0" ‖ label ‖
// "\0" ‖ run id, so it is fresh per run and label, and never a list key, a PSI token or a
// stream key of the secret. 32 bytes.
absl::StatusOr<std::string> KeyCheckValue(absl::string_view secret, absl::string_view label,
                                          absl::string_view run_id);

// header ‖ payload ‖ HMAC-SHA256(key, header ‖ payload length ‖ payload).
absl::StatusOr<std::string> Seal(absl::string_view key, const ListHeader& header,
                                 absl::string_view payload);

// The MAC that Seal appends, alone: for a payload that travels in fields of its own (the
// alignment chain's lists, client/core/alignment_chain.h).
absl::StatusOr<std::string> ListMac(absl::string_view key, const ListHeader& header,
                                    absl::string_view payload);
// OK if `mac` is ListMac(key, expected, payload); PERMISSION_DENIED otherwise (a detached
// MAC cannot tell which header field differs).
absl::Status VerifyListMac(absl::string_view key, const ListHeader& expected,
                           absl::string_view payload, absl::string_view mac);

// The payload of `sealed` if its MAC verifies under `key` and its header equals `expected`;
// otherwise an error naming what is wrong (the MAC, or which header field differs).
absl::StatusOr<std::string> Open(absl::string_view key, const ListHeader& expected,
                                 absl::string_view sealed);

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_AUTHENTICATED_LIST_H_
