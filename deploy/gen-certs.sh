#!/usr/bin/env bash
# Makes a CA, a curator certificate and one client certificate per party (EC P-256).
#   deploy/gen-certs.sh OUT_DIR party1 [party2 ...]
# Party certificates carry only the identity SAN URI spiffe://vfsynth/party/<name>
# (no DNS/IP SANs, so parties never share an identity) and clientAuth; the curator's
# carries DNS:localhost, DNS:curator, IP:127.0.0.1 plus CURATOR_SANS (e.g.
# "IP:10.0.0.1,DNS:curator.example") and serverAuth. An operator certificate
# (operator.crt, SAN URI spiffe://vfsynth/operator, clientAuth) is for `vfsynth status`:
# the curator answers status calls from it and refuses it every party call.
# Existing files are kept.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT_DIR party [party ...]" >&2
  exit 2
fi
OUT="$1"; shift
mkdir -p "$OUT"
cd "$OUT"
umask 077
if [ ! -f ca.crt ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
    -days 3650 -subj "/CN=vfsynth-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
issue() {  # issue <file-stem> <subject CN> <SAN list> <extendedKeyUsage>
  local stem="$1" cn="$2" san="$3" eku="$4"
  [ -f "$stem.crt" ] && return 0
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$stem.key" \
    -out "$stem.csr" -subj "/CN=$cn" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
    "$san" "$eku" > "$stem.ext"
  openssl x509 -req -in "$stem.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile "$stem.ext" -out "$stem.crt" 2>/dev/null
  rm -f "$stem.csr" "$stem.ext"
}
issue operator vfsynth-operator "URI:spiffe://vfsynth/operator" clientAuth
issue curator vfsynth-curator "DNS:localhost,DNS:curator,IP:127.0.0.1${CURATOR_SANS:+,$CURATOR_SANS}" serverAuth
for party in "$@"; do
  case "$party" in
    *[!A-Za-z0-9._-]*|"") echo "invalid party name '$party'" >&2; exit 2 ;;
    ca|curator|operator) echo "party name '$party' is reserved (certificate file names)" >&2; exit 2 ;;
  esac
  issue "$party" "$party" "URI:spiffe://vfsynth/party/$party" clientAuth
done
chmod 600 ./*.key
chmod 644 ./*.crt
echo "certificates in $(pwd): ca.crt curator.crt operator.crt $(printf '%s.crt ' "$@")"
