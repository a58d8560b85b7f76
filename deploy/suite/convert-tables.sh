#!/usr/bin/env bash
# Writes each table of the generalisation suite (deploy/suite/tables.tsv) as
# DIR/<name>.csv, converted from the R data set Debian packages (r-cran-aer,
# r-cran-cardata, r-cran-mlbench; deploy/install-deps.sh installs them).
#   deploy/suite/convert-tables.sh DIR [NAME ...]
# Factors become their level names, missing values empty fields.
set -euo pipefail
SUITE="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 DIR [NAME ...]" >&2; exit 2; }
OUT="$1"; shift
command -v Rscript > /dev/null || { echo "Rscript not found: run deploy/install-deps.sh" >&2; exit 1; }
known=$(awk '$1 !~ /^#/ && NF { print $1 }' "$SUITE/tables.tsv")
for name in "$@"; do
  grep -qx -- "$name" <<< "$known" || { echo "no suite table named '$name' (deploy/suite/tables.tsv: $(echo $known))" >&2; exit 2; }
done
mkdir -p "$OUT"
while read -r name package dataset label; do
  case "$name" in ''|'#'*) continue ;; esac
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  [ -s "$OUT/$name.csv" ] && continue
  Rscript --vanilla -e '
    args <- commandArgs(trailingOnly = TRUE)
    e <- new.env()
    data(list = args[2], package = args[1], envir = e)
    d <- get(args[2], envir = e)
    write.csv(d, args[3], row.names = FALSE, quote = FALSE, na = "")
  ' "$package" "$dataset" "$OUT/$name.csv.tmp" \
    || { echo "converting $package::$dataset failed (is r-cran-${package,,} installed?)" >&2; exit 1; }
  mv "$OUT/$name.csv.tmp" "$OUT/$name.csv"
  echo "$OUT/$name.csv: $(($(wc -l < "$OUT/$name.csv") - 1)) rows"
done < "$SUITE/tables.tsv"
