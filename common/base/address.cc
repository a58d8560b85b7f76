#include "common/base/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/quoted_value.h"

namespace vfsynth {

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& address,
                                                          const std::string& what, int min_port) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < min_port || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", QuotedValue(address), " is not host:port (port ", min_port, "-65535)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::make_pair(host, port);
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

absl::Status CheckPlaintextAddress(const std::string& address, const std::string& what) {
  const auto parsed = ParseHostPort(address, what);
  if (!parsed.ok()) return parsed.status();
  if (IsLoopbackHost(parsed->first)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " ", QuotedValue(address),
      " is not a loopback address: plaintext (no TLS) is for tests on one machine only "
      "(127.0.0.1, [::1] or localhost); give tls.ca, tls.cert and tls.key instead"));
}

}  // namespace vfsynth
