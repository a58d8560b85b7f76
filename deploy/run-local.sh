#!/usr/bin/env bash
# Runs the multi-party topology on this host: one vfsynth-curator and one
# vfsynth-party per party, as separate processes over loopback mTLS.
#   deploy/run-local.sh --out DIR [--dataset adult|wine-red|wine-white | --csv T.csv --schema S.json
#                       --parties P.json] [--rounds N (default: the curator's for the mode)]
#                       [--rows N] [--batch B] [--port P] [--bin DIR]
#                       [--privacy none|dpsgd|strict|vflgan|gswgan|pate|marginals] [--epsilon E] [--delta D]
#                       [--host IP] [--launcher CMD] [--prepare-only]
#                       [--seed S] [--holdout F] [--model JSON] [--training JSON] [--privacy-json JSON]
#                       [--schema S.json] [--label-column C] [--output-json JSON] [--party-source NAME=JSON]
#                       [--topology vertical|horizontal] [--parties-count N] [--horizontal JSON]
#                       [--join-timeout S (default 120)]
# --host: the curator's address (listen and dial; default 127.0.0.1; added to its
# certificate). --launcher: each daemon starts as `CMD <curator|party name> BINARY ARGS...`
# (tests/e2e use it to put each daemon in its own network namespace).
# Writes DIR/{certs,parties,logs}, DIR/curator.json, DIR/<party>.json and
# DIR/synthetic.csv; exits non-zero if any daemon fails. Binaries must be built.
# --prepare-only writes the data, certificates, secrets and configs and starts nothing.
# --seed: training.seed (also the holdout draw). --holdout F: keep a share F of the
# records out of training (DIR/parties/holdout.csv; the trained-on joint rows are
# DIR/parties/train.csv) for evaluation. --model / --training: JSON members added to
# the curator's model / training objects, e.g. --training '"n_critic": 3, "lr_critic": 1e-4';
# --privacy-json: members added to every daemon's privacy object, e.g.
# '"marginal_noise_multiplier": 15'.
# --csv / --parties: any joint table and its party layout (with --schema; `vfsynth schema
# draft` writes a starting pair; horizontal: no --parties); its label is --label-column
# (default none).
# --schema: another schema of the dataset's columns (e.g. with declared bins, docs/data.md).
# --label-column: the table's label (default the dataset's: class, quality; "" for none):
# sampled sharper in the published table (output.label_column) and, in dpsgd and strict,
# released in label pairs (training.label_column) unless --training sets one
# (docs/configuration.md);
# --output-json: members added to the output object, e.g. '"label_temperature": 1'.
# --party-source NAME=JSON: party NAME reads its table from the "postgres" object JSON
# (docs/data.md, "Reading from PostgreSQL") instead of DIR/parties/NAME.csv; repeatable.
# --topology horizontal (docs/horizontal.md): the table's rows are cut over --parties-count
# parties (default 3, party-1, ...; every party every column; with the schema's user_column,
# all of a user's rows to one party), privacy signds (the default
# there) or dpfedavg with --epsilon per user; --horizontal: members added to the curator's horizontal
# object, e.g. '"users_per_round": 20'. --batch, --model and --label-column are refused
# there, and so are the GAN's --training members.
# --join-timeout: the curator's join_timeout_seconds (a large table's parties may each
# take minutes over one list on a shared host; docs/configuration.md).
# After a crash, restart a daemon with the same command plus --resume
# (docs/operations.md, "Failure handling").
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="" DATASET=adult ROUNDS="" ROWS=0 BATCH=256 PORT="" BIN="$ROOT/build/bin"
PRIVACY=none EPSILON="" DELTA=1e-5 HOST=127.0.0.1 LAUNCHER="" PREPARE_ONLY=0
SEED=1 HOLDOUT=0 MODEL_JSON="" TRAINING_JSON="" PRIVACY_JSON="" SCHEMA_OVERRIDE=""
LABEL_COLUMN=default OUTPUT_JSON="" CSV_OVERRIDE="" LAYOUT_OVERRIDE=""
TOPOLOGY=vertical PARTIES_COUNT=3 HORIZONTAL_JSON="" PRIVACY_SET=0 BATCH_SET=0 JOIN_TIMEOUT=120
declare -A PARTY_SOURCE=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --dataset) DATASET="$2"; shift 2 ;;
    --csv) CSV_OVERRIDE="$2"; shift 2 ;;
    --parties) LAYOUT_OVERRIDE="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    --batch) BATCH="$2"; BATCH_SET=1; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --privacy) PRIVACY="$2"; PRIVACY_SET=1; shift 2 ;;
    --epsilon) EPSILON="$2"; shift 2 ;;
    --delta) DELTA="$2"; shift 2 ;;
    --host) HOST="$2"; shift 2 ;;
    --launcher) LAUNCHER="$2"; shift 2 ;;
    --prepare-only) PREPARE_ONLY=1; shift ;;
    --seed) SEED="$2"; shift 2 ;;
    --holdout) HOLDOUT="$2"; shift 2 ;;
    --model) MODEL_JSON="$2"; shift 2 ;;
    --training) TRAINING_JSON="$2"; shift 2 ;;
    --privacy-json) PRIVACY_JSON="$2"; shift 2 ;;
    --schema) SCHEMA_OVERRIDE="$2"; shift 2 ;;
    --label-column) LABEL_COLUMN="$2"; shift 2 ;;
    --output-json) OUTPUT_JSON="$2"; shift 2 ;;
    --party-source) PARTY_SOURCE["${2%%=*}"]="${2#*=}"; shift 2 ;;
    --topology) TOPOLOGY="$2"; shift 2 ;;
    --parties-count) PARTIES_COUNT="$2"; shift 2 ;;
    --horizontal) HORIZONTAL_JSON="$2"; shift 2 ;;
    --join-timeout) JOIN_TIMEOUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "--out is required" >&2; exit 2; }
