"""Writes the scale case's joint table and its party layouts.

Rows are Adult's drawn with replacement (the dependence between its columns is the known
structure), with age and hours-per-week jittered so that copies of a record differ. The
layouts deal the columns round-robin over K parties; the party holding 'class' is the
label's.
  scale_table.py ADULT_CSV ROWS SEED OUT_CSV --layouts K... --layout-dir DIR
"""
import argparse
import json
import os

import numpy as np
import pandas as pd


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adult_csv")
    parser.add_argument("rows", type=int)
    parser.add_argument("seed", type=int)
    parser.add_argument("out_csv")
    parser.add_argument("--layouts", type=int, nargs="+", required=True)
    parser.add_argument("--layout-dir", required=True)
    args = parser.parse_args()
    if args.rows < 1:
        parser.error("rows must be positive")
    source = pd.read_csv(args.adult_csv, skipinitialspace=True)
    rng = np.random.default_rng(args.seed)
    table = source.iloc[rng.integers(0, len(source), args.rows)].reset_index(drop=True)
    table["age"] = np.clip(table["age"] + rng.integers(-2, 3, args.rows), 17, 90)
    table["hours-per-week"] = np.clip(
        table["hours-per-week"] + rng.integers(-3, 4, args.rows), 1, 99)
    table.to_csv(args.out_csv, index=False)

    columns = list(table.columns)
    for k in args.layouts:
        if not 1 <= k <= len(columns):
            parser.error(f"cannot deal {len(columns)} columns over {k} parties")
        parties = [{"name": f"party-{p + 1}", "columns": columns[p::k]} for p in range(k)]
        path = os.path.join(args.layout_dir, f"layout-k{k}.json")
        with open(path, "w") as out:
            # One party a line: run-local.sh reads the roster back line by line.
            out.write('{"id_column": "id", "parties": [\n')
            out.write(",\n".join("  " + json.dumps(p) for p in parties))
            out.write("\n]}\n")


if __name__ == "__main__":
    main()
