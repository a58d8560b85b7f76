#!/usr/bin/env python3
"""Checks a published synthetic CSV against the joint schema: exactly the schema's
columns, the expected row count, categories from the schema, numerics inside bounds.
   check_synthetic.py SYNTHETIC.csv SCHEMA.json ROWS"""
import csv
import json
import sys

path, schema_path, expected_rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = list(csv.DictReader(open(path)))
schema = json.load(open(schema_path))
assert len(rows) == expected_rows, f"{len(rows)} rows, expected {expected_rows}"
names = {c["name"] for c in schema["columns"]}
assert set(rows[0].keys()) == names, set(rows[0].keys()) ^ names
for c in schema["columns"]:
    values = [r[c["name"]] for r in rows]
    if c["type"] == "categorical":
        allowed = set(c["categories"]) | ({"?"} if c.get("nullable") else set())
        bad = [v for v in values if v not in allowed]
        assert not bad, (c["name"], bad[:3])
    else:
        for v in values:
            x = float(v)
            assert c["min"] <= x <= c["max"], (c["name"], x)
            assert c["type"] != "integer" or x == int(x), (c["name"], x)
print("schema check passed:", len(rows), "rows")