[[ "$JOIN_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || { echo "--join-timeout must be a positive number of seconds" >&2; exit 2; }
case "$TOPOLOGY" in
  vertical) ;;
  horizontal)
    [ "$PRIVACY_SET" = 1 ] || PRIVACY=signds
    [ "$PRIVACY" = signds ] || [ "$PRIVACY" = dpfedavg ] \
      || { echo "--topology horizontal runs --privacy signds or dpfedavg" >&2; exit 2; }
    [[ "$PARTIES_COUNT" =~ ^[1-9][0-9]*$ ]] || { echo "--parties-count must be a positive integer" >&2; exit 2; }
    [ -z "$MODEL_JSON" ] && [ "$BATCH_SET" = 0 ] && [ "$LABEL_COLUMN" = default ] \
      || { echo "--model, --batch and --label-column do not apply to --topology horizontal (see --horizontal)" >&2; exit 2; }
    LABEL_COLUMN="" ;;
  *) echo "--topology must be vertical or horizontal" >&2; exit 2 ;;
esac
if [ -n "$CSV_OVERRIDE" ]; then
  # A horizontal run cuts the table by rows itself: no --parties layout.
  [ -n "$SCHEMA_OVERRIDE" ] && { [ -n "$LAYOUT_OVERRIDE" ] || [ "$TOPOLOGY" = horizontal ]; } \
    || { echo "--csv needs --schema and --parties (vfsynth schema draft writes a starting pair)" >&2; exit 2; }
  CSV="$CSV_OVERRIDE"; LAYOUT="$LAYOUT_OVERRIDE"; LABEL=""
  DATASET=$(basename "$CSV" .csv | tr -c 'A-Za-z0-9_\n-' '_')
else case "$DATASET" in
  adult) CSV="$ROOT/deploy/datasets/adult.csv"; SCHEMA="$ROOT/deploy/schemas/adult.schema.json"; LAYOUT="$ROOT/deploy/parties/adult-3.json"; LABEL=class ;;
  wine-red|wine-white) CSV="$ROOT/deploy/datasets/winequality-${DATASET#wine-}.csv"; SCHEMA="$ROOT/deploy/schemas/wine.schema.json"; LAYOUT="$ROOT/deploy/parties/wine-2.json"; LABEL=quality ;;
  *) echo "unknown dataset $DATASET" >&2; exit 2 ;;
