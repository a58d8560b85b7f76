"""The population benchmark's tables: users of two Adult rows each, drawn with replacement.

  population_table.py split --bin DIR --out-dir D [--seed S (1)] [--holdout 0.2]
      Cuts Adult as `deploy/run-local.sh --holdout F --seed S` does (`vfsynth split`, the
      same seed): D/train.csv, the rows users are drawn from, and D/holdout.csv, the rows
      TRTR and TSTR are tested on; no drawn user comes from them.
  population_table.py users --train D/train.csv --users U --out T.csv --schema-out S.json
                            [--seed S (1)] [--rows-per-user 2]
      Writes T.csv (id, user, Adult's columns): U users, each of --rows-per-user rows drawn
      uniformly with replacement from the training rows (DP-FED-WAE's clients of two
      records), a user's rows adjacent; and S.json, Adult's schema with its id and user
      columns (docs/horizontal.md: a user is the rows sharing a user value).
  population_table.py independent --train D/train.csv --out T.csv [--seed S (1)]
      Writes the independent-marginals baseline: every column of the training rows shuffled
      on its own (deploy/quality_baseline.py's, as docs/results.md scores it).
Run with /usr/bin/python3 (numpy and pandas).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ADULT_CSV = os.path.join(ROOT, "deploy", "datasets", "adult.csv")
ADULT_SCHEMA = os.path.join(ROOT, "deploy", "schemas", "adult.schema.json")
ID_COLUMN, USER_COLUMN = "id", "user"


def split(args):
    os.makedirs(args.out_dir, exist_ok=True)
    # One party by rows: the split writes train.csv and holdout.csv with every column, as
    # run-local.sh's does for the same fraction and seed.
    with tempfile.TemporaryDirectory() as scratch:
        layout = os.path.join(scratch, "one-party.json")
        with open(layout, "w") as f:
            json.dump({"by_rows": True, "parties": [{"name": "all"}]}, f)
        result = subprocess.run(
            [os.path.join(args.bin, "vfsynth"), "split", "--input", ADULT_CSV,
             "--schema", ADULT_SCHEMA, "--parties", layout, "--out", scratch,
             "--holdout-fraction", str(args.holdout), "--holdout-seed", str(args.seed)],
            stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr[-2000:])
            raise SystemExit("population_table: vfsynth split failed")
        for name in ("train.csv", "holdout.csv"):
            os.replace(os.path.join(scratch, name), os.path.join(args.out_dir, name))


def users(args):
    if args.users < 1 or args.rows_per_user < 1:
        raise SystemExit("population_table: --users and --rows-per-user must be positive")
    # Every value as read: the drawn rows are copies, so the schema admits them as it does
    # the training rows.
    train = pd.read_csv(args.train, dtype=str, keep_default_na=False)
    if train.empty:
        raise SystemExit(f"population_table: {args.train} has no rows")
    rng = np.random.default_rng(args.seed)
    rows = args.users * args.rows_per_user
    table = train.iloc[rng.integers(0, len(train), size=rows)].reset_index(drop=True)
    table.insert(0, USER_COLUMN, np.repeat(np.arange(args.users), args.rows_per_user))
    table[USER_COLUMN] = "u" + table[USER_COLUMN].astype(str)
    table.insert(0, ID_COLUMN, np.arange(rows))
    table.to_csv(args.out, index=False)
    with open(ADULT_SCHEMA) as f:
        schema = json.load(f)
    schema = {"id_column": ID_COLUMN, "user_column": USER_COLUMN, **schema}
    with open(args.schema_out, "w") as f:
        json.dump(schema, f, indent=2)
    print(f"{args.out}: {args.users} users, {rows} rows drawn from {len(train)} training rows")


def independent(args):
    sys.path.insert(0, os.path.join(ROOT, "deploy"))
    from quality_baseline import write_independent_table
    write_independent_table(args.train, args.out, args.seed, ID_COLUMN)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split")
    s.add_argument("--bin", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--holdout", type=float, default=0.2)
    u = sub.add_parser("users")
    u.add_argument("--train", required=True)
    u.add_argument("--users", type=int, required=True)
    u.add_argument("--out", required=True)
    u.add_argument("--schema-out", required=True)
    u.add_argument("--seed", type=int, default=1)
    u.add_argument("--rows-per-user", type=int, default=2)
    i = sub.add_parser("independent")
    i.add_argument("--train", required=True)
    i.add_argument("--out", required=True)
    i.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    {"split": split, "users": users, "independent": independent}[args.command](args)


if __name__ == "__main__":
    main()
