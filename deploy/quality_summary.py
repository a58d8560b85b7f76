#!/usr/bin/env python3
"""Mean and spread over seeds of the metrics deploy/quality.sh collects.

Reads RUN/metrics.json and RUN/train-seconds of each run directory, and the repeated
evaluations of the same table in RUN/eval-*/metrics.json (deploy/quality.sh
--eval-repeats); cross-party pair trends are the mean pair-trend score over column
pairs held by two different parties (the party layout JSON names who holds what).
Each party's own score of the table (RUN/party-*/metrics.json, vfsynth eval
--party-config) gives the federated summary score, their mean; the curator's score of it
against the statistics the run released (RUN/synthetic.released.json) the released-fidelity
score. Prints JSON with a
markdown table row, whose last cell is the total difference averaged over each table's
evaluations.
"""
import argparse
import glob
import json
import os
import statistics


def random_forest(metrics):
    return next(x for x in metrics["utility"]["models"] if x["model"] == "random_forest")


def f1_key(metrics):
    """The F1 that scores the target: binary for two classes, macro otherwise."""
    return "binary_f1" if metrics["utility"]["num_classes"] == 2 else "macro_f1"


def forest_total_difference(metrics_path):
    with open(metrics_path) as f:
        return random_forest(json.load(f))["total_difference"]


def cross_party_pair_trends(metrics, owner):
    scores = []
    for pair in metrics["fidelity"]["pairs"]:
        a, b = pair["columns"].split(" / ")
        if owner.get(a) is not None and owner.get(b) is not None and owner[a] != owner[b]:
            score = pair["score"]  # undefined (NaN, written as null) pairs are skipped
            if score is not None and score == score:  # as in the pair-trend mean
                scores.append(score)
    return statistics.fmean(scores) if scores else float("nan")


def federated_summary_score(run):
    """The mean of the parties' own summary scores; NaN without any."""
    scores = []
    for path in sorted(glob.glob(os.path.join(run, "party-*", "metrics.json"))):
        with open(path) as f:
            scores.append(json.load(f)["summary_score"])
    return statistics.fmean(scores) if scores else float("nan")


def released_fidelity_score(run):
    """The curator's score against the run's released statistics; NaN where it released none."""
    path = os.path.join(run, "synthetic.released.json")
    if not os.path.exists(path):
        return float("nan")
    with open(path) as f:
        return json.load(f).get("score", 0.0)


def run_metrics(run, owner):
    with open(os.path.join(run, "metrics.json")) as f:
        m = json.load(f)
    forest = random_forest(m)
    with open(os.path.join(run, "train-seconds")) as f:
        seconds = float(f.read())
    evaluations = [forest["total_difference"]] + [
        forest_total_difference(p) for p in sorted(glob.glob(os.path.join(run, "eval-*", "metrics.json")))]
    cross = m["cross_party_utility"]["models"][0]
    f1 = f1_key(m)
    return {
        "total_difference": forest["total_difference"],
        "tstr_f1": forest["tstr"][f1],
        "trtr_f1": forest["trtr"][f1],
        # The label from the other parties' columns only (vfsynth eval --parties).
        "cross_party_tstr_f1": cross["tstr"][f1],
        "cross_party_trtr_f1": cross["trtr"][f1],
        "tstr_accuracy": forest["tstr"]["accuracy"],
        "trtr_accuracy": forest["trtr"]["accuracy"],
        "column_shapes": m["fidelity"]["column_shapes"],
        "pair_trends": m["fidelity"]["column_pair_trends"],
        "summary_score": m["summary_score"],
        # What the parties can compute without the joint table (vfsynth eval --party-config).
        "federated_summary_score": federated_summary_score(run),
        # What the curator computes from the released statistics alone (no ε beyond the run's).
        "released_fidelity_score": released_fidelity_score(run),
        "cross_party_pair_trends": cross_party_pair_trends(m, owner),
        "avd_2way": m["fidelity"]["avd_2way"],
        "dcr_share_closer_to_train": m["privacy"]["dcr"]["share_closer_to_train"],
        "train_seconds": seconds,
        # The same table evaluated at other eval seeds (subsample, split, forest): the
        # mean is the table's figure with less of the evaluation's own noise.
        "evaluations": len(evaluations),
        "total_difference_over_evaluations": statistics.fmean(evaluations),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layout", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    with open(args.layout) as f:
        owner = {c: p["name"] for p in json.load(f)["parties"] for c in p["columns"]}
    runs = [run_metrics(r, owner) for r in args.runs]
    summary = {"label": args.label, "seeds": len(runs), "runs": runs, "mean": {}, "spread": {}}
    for key in runs[0]:
        values = [r[key] for r in runs]
        summary["mean"][key] = statistics.fmean(values)
        summary["spread"][key] = [min(values), max(values)]
    cells = [args.label, str(len(runs))]
    for key in ["total_difference", "column_shapes", "pair_trends", "cross_party_pair_trends",
                "avd_2way", "dcr_share_closer_to_train", "train_seconds",
                "total_difference_over_evaluations"]:
        lo, hi = summary["spread"][key]
        fmt = "{:.0f}" if key == "train_seconds" else "{:.3f}"
        cells.append(f"{fmt.format(summary['mean'][key])} ({fmt.format(lo)}–{fmt.format(hi)})")
    summary["markdown_row"] = "| " + " | ".join(cells) + " |"
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