esac; fi
[ -z "$LAYOUT_OVERRIDE" ] || LAYOUT="$LAYOUT_OVERRIDE"
[ "$LABEL_COLUMN" != default ] || LABEL_COLUMN="$LABEL"
if [ "$TOPOLOGY" = horizontal ]; then
  mkdir -p "$OUT"
  LAYOUT="$OUT/parties-by-rows.json"
  # One party a line: the roster is read back from the layout line by line.
  {
    echo '{"by_rows": true, "parties": ['
    for k in $(seq "$PARTIES_COUNT"); do
      printf '  {"name": "party-%d"}%s\n' "$k" "$([ "$k" -lt "$PARTIES_COUNT" ] && echo ,)"
    done
    echo ']}'
  } > "$LAYOUT"
fi
TRAINING_LABEL=""
case "$PRIVACY" in dpsgd|strict|marginals) [[ "$TRAINING_JSON" == *'"label_column"'* ]] || TRAINING_LABEL="$LABEL_COLUMN" ;; esac
[ -z "$SCHEMA_OVERRIDE" ] || SCHEMA="$SCHEMA_OVERRIDE"
if [ -z "$PORT" ]; then  # a free port: try random ones until nothing listens there
  for _ in $(seq 50); do
    PORT=$(( 20000 + RANDOM % 40000 ))
    ss -ltn "sport = :$PORT" 2>/dev/null | grep -q LISTEN || break
  done
fi
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
PARTIES=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$LAYOUT")

"$BIN/vfsynth" split --input "$CSV" --schema "$SCHEMA" --parties "$LAYOUT" --out "$OUT/parties" \
  --holdout-fraction "$HOLDOUT" --holdout-seed "$SEED" 2> "$OUT/logs/split.log"
case "$HOST" in
  127.0.0.1|localhost) sans="" ;;
  *[!0-9.]*) sans="DNS:$HOST" ;;
  *) sans="IP:$HOST" ;;
esac
# shellcheck disable=SC2086
CURATOR_SANS="$sans" "$ROOT/deploy/gen-certs.sh" "$OUT/certs" $PARTIES > /dev/null
# Secrets shared by the parties only; the curator never reads this file.
if [ ! -f "$OUT/party-secrets.txt" ]; then
  umask 077
  printf 'sampling_secret=%s\nalignment_key=%s\n' "$(openssl rand -hex 32)" "$(openssl rand -hex 32)" \
    > "$OUT/party-secrets.txt"
  umask 022
fi

roster=$(printf '"%s",' $PARTIES); roster="[${roster%,}]"
if [ "$PRIVACY" != none ] && [ -z "$EPSILON" ]; then echo "--privacy $PRIVACY needs --epsilon" >&2; exit 2; fi
if [ "$TOPOLOGY" = horizontal ]; then
  # signds is pure epsilon-LDP: no delta; dpfedavg takes --delta. The parties share no
  # records, hence no secrets.
  delta=""; [ "$PRIVACY" = dpfedavg ] && delta=", \"delta\": $DELTA"
  privacy="{\"mode\": \"$PRIVACY\", \"epsilon\": $EPSILON$delta${PRIVACY_JSON:+, $PRIVACY_JSON}}"
  run_id="local-$DATASET-horizontal" topology='"topology": "horizontal",' secrets=""
  run_settings="\"horizontal\": {${HORIZONTAL_JSON}}"
  training="{${ROUNDS:+\"rounds\": $ROUNDS, }\"threads\": 1, \"log_every\": 25, \"seed\": $SEED${TRAINING_JSON:+, $TRAINING_JSON}}"
  output="{\"synthetic_csv\": \"synthetic.csv\", \"rows\": $ROWS${OUTPUT_JSON:+, $OUTPUT_JSON}}"
