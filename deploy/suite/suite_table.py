#!/usr/bin/env python3
"""The dataset x mode table of a `deploy/quality.sh --suite` directory, in markdown.

For each suite table (deploy/suite/tables.tsv) and each mode run under DIR/<table>/,
one row of means over seeds (DIR/<table>/<mode>/summary.json), then the
independent-marginals baseline (DIR/<table>/baseline.json). The last column checks the
suite's targets for a DP mode at ε ≥ 10 against the same table's `none` run: random-forest TSTR F1
at least 75 % of TRTR's ("F1"), the same from the other parties' columns only ("cross"),
pair trends within 0.03 of none's ("pairs"), total difference at most 2.5 times none's
("total"). F1 is binary for a two-class label, macro otherwise. Below the table: the
Spearman rank correlation, over every run of the suite, between the joint summary score
and the federated one (the mean of the parties' scores of the table on their own data),
and between the joint one and the curator's score against the released statistics (runs
that released none are left out): whether each ranks runs as the joint table does.

  deploy/suite/suite_table.py DIR
"""
import json
import math
import os
import statistics
import sys

SUITE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    with open(path) as f:
        return json.load(f)


def epsilon_of(name):
    """A mode directory's epsilon ("dpsgd-10" -> 10.0); infinite for one without (none)."""
    return float(name.partition("-")[2] or "inf")


def mode_order(name):
    privacy = name.partition("-")[0]
    return (privacy != "none", -epsilon_of(name), privacy)


def targets(mean, none):
    if none is None:
        return "no none run"
    checks = [
        ("F1", mean["tstr_f1"] >= 0.75 * mean["trtr_f1"]),
        ("cross", mean["cross_party_tstr_f1"] >= 0.75 * mean["cross_party_trtr_f1"]),
        ("pairs", mean["pair_trends"] >= none["pair_trends"] - 0.03),
        ("total", mean["total_difference"] <= 2.5 * none["total_difference"]),
    ]
    missed = [name for name, ok in checks if not ok]
    return "all met" if not missed else "missed: " + ", ".join(missed)


def ranks(values):
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    """Spearman's rho: Pearson's correlation of the ranks; NaN for fewer than 2 pairs or a constant side."""
    try:
        return statistics.correlation(ranks(xs), ranks(ys))
    except statistics.StatisticsError:
        return float("nan")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    out = sys.argv[1]
    rows = ["| table (rows × columns, parties, label) | mode | seeds | RF total difference | TSTR / TRTR F1 "
            "| other parties' columns: TSTR / TRTR F1 | column shapes | pair trends | targets |",
            "|---|---|---|---|---|---|---|---|---|"]
    scores = {"federated_summary_score": ([], []), "released_fidelity_score": ([], [])}
    with open(os.path.join(SUITE, "tables.tsv")) as f:
        suite = [line.split() for line in f if line.strip() and not line.startswith("#")]
    for name, _, _, label in suite:
        table_dir = os.path.join(out, name)
        modes = sorted((m for m in os.listdir(table_dir) if os.path.isfile(os.path.join(table_dir, m, "summary.json")))
                       if os.path.isdir(table_dir) else [], key=mode_order)
        if not modes:
            continue
        with open(os.path.join(out, "tables", name + ".csv")) as f:
            records = sum(1 for _ in f) - 1
        columns = len(load(os.path.join(SUITE, name + ".schema.json"))["columns"])
        parties = len(load(os.path.join(SUITE, name + ".parties.json"))["parties"])
        title = f"{name} ({records} × {columns}, {parties}, {label})"
        none = load(os.path.join(table_dir, "none", "summary.json"))["mean"] if "none" in modes else None
        for mode in modes:
            summary = load(os.path.join(table_dir, mode, "summary.json"))
            m = summary["mean"]
            for run in summary["runs"]:
                for key, (joint, other) in scores.items():
                    score = run.get(key)
                    if score is not None and not math.isnan(score):
                        joint.append(run["summary_score"])
                        other.append(score)
            rows.append(
                f"| {title} | {mode.replace('-', ' ε=')} | {summary['seeds']} | {m['total_difference']:.3f} "
                f"| {m['tstr_f1']:.3f} / {m['trtr_f1']:.3f} "
                f"| {m['cross_party_tstr_f1']:.3f} / {m['cross_party_trtr_f1']:.3f} "
                f"| {m['column_shapes']:.3f} | {m['pair_trends']:.3f} "
                f"| {targets(m, none) if mode != 'none' and epsilon_of(mode) >= 10 else '-'} |")
        baseline_path = os.path.join(table_dir, "baseline.json")
        if os.path.exists(baseline_path):
            seeds = load(baseline_path)["seeds"]
            b = {key: sum(s["baseline"][key] for s in seeds) / len(seeds)
                 for key in ("total_difference", "tstr_f1", "cross_party_tstr_f1", "column_shapes", "pair_trends")}
            rows.append(f"| {title} | independent marginals | {len(seeds)} | {b['total_difference']:.3f} "
                        f"| {b['tstr_f1']:.3f} | {b['cross_party_tstr_f1']:.3f} "
                        f"| {b['column_shapes']:.3f} | {b['pair_trends']:.3f} | - |")
    print("\n".join(rows))
    print()
    for key, name in (("federated_summary_score", "the federated summary score"),
                      ("released_fidelity_score", "the released-statistics score")):
        joint, other = scores[key]
        print(f"Spearman ρ between the joint summary score and {name} over {len(joint)} runs: "
              f"{spearman(joint, other):.3f}")


if __name__ == "__main__":
    main()
