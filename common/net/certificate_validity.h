#ifndef VFSYNTH_COMMON_NET_CERTIFICATE_VALIDITY_H_
#define VFSYNTH_COMMON_NET_CERTIFICATE_VALIDITY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace vfsynth {

// Every certificate in the PEM text `pem` (read from `path`, the setting `what`) valid at
// `now`: one that expired or is not valid yet is named with its file and date, since a
// TLS handshake with it fails giving the other side no reason.
absl::Status CheckCertificatesValid(const std::string& pem, const std::string& path,
                                    const std::string& what, absl::Time now = absl::Now());

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NET_CERTIFICATE_VALIDITY_H_
