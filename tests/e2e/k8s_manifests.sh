#!/usr/bin/env bash
# Renders every kustomization of deploy/k8s offline (`kubectl kustomize`, no cluster)
# and checks the objects with tests/e2e/k8s_manifests.py: the shipped ones must
# conform, and every known bad edit of a rendered copy must be refused. Then runs the
# data-prep Job's script as the Job does (one party, DATA_DIR), splitting and
# loading, with the built `vfsynth`.
# KUBECTL_COMPAT=/path/to/kubectl renders again with that kubectl and requires the same
# objects (Debian bookworm's kubectl 1.20 carries kustomize v2.0.3; ours may be newer).
set -euo pipefail
BIN="$1"; SRC="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v kubectl > /dev/null || fail "kubectl is missing (deploy/install-deps.sh installs it)"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

overlays=(curator)
for dir in "$SRC"/deploy/k8s/party/*/; do
  [ "$(basename "$dir")" = base ] || overlays+=("party/$(basename "$dir")")
done

render() {  # render <kubectl> <out dir>
  mkdir -p "$2"
  for overlay in "${overlays[@]}"; do
    "$1" kustomize "$SRC/deploy/k8s/$overlay" > "$2/$(basename "$overlay").yaml" 2> "$WORK/stderr" \
      || { cat "$WORK/stderr" >&2; fail "$1 kustomize rejected deploy/k8s/$overlay"; }
  done
}

render kubectl "$WORK/rendered"
python3 "$SRC/tests/e2e/k8s_manifests.py" check "$SRC" "$WORK/rendered" || fail "see above"
python3 "$SRC/tests/e2e/k8s_manifests.py" self-test "$SRC" "$WORK/rendered" || fail "a bad manifest passed"

if [ -n "${KUBECTL_COMPAT:-}" ]; then
  render "$KUBECTL_COMPAT" "$WORK/compat"
  python3 - "$WORK/rendered" "$WORK/compat" <<'PY' || fail "$KUBECTL_COMPAT renders other objects"
import os, sys, yaml
def objects(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    return sorted(docs, key=lambda d: (d["kind"], d["metadata"]["name"]))
ours, theirs = sys.argv[1:3]
differ = [f for f in sorted(os.listdir(ours)) if objects(os.path.join(ours, f)) != objects(os.path.join(theirs, f))]
if differ:
    sys.exit(f"differ: {differ}")
print(f"same objects under {os.environ['KUBECTL_COMPAT']}")
PY
fi
# The Job's script: the files the party's config names, for its party only; kept when
# run again; loaded rather than split from SOURCE_DIR; a party outside the layout refused.
job() {  # job <party> <data dir> [SOURCE_DIR]
  mkdir -p "$2"
  env PATH="$BIN:$PATH" VFSYNTH_PARTIES="$1" DATA_DIR="$2" SOURCE_DIR="${3:-}" \
    bash "$SRC/deploy/compose/data-init.sh" > "$WORK/job.log" 2>&1
}
job hospital "$WORK/data/split" || { cat "$WORK/job.log" >&2; fail "the data-prep script failed"; }
[ "$(ls "$WORK/data/split")" = "$(printf 'hospital.csv\nhospital.schema.json')" ] \
  || fail "the data-prep script wrote $(ls "$WORK/data/split"), not hospital.csv and hospital.schema.json"
echo "kept" >> "$WORK/data/split/hospital.csv"
job hospital "$WORK/data/split" && tail -n 1 "$WORK/data/split/hospital.csv" | grep -qx kept \
  || fail "a second run of the data-prep script replaced existing data"
job hospital "$WORK/data/loaded" "$WORK/data/split" && grep -q "loaded from" "$WORK/job.log" \
  && cmp -s "$WORK/data/split/hospital.csv" "$WORK/data/loaded/hospital.csv" \
  || fail "the data-prep script did not load hospital's files from SOURCE_DIR"
if job mallory "$WORK/data/mallory"; then fail "the data-prep script accepted a party outside the layout"; fi
grep -q "has no mallory.csv" "$WORK/job.log" || fail "unclear refusal: $(cat "$WORK/job.log")"
echo "data-prep: split, kept, loaded, refused an unknown party"
echo PASS
