#!/usr/bin/env bash
# The three-party Adult run with one party reading its table from PostgreSQL and the
# curator publishing into PostgreSQL (docs/data.md, "Reading from PostgreSQL"), then a
# party with the wrong password. Run inside tests/postgres/with_postgres.sh.
set -euo pipefail
BIN="$1"; SRC="$2"
: "${VFSYNTH_PG_CONNINFO:?run inside tests/postgres/with_postgres.sh}"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PARTY=hospital
admin() { PGPASSFILE=/dev/null PGPASSWORD="$(head -1 "$VFSYNTH_PG_PASSWORD_FILE")" \
  "$VFSYNTH_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -At "$VFSYNTH_PG_CONNINFO" "$@"; }
RUN=(--rounds 2 --batch 64 --rows 150 --privacy none --bin "$BIN")

# The party's table: its CSV as split by run-local.sh, typed by its schema, "?" as NULL.
"$SRC/deploy/run-local.sh" --out "$WORK/run" --prepare-only "${RUN[@]}" > /dev/null
python3 - "$WORK/run/parties/$PARTY.schema.json" "$PARTY" > "$WORK/create.sql" <<'PY'
import json, sys
schema = json.load(open(sys.argv[1]))
types = {"integer": "bigint", "continuous": "double precision", "categorical": "text"}
columns = [f'"{schema["id_column"]}" text primary key'] + [
    f'"{c["name"]}" {types[c["type"]]}' for c in schema["columns"]]
print(f'CREATE TABLE {sys.argv[2]} ({", ".join(columns)});')
PY
header=$(head -1 "$WORK/run/parties/$PARTY.csv" | sed 's/[^,]*/"&"/g')
admin -f "$WORK/create.sql"
admin -c "\\copy $PARTY ($header) FROM '$WORK/run/parties/$PARTY.csv' WITH (FORMAT csv, HEADER, NULL '?')"
[ "$(admin -c "SELECT count(*) FROM $PARTY WHERE \"native-country\" IS NULL")" -gt 0 ] \
  || fail "no NULL in the loaded table"
# Least privilege: the party's user may only read its table, the curator's only create one.
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/reader.password"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/publisher.password"
chmod 600 "$WORK"/*.password
admin -c "CREATE ROLE reader LOGIN PASSWORD '$(cat "$WORK/reader.password")'" \
      -c "GRANT SELECT ON $PARTY TO reader" \
      -c "CREATE ROLE publisher LOGIN PASSWORD '$(cat "$WORK/publisher.password")'" \
      -c "GRANT CREATE ON SCHEMA public TO publisher"
db="host=$VFSYNTH_PG_HOST port=5432 dbname=postgres"
source_json="{\"conninfo\": \"$db user=reader\", \"password_file\": \"$WORK/reader.password\", \"table\": \"$PARTY\"}"
"$SRC/deploy/run-local.sh" --out "$WORK/run" "${RUN[@]}" --party-source "$PARTY=$source_json" \
  --output-json "\"postgres\": {\"conninfo\": \"$db user=publisher\", \"password_file\": \"$WORK/publisher.password\", \"table\": \"synthetic\"}" \
  > "$WORK/run.out" 2>&1 || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "the run"; }
grep -q "read [0-9]* rows from postgres:$PARTY" "$WORK/run/logs/$PARTY.log" || fail "the party did not read PostgreSQL"
grep -q '"data"' "$WORK/run/$PARTY.json" && fail "the party config still names a CSV"
rows=$(admin -c "SELECT count(*) FROM synthetic")
[ "$rows" -eq 150 ] || fail "synthetic has $rows rows, not 150"
columns=$(admin -c "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'synthetic'")
[ "$columns" = "$(head -1 "$WORK/run/synthetic.csv")" ] || fail "synthetic's columns: $columns"
[ "$(admin -c "SELECT data_type FROM information_schema.columns WHERE table_name = 'synthetic' AND column_name = 'age'")" = bigint ] \
  || fail "age is not bigint"
for log in "$WORK"/run/logs/*.log "$WORK"/run/*.json; do
  for secret in "$WORK/reader.password" "$WORK/publisher.password"; do
    if grep -qF "$(cat "$secret")" "$log"; then fail "a password is in $log"; fi
  done
done

# The wrong password: the party stops before it dials the curator, naming the connection.
printf 'wrong-password\n' > "$WORK/wrong.password"; chmod 600 "$WORK/wrong.password"
python3 - "$WORK/run/$PARTY.json" "$WORK/wrong.password" > "$WORK/run/bad.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["postgres"]["password_file"] = sys.argv[2]
config["checkpoint_dir"] = sys.argv[2] + ".checkpoint"
config["privacy"]["ledger"] = sys.argv[2] + ".ledger"
print(json.dumps(config))
PY
set +e
timeout 60 "$BIN/vfsynth-party" --config "$WORK/run/bad.json" > "$WORK/bad.out" 2>&1; rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$WORK/bad.out"; fail "a wrong password did not stop the party (rc $rc)"; }
grep -q "cannot connect to PostgreSQL user=reader dbname=postgres" "$WORK/bad.out" \
  && grep -q "password authentication failed" "$WORK/bad.out" \
  || { cat "$WORK/bad.out"; fail "the error does not name the connection and the cause"; }
if grep -q "wrong-password" "$WORK/bad.out"; then fail "the password is in the error"; fi
grep -o "cannot connect to .*" "$WORK/bad.out" | head -1
echo "PASS"
