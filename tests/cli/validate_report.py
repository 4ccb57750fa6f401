#!/usr/bin/env python3
"""Validates a `sightline analyze --format json` report against the field
table of docs/report-schema.md (the documented contract).

usage: validate_report.py SCHEMA_MD REPORT_JSON [--min-findings N]
Exit 0 when every documented field is present with its documented type in
every element of the arrays it belongs to; prints one line per problem.
"""
import json
import re
import sys


def load_fields(md_path):
    fields = []
    for line in open(md_path, encoding="utf-8"):
        m = re.match(r"^\|\s*([a-z_0-9.\[\]]+)\s*\|\s*([a-z|\\]+)\s*\|", line)
        if m and m.group(1) != "field":
            fields.append((m.group(1), m.group(2).replace("\\", "")))
    return fields


def type_ok(value, typ):
    for t in typ.split("|"):
        if t == "string" and isinstance(value, str):
            return True
        if t == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if t == "bool" and isinstance(value, bool):
            return True
        if t == "object" and isinstance(value, dict):
            return True
        if t == "array" and isinstance(value, list):
            return True
        if t == "null" and value is None:
            return True
    return False


def values_at(doc, path):
    """Yields (concrete_path, value) for every match; missing leaves -> (path, KeyError)."""
    parts = re.findall(r"[a-z_0-9]+|\[\]", path)
    nodes = [("", doc)]
    for part in parts:
        nxt = []
        for where, node in nodes:
            if part == "[]":
                if isinstance(node, list):
                    nxt.extend((f"{where}[{i}]", v) for i, v in enumerate(node))
                else:
                    nxt.append((where, KeyError("not an array")))
            elif isinstance(node, dict):
                nxt.append((f"{where}.{part}" if where else part,
                            node[part] if part in node else KeyError("missing")))
            else:
                nxt.append((where, KeyError("parent is not an object")))
        nodes = [(w, v) for w, v in nxt]
        if any(isinstance(v, KeyError) for _, v in nodes):
            return nodes
    return nodes


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    fields = load_fields(sys.argv[1])
    min_findings = 0
    if "--min-findings" in sys.argv:
        min_findings = int(sys.argv[sys.argv.index("--min-findings") + 1])
    doc = json.load(open(sys.argv[2], encoding="utf-8"))
    problems = []
    if len(fields) < 100:
        problems.append(f"only {len(fields)} documented fields parsed from {sys.argv[1]}")
    if doc.get("schema") != "sightline.report.v1":
        problems.append(f"schema is {doc.get('schema')!r}")
    checked = 0
    for path, typ in fields:
        for where, value in values_at(doc, path):
            if isinstance(value, KeyError):
                problems.append(f"{where or path}: {value.args[0]} (documented as {typ})")
            elif not type_ok(value, typ):
                problems.append(f"{where}: {type(value).__name__} {value!r:.40} is not {typ}")
            else:
                checked += 1
    if len(doc.get("findings", [])) < min_findings:
        problems.append(f"{len(doc.get('findings', []))} findings, expected >= {min_findings}")
    for p in problems[:40]:
        print("schema problem:", p)
    print(f"validate_report: {len(fields)} documented fields, {checked} values checked, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
