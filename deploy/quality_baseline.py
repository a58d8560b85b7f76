#!/usr/bin/env python3
"""The independent-marginals baseline of a deploy/quality.sh directory, seed by seed.

For every DIR/seed-N/ this samples each column of that seed's training split
(parties/train.csv) independently of the others (a seeded shuffle per column: the
exact real marginals, no dependence between any two columns), evaluates the result
with `vfsynth eval` exactly as quality.sh evaluated the run (same holdout, row limit
and eval seed) into DIR/seed-N/baseline-independent/, and prints the run's pair trends
and 2-way AVD next to the baseline's. A GAN table "beats independent marginals" on a
seed when its pair trends are above that seed's baseline: both are scored on the same
split and the same evaluation subsample, so the comparison is paired.

  deploy/quality_baseline.py --out DIR --schema S.json --target class [--bin build/bin]
                             [--eval-rows 10000] [--id-column id] [--parties P.json] [--json F]
Writes DIR/baseline.json (or F). With the party layout the utility from the other
parties' columns is scored too.
"""
import argparse
import csv
import glob
import json
import os
import random
import statistics
import subprocess
import sys

from quality_summary import f1_key, random_forest


def write_independent_table(train_csv, out_csv, seed, id_column):
    with open(train_csv, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    if not rows:
        raise SystemExit(f"{train_csv} has no rows")
    rng = random.Random(seed)
    columns = []
    for index, name in enumerate(header):
        values = [row[index] for row in rows]
        if name != id_column:  # the ID column stays in place: it is not data
            rng.shuffle(values)
        columns.append(values)
    with open(out_csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(zip(*columns))


def scores(metrics_json):
    with open(metrics_json) as f:
        metrics = json.load(f)
    m = metrics["fidelity"]
    out = {"pair_trends": m["column_pair_trends"], "avd_2way": m["avd_2way"],
           "column_shapes": m["column_shapes"]}
    f1 = f1_key(metrics)
    forest = random_forest(metrics)
    out["total_difference"] = forest["total_difference"]
    out["tstr_f1"] = forest["tstr"][f1]
    if "cross_party_utility" in metrics:
        out["cross_party_tstr_f1"] = metrics["cross_party_utility"]["models"][0]["tstr"][f1]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="a deploy/quality.sh --out directory")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    parser.add_argument("--eval-rows", type=int, default=10000)
    parser.add_argument("--id-column", default="id")
    parser.add_argument("--parties", help="party layout: also the utility from the other parties' columns")
    parser.add_argument("--json", help="where to write the summary (default DIR/baseline.json)")
    args = parser.parse_args()

    runs = sorted(glob.glob(os.path.join(args.out, "seed-*", "")))
    if not runs:
        raise SystemExit(f"no seed-*/ run directories under {args.out}")
    seeds = []
    for run in runs:
        seed = int(os.path.basename(os.path.normpath(run))[len("seed-"):])
        for needed in ("parties/train.csv", "parties/holdout.csv", "metrics.json"):
            if not os.path.exists(os.path.join(run, needed)):
                raise SystemExit(f"{run} has no {needed}: not a finished quality.sh run")
        base = os.path.join(run, "baseline-independent")
        os.makedirs(base, exist_ok=True)
        table = os.path.join(base, "synthetic.csv")
        write_independent_table(os.path.join(run, "parties", "train.csv"), table, seed, args.id_column)
        result = subprocess.run(
            [os.path.join(args.bin, "vfsynth"), "eval",
             "--real", os.path.join(run, "parties", "train.csv"),
             "--holdout", os.path.join(run, "parties", "holdout.csv"),
             "--synthetic", table, "--schema", args.schema, "--target", args.target,
             "--out", base, "--eval-max-rows", str(args.eval_rows), "--eval-seed", str(seed)]
            + (["--parties", args.parties] if args.parties else []),
            stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr[-2000:])
            raise SystemExit(f"vfsynth eval failed on the baseline of {run}")
        entry = {"seed": seed, "run": scores(os.path.join(run, "metrics.json")),
                 "baseline": scores(os.path.join(base, "metrics.json"))}
        entry["pair_trends_above_baseline"] = entry["run"]["pair_trends"] > entry["baseline"]["pair_trends"]
        seeds.append(entry)
        print(f"seed {seed}: pair trends {entry['run']['pair_trends']:.4f} against "
              f"{entry['baseline']['pair_trends']:.4f}, 2-way AVD {entry['run']['avd_2way']:.4f} "
              f"against {entry['baseline']['avd_2way']:.4f}")
    summary = {
        "seeds": seeds,
        "run_pair_trends_mean": statistics.fmean(s["run"]["pair_trends"] for s in seeds),
        "baseline_pair_trends_mean": statistics.fmean(s["baseline"]["pair_trends"] for s in seeds),
        "seeds_above_baseline": sum(s["pair_trends_above_baseline"] for s in seeds),
    }
    with open(args.json or os.path.join(args.out, "baseline.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"pair trends {summary['run_pair_trends_mean']:.4f} against independent marginals "
          f"{summary['baseline_pair_trends_mean']:.4f}; above on {summary['seeds_above_baseline']} "
          f"of {len(seeds)} seeds")


if __name__ == "__main__":
    main()
