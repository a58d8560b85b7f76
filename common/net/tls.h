#ifndef VFSYNTH_COMMON_NET_TLS_H_
#define VFSYNTH_COMMON_NET_TLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// SAN URI identifying a party in its certificate.
std::string PartyIdentity(const std::string& party);

// The TLS files as a daemon presents them, checked at its start: readable PEM, the
// certificate and the CA valid now (an expired one is named with its file and date).
absl::Status CheckTlsFiles(const v1::TlsConfig& tls, bool plaintext);

// mTLS server credentials for listening on `listen`: the curator presents its certificate
// and requires and verifies a client certificate signed by the CA. `plaintext` is for
// loopback tests: refused unless `listen` is a loopback address.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const std::string& listen, const v1::TlsConfig& tls, bool plaintext);

// mTLS channel credentials for dialling the curator at `address` (plaintext: loopback only).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& address, const v1::TlsConfig& tls, bool plaintext);

// Channel arguments shared by both sides (keepalive, message size); set together
// so the server never answers the client's pings with GOAWAY "too_many_pings".
grpc::ChannelArguments MakeChannelArguments(int64_t max_message_bytes);
void ApplyServerArguments(int64_t max_message_bytes, grpc::ServerBuilder* builder);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NET_TLS_H_
