#include "common/net/certificate_validity.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

std::string Date(const ASN1_TIME* time) {
  std::tm parts{};
  if (ASN1_TIME_to_tm(time, &parts) != 1) return "an unreadable date";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromTM(parts, absl::UTCTimeZone()),
                          absl::UTCTimeZone());
}

}  // namespace

absl::Status CheckCertificatesValid(const std::string& pem, const std::string& path,
                                    const std::string& what, absl::Time now) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (bio == nullptr) return absl::ResourceExhaustedError("out of memory reading certificates");
  time_t at = absl::ToTimeT(now);
  int count = 0;
  while (true) {
    std::unique_ptr<X509, decltype(&X509_free)> certificate(
        PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
    if (certificate == nullptr) break;
    ++count;
    const ASN1_TIME* not_after = X509_get0_notAfter(certificate.get());
    const ASN1_TIME* not_before = X509_get0_notBefore(certificate.get());
    const std::string which = count == 1 ? "its certificate" : absl::StrCat("certificate ", count);
    if (X509_cmp_time(not_after, &at) <= 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", path, ": ", which, " expired on ", Date(not_after),
                       "; issue a new one (deploy/gen-certs.sh)"));
    }
    if (X509_cmp_time(not_before, &at) >= 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", path, ": ", which, " is not valid before ", Date(not_before),
                       " (is this machine's clock right?)"));
    }
  }
  if (count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": not a PEM certificate"));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth
