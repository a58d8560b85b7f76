"""Reads the population benchmark's runs (tests/bench/population.sh) and writes their figures.

Per run: its settings and wall time (RUN/bench.json), the rounds, users a round, rounds/s
and the epsilon spent as the curator's status logs it after the last round
(RUN/logs/curator.log), the peak resident set of the curator and of the largest party
(RUN/rss), the random forest's TSTR accuracy and F1 and the 2- and 4-way AVD of the
published table (RUN/eval/metrics.json); beside them the independent-marginals baseline's
(--baseline EVAL_DIR) and TRTR.
  population_report.py RUN_DIR... --baseline EVAL_DIR --json OUT.json --markdown OUT.md
                       [--rows-per-user 2]
Exits 1 naming the run and the figure when a figure is missing, the published table does
not hold two rows a user of the schema's columns, or the epsilon spent exceeds the run's.
"""
import argparse
import csv
import json
import os
import sys

from scale_report import last, peak_mb, seconds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy"))
from quality_summary import f1_key, random_forest  # noqa: E402


def scores(eval_dir):
    path = os.path.join(eval_dir, "metrics.json")
    try:
        with open(path) as f:
            metrics = json.load(f)
        forest, f1 = random_forest(metrics), f1_key(metrics)
        return {
            "tstr_acc": forest["tstr"]["accuracy"], "tstr_f1": forest["tstr"][f1],
            "trtr_acc": forest["trtr"]["accuracy"], "trtr_f1": forest["trtr"][f1],
            "avd_2way": metrics["fidelity"]["avd_2way"],
            "avd_4way": metrics["fidelity"]["avd_4way"],
        }
    except (OSError, KeyError, StopIteration, ValueError) as error:
        raise ValueError(f"{path}: no score ({error!r})")


def published_rows(run_dir, columns):
    """The published table's rows, each checked to hold one value per schema column."""
    path = os.path.join(run_dir, "synthetic.csv")
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or sorted(header) != sorted(columns):
            raise ValueError(f"{path}: header {header} is not the schema's columns")
        rows = 0
        for row in reader:
            rows += 1
            if len(row) != len(header) or any(v == "" for v in row):
                raise ValueError(f"{path}: row {rows} does not parse: {row}")
    return rows


def read_run(run_dir, rows_per_user):
    def need(found, what):
        if found is None:
            raise ValueError(f"{run_dir}: the curator's log has no {what}")
        return found

    with open(os.path.join(run_dir, "bench.json")) as f:
        result = json.load(f)
    with open(os.path.join(run_dir, "logs", "curator.log")) as f:
        curator = f.readlines()
    training = need(last(curator, r"training (\d+) rounds: (\d+) users a round"), "'training' line")
    rounds = int(training[1].group(1))
    final = need(last(curator, rf"round {rounds}/{rounds} epsilon=([0-9.]+)"),
                 f"round {rounds}/{rounds}")
    published = need(last(curator, r"published (\d+) synthetic rows"), "'published' line")
    noise = last(curator, r"noise multiplier ([0-9.]+)")
    training_seconds = seconds(training[0], final[0])
    with open(os.path.join(run_dir, "parties", "party-1.schema.json")) as f:
        columns = [c["name"] for c in json.load(f)["columns"]]
    result.update({
        "rounds": rounds,
        "users_per_round_logged": int(training[1].group(2)),
        "epsilon_spent": float(final[1].group(1)),
        "noise_multiplier": float(noise[1].group(1)) if noise else None,
        "train_s": training_seconds,
        "rounds_per_s": round(rounds / training_seconds, 3) if training_seconds > 0 else None,
        "published_rows": int(published[1].group(1)),
        "parsed_rows": published_rows(run_dir, columns),
        "curator_peak_mb": peak_mb(run_dir, "curator"),
        "party_peak_mb": max(peak_mb(run_dir, f"party-{k + 1}") for k in range(result["parties"])),
    })
    result.update(scores(os.path.join(run_dir, "eval")))
    expected = result["users"] * rows_per_user
    failures = []
    if result["users_per_round_logged"] != result["users_per_round"]:
        failures.append(f"{result['users_per_round_logged']} users a round, asked for "
                        f"{result['users_per_round']}")
    for key in ("published_rows", "parsed_rows"):
        if result[key] != expected:
            failures.append(f"{key} {result[key]}, expected {expected}")
    if result["epsilon_spent"] > result["epsilon"] + 1e-3:
        failures.append(f"epsilon spent {result['epsilon_spent']} exceeds {result['epsilon']}")
    if failures:
        raise ValueError(f"{run_dir}: " + "; ".join(failures))
    return result


COLUMNS = [("U", "users"), ("mode", "mode"), ("ε", "epsilon"), ("users/round", "users_per_round"),
           ("rounds", "rounds"), ("ε spent", "epsilon_spent"), ("TSTR acc", "tstr_acc"),
           ("TSTR F1", "tstr_f1"), ("2-AVD", "avd_2way"), ("4-AVD", "avd_4way"),
           ("indep 4-AVD", "indep_avd_4way"), ("wall s", "wall_s"), ("rounds/s", "rounds_per_s"),
           ("peak MB curator / party", "peak_mb")]


DECIMALS = {"wall_s": 1, "rounds_per_s": 2}


def cell(key, value):
    return f"{value:.{DECIMALS.get(key, 3)}f}" if isinstance(value, float) else str(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--baseline", required=True, help="the baseline's vfsynth eval directory")
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--rows-per-user", type=int, default=2)
    args = parser.parse_args()
    try:
        baseline = scores(args.baseline)
        results = [read_run(run, args.rows_per_user) for run in args.runs]
    except (OSError, ValueError) as error:
        print(f"population_report: {error}", file=sys.stderr)
        return 1
    for run, r in zip(args.runs, results):
        r["indep_avd_4way"] = baseline["avd_4way"]
        missing = [k for _, k in COLUMNS if k != "peak_mb" and r.get(k) is None]
        if missing:
            print(f"population_report: {run}: no {', '.join(missing)}", file=sys.stderr)
            return 1
    with open(args.json, "w") as f:
        json.dump({"baseline_independent": baseline, "runs": results}, f, indent=1)
    with open(args.markdown, "w") as f:
        f.write("| " + " | ".join(h for h, _ in COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n")
        for r in results:
            peak = f"{r['curator_peak_mb']:.0f} / {r['party_peak_mb']:.0f}"
            f.write("| " + " | ".join(peak if k == "peak_mb" else cell(k, r[k]) for _, k in COLUMNS)
                    + " |\n")
        f.write(f"\nIndependent marginals of the training split: TSTR acc "
                f"{baseline['tstr_acc']:.3f}, F1 {baseline['tstr_f1']:.3f}, 2-AVD "
                f"{baseline['avd_2way']:.3f}, 4-AVD {baseline['avd_4way']:.3f}. TRTR: acc "
                f"{baseline['trtr_acc']:.3f}, F1 {baseline['trtr_f1']:.3f} (random forest, "
                f"tested on the holdout). Peak MB: the peak resident set of the curator and of "
                f"the largest party.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