else
  privacy="{\"mode\": \"$PRIVACY\", \"delta\": $DELTA${EPSILON:+, \"epsilon\": $EPSILON}${PRIVACY_JSON:+, $PRIVACY_JSON}}"
  run_id="local-$DATASET" topology="" secrets='"secrets": "party-secrets.txt",'
  run_settings="\"model\": {${MODEL_JSON}}"
  # The measured-marginals mode's batch is G's rows per fit step: its own default unless --batch.
  batch="\"batch_size\": $BATCH, "
  [ "$PRIVACY" = marginals ] && [ "$BATCH_SET" = 0 ] && batch=""
  training="{${ROUNDS:+\"rounds\": $ROUNDS, }$batch\"threads\": 1, \"log_every\": 25, \"seed\": $SEED${TRAINING_LABEL:+, \"label_column\": \"$TRAINING_LABEL\"}${TRAINING_JSON:+, $TRAINING_JSON}}"
  output="{\"synthetic_csv\": \"synthetic.csv\", \"rows\": $ROWS${LABEL_COLUMN:+, \"label_column\": \"$LABEL_COLUMN\"}${OUTPUT_JSON:+, $OUTPUT_JSON}}"
fi
cat > "$OUT/curator.json" <<JSON
{
  "run_id": "$run_id",${topology:+
  $topology}
  "listen": "$HOST:$PORT",
  "tls": {"ca": "certs/ca.crt", "cert": "certs/curator.crt", "key": "certs/curator.key"},
  "parties": $roster,
  $run_settings,
  "training": $training,
  "output": $output,
  "privacy": $privacy,
  "round_timeout_seconds": 120,
  "join_timeout_seconds": $JOIN_TIMEOUT
}
JSON
for party in $PARTIES; do
  table_source="\"data\": \"parties/$party.csv\""
  [ -n "${PARTY_SOURCE[$party]:-}" ] && table_source="\"postgres\": ${PARTY_SOURCE[$party]}"
  cat > "$OUT/$party.json" <<JSON
{
  "name": "$party",${topology:+
  $topology}
  "curator": "$HOST:$PORT",
  "tls": {"ca": "certs/ca.crt", "cert": "certs/$party.crt", "key": "certs/$party.key"},
  $table_source,
  "schema": "parties/$party.schema.json",${secrets:+
  $secrets}
  "privacy": ${privacy%\}}, "ledger": "$party.ledger"},
  "threads": 1
}
JSON
done
if [ "$PREPARE_ONLY" = 1 ]; then
  echo "configs in $OUT: curator.json $(printf '%s.json ' $PARTIES)(port $PORT)"
  exit 0
fi

# A fresh run: checkpoints of an earlier run in DIR would be refused (--resume is by hand),
# and so would its charged ledgers (a party refuses to start afresh on one); this local
# harness starts over, so both go.
rm -rf "$OUT/checkpoint" "$OUT"/parties/*.checkpoint
for party in $PARTIES; do rm -rf "$OUT/$party.ledger" "$OUT/$party.checkpoint"; done
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
# shellcheck disable=SC2086  # the launcher is a command line
${LAUNCHER:+$LAUNCHER curator} "$BIN/vfsynth-curator" --config "$OUT/curator.json" 2> "$OUT/logs/curator.log" &
curator_pid=$!; pids+=("$curator_pid")
for party in $PARTIES; do
  # shellcheck disable=SC2086
  ${LAUNCHER:+$LAUNCHER $party} "$BIN/vfsynth-party" --config "$OUT/$party.json" 2> "$OUT/logs/$party.log" &
  pids+=("$!")
done
echo "curator (pid $curator_pid) on $HOST:$PORT, parties: $(echo $PARTIES); logs in $OUT/logs"
# Show the curator's progress while it runs.
tail -f "$OUT/logs/curator.log" --pid="$curator_pid" | grep --line-buffered -E "round |aligned|published|error|failed" &
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
trap - EXIT
if [ $status -ne 0 ]; then
  echo "a daemon failed; last log lines:" >&2
  tail -n 3 "$OUT"/logs/*.log >&2
  exit 1
fi
