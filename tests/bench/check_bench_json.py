#!/usr/bin/env python3
"""Checks a vfsynth-bench report: well-formed JSON, every expected case, every number
present, finite and consistent. Timings are checked for presence, never for speed."""
import argparse
import json
import math
import sys


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def number(obj, key, where, positive=True):
    # proto3 JSON leaves zero values out, so only a field that may be 0 may be absent.
    if key not in obj and positive:
        fail(f"{where}: missing {key}")
    value = obj.get(key, 0)
    if isinstance(value, str):  # proto3 JSON writes int64 as a string
        try:
            value = int(value)
        except ValueError:
            fail(f"{where}: {key} is not a number: {value!r}")
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        fail(f"{where}: {key} is not a finite number: {value!r}")
    if positive and value <= 0:
        fail(f"{where}: {key} must be > 0, got {value}")
    return value


def check_breakdown(b, where):
    for key in ("total_ms", "p90_total_ms", "curator_compute_ms", "wait_ms", "party_compute_ms"):
        number(b, key, where)
    for key in ("curator_codec_ms", "party_codec_ms", "party_durability_ms", "transport_ms"):
        number(b, key, where, positive=False)
    if b["p90_total_ms"] + 1e-9 < b["total_ms"]:
        fail(f"{where}: p90 below the median")
    if b["wait_ms"] > b["p90_total_ms"] * 10:
        fail(f"{where}: wait far beyond the step time")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("markdown")
    parser.add_argument("--cases", nargs="+", required=True)
    parser.add_argument("--measurements", nargs="*", default=[])
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    for key in ("date", "host", "command", "checkpoint_dir"):
        if not report.get(key):
            fail(f"report: missing {key}")
    number(report, "cores", "report")
    cases = {c["name"]: c for c in report.get("cases", [])}
    if sorted(cases) != sorted(args.cases):
        fail(f"cases {sorted(cases)} != expected {sorted(args.cases)}")
    for name, c in cases.items():
        for key in ("parties", "batch_size", "feature_dim", "n_critic", "measured_rounds", "reference_steps",
                    "reference_threads",
                    "reference_critic_ms", "reference_generator_ms", "checkpoint_ms", "critic_ratio",
                    "generator_ratio", "round_ms"):
            number(c, key, name)
        if len(c.get("party_widths", [])) != c["parties"]:
            fail(f"{name}: {len(c.get('party_widths', []))} party widths for {c['parties']} parties")
        check_breakdown(c.get("critic", {}), f"{name}.critic")
        check_breakdown(c.get("generator", {}), f"{name}.generator")
        if abs(c["critic_ratio"] - c["critic"]["total_ms"] / c["reference_critic_ms"]) > 1e-6 * c["critic_ratio"]:
            fail(f"{name}: critic_ratio does not match its times")
        if c["mode"] == "none":
            w = c.get("wire", {})
            for key in ("rounds", "tcp_bytes", "message_bytes", "minimal_bytes", "tcp_ratio", "message_ratio"):
                number(w, key, f"{name}.wire")
            d_h, b, n = c["feature_dim"], c["batch_size"], c["n_critic"]
            minimal = sum(4 * b * (n * (d + 4 * d_h) + 2 * d + 2 * d_h) for d in c["party_widths"]) / c["parties"]
            if abs(w["minimal_bytes"] - minimal) > 1e-6 * minimal:
                fail(f"{name}: minimal payload {w['minimal_bytes']} != {minimal}")
            # Every tensor crosses, so neither count can be below the minimal payload.
            if w["message_bytes"] < minimal or w["tcp_bytes"] < w["message_bytes"]:
                fail(f"{name}: wire bytes below what the tensors need: {w}")
        elif "wire" in c:
            fail(f"{name}: wire bytes are only counted in mode none")
    measurements = {m["name"]: m for m in report.get("measurements", [])}
    if sorted(measurements) != sorted(args.measurements):
        fail(f"measurements {sorted(measurements)} != expected {sorted(args.measurements)}")
    for name, m in measurements.items():
        for key in ("parties", "records", "columns", "histograms", "cross_histograms", "align_s",
                    "measure_s", "fit_steps_per_s", "run_s", "encrypt_per_s", "sum_per_s",
                    "decrypt_per_s"):
            number(m, key, name)
        if m["cross_histograms"] > m["histograms"]:
            fail(f"{name}: more cross-party histograms than histograms")
        if m["align_s"] + m["measure_s"] > m["run_s"]:
            fail(f"{name}: alignment and measurement longer than the whole run")
    targets = report.get("targets", {})
    for key in ("vflgan_critic_ms", "vflgan_generator_ms", "max_wire_ratio", "max_dpsgd_over_none",
                "max_strict_over_none"):
        number(targets, key, "targets")
    with open(args.markdown) as f:
        tables = f.read()
    for name in list(cases) + list(measurements):
        if f"| {name} |" not in tables:
            fail(f"markdown tables lack {name}")
    print(f"bench report OK: {len(cases)} cases, {len(measurements)} measured-marginals cases")


if __name__ == "__main__":
    main()
