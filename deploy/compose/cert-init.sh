#!/usr/bin/env bash
# One-shot set-up step of deploy/docker-compose.yml: makes the CA and every
# certificate with deploy/gen-certs.sh in the `pki` volume (the CA key never leaves
# it), copies to each daemon's own TLS volume only the CA certificate and that
# daemon's certificate and key, and writes the parties' shared secrets file.
# Runs as root so it can hand the files to the daemons' uid; idempotent (existing
# certificates and secrets are kept).
#   env: VFSYNTH_PARTIES="hospital insurer bank", CURATOR_SANS (extra SANs), VFSYNTH_UID
#   volumes: /init/pki, /init/curator-tls, /init/<party>-tls, /init/party-secrets
set -euo pipefail
PARTIES="${VFSYNTH_PARTIES:?set VFSYNTH_PARTIES to the roster}"
OWNER="${VFSYNTH_UID:-10001}"
INIT=/init
DEPLOY="$(cd "$(dirname "$0")/.." && pwd)"

# shellcheck disable=SC2086
"$DEPLOY/gen-certs.sh" "$INIT/pki" $PARTIES

hand_over() {  # hand_over <identity> <target dir>
  local identity="$1" dir="$2"
  [ -d "$dir" ] || { echo "cert-init: $dir is not mounted" >&2; exit 1; }
  install -m 644 "$INIT/pki/ca.crt" "$dir/ca.crt"
  install -m 644 "$INIT/pki/$identity.crt" "$dir/$identity.crt"
  install -m 600 "$INIT/pki/$identity.key" "$dir/$identity.key"
  chown -R "$OWNER:$OWNER" "$dir"
}
hand_over curator "$INIT/curator-tls"
for party in $PARTIES; do hand_over "$party" "$INIT/$party-tls"; done

secrets="$INIT/party-secrets/party-secrets.txt"
if [ ! -f "$secrets" ]; then
  umask 077
  printf 'sampling_secret=%s\nalignment_key=%s\n' "$(openssl rand -hex 32)" "$(openssl rand -hex 32)" > "$secrets"
fi
chown -R "$OWNER:$OWNER" "$INIT/party-secrets"
echo "cert-init: certificates for curator and $PARTIES, party secrets in place"
