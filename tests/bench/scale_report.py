"""Reads the scale case's runs (one directory per K) and writes their figures.

Per run, from the curator's log: alignment (the last registration to 'aligned'), rounds
per second (the 'training' line to the last round), publication (the last round to the
privacy statement written after the table and its released-statistics report); from each party's log, the data load (its start to its registration); and
the peak resident set of every daemon (GNU time's %M, kilobytes, tests/bench/scale.sh).
  scale_report.py RUN_DIR... --json OUT.json --markdown OUT.md [--expect-rows N]
                  [--max-party-mb M] [--max-curator-mb M]
Exits 1 naming the run and the figure when a run is incomplete or a bound is exceeded.
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys

STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)")


def stamp(line):
    match = STAMP.match(line)
    return datetime.datetime.fromisoformat(match.group(1)) if match else None


def last(lines, pattern, before=None):
    """The time and match of the last line matching `pattern` (before the time `before`)."""
    found = None
    for line in lines:
        when = stamp(line)
        match = re.search(pattern, line)
        if when is None or match is None or (before is not None and when > before):
            continue
        found = (when, match)
    return found


def seconds(a, b):
    return round((b - a).total_seconds(), 2)


def peak_mb(run_dir, name):
    """The daemon's peak resident set in MB, as scale.sh's --wrap launcher recorded it."""
    path = os.path.join(run_dir, "rss", f"{name}.kb")
    try:
        with open(path) as f:
            return round(int(f.read().split()[-1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        raise ValueError(f"{path}: no peak resident set (was the daemon wrapped?)")


def read_run(run_dir):
    """The run's figures, or raises ValueError naming what is missing."""
    def need(found, what):
        if found is None:
            raise ValueError(f"{run_dir}: the curator's log has no {what}")
        return found

    with open(os.path.join(run_dir, "logs", "curator.log")) as f:
        curator = f.readlines()
    aligned = need(last(curator, r"aligned (\d+) records held by all (\d+) parties"),
                   "'aligned' line")
    registered = need(last(curator, r"party \S+ registered:", before=aligned[0]),
                      "registration")
    training = need(last(curator, r"training (\d+) rounds"), "'training' line")
    rounds = int(training[1].group(1))
    final = need(last(curator, rf"round {rounds}/{rounds} "), f"round {rounds}/{rounds}")
    published = need(last(curator, r"published (\d+) synthetic rows"), "'published' line")
    # The privacy statement is written after the table and its released-statistics report.
    published_end = last(curator, r"wrote its privacy statement") or published
    parties = int(aligned[1].group(2))

    loads = []
    for log in sorted(glob.glob(os.path.join(run_dir, "logs", "party-*.log"))):
        with open(log) as f:
            lines = f.readlines()
        start = stamp(lines[0]) if lines else None
        joined = last(lines, r"registered for run")
        if start is None or joined is None:
            raise ValueError(f"{log}: no start or registration line")
        loads.append(seconds(start, joined[0]))
    if len(loads) != parties:
        raise ValueError(f"{run_dir}: {len(loads)} party logs for {parties} parties")

    party_mb = [peak_mb(run_dir, f"party-{p + 1}") for p in range(parties)]
    training_seconds = (final[0] - training[0]).total_seconds()
    return {
        "parties": parties,
        "records": int(aligned[1].group(1)),
        "published_rows": int(published[1].group(1)),
        "party_load_s": max(loads),
        "align_s": seconds(registered[0], aligned[0]),
        "rounds": rounds,
        "rounds_per_s": round(rounds / training_seconds, 3) if training_seconds > 0 else None,
        "publish_s": seconds(final[0], published_end[0]),
        "curator_peak_mb": peak_mb(run_dir, "curator"),
        "party_peak_mb": max(party_mb),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--expect-rows", type=int)
    parser.add_argument("--max-party-mb", type=float)
    parser.add_argument("--max-curator-mb", type=float)
    args = parser.parse_args()
    try:
        results = [read_run(run) for run in args.runs]
    except (OSError, ValueError) as error:
        print(f"scale_report: {error}", file=sys.stderr)
        return 1
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    header = ["records", "K", "party load s", "align s", "rounds/s", "publish s",
              "curator peak MB", "party peak MB"]
    keys = ["records", "parties", "party_load_s", "align_s", "rounds_per_s", "publish_s",
            "curator_peak_mb", "party_peak_mb"]
    with open(args.markdown, "w") as f:
        f.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        for r in results:
            f.write("| " + " | ".join(str(r[k]) for k in keys) + " |\n")
    failures = []
    for run, r in zip(args.runs, results):
        if args.expect_rows is not None:
            for key in ("records", "published_rows"):
                if r[key] != args.expect_rows:
                    failures.append(f"{run}: {key} {r[key]}, expected {args.expect_rows}")
        if args.max_party_mb is not None and r["party_peak_mb"] > args.max_party_mb:
            failures.append(f"{run}: a party peaked at {r['party_peak_mb']} MB "
                            f"(bound {args.max_party_mb})")
        if args.max_curator_mb is not None and r["curator_peak_mb"] > args.max_curator_mb:
            failures.append(f"{run}: the curator peaked at {r['curator_peak_mb']} MB "
                            f"(bound {args.max_curator_mb})")
    for failure in failures:
        print(f"scale_report: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
