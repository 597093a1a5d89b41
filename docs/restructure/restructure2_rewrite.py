#!/usr/bin/env python3
"""Rewrite module paths (audit.x.y) and file paths (src/audit/x/y.py) from the flat layout to the
restructure layout (issue 20). Usage: restructure_rewrite.py FILE... (rewrites in place).
Safe to re-run: one pass, longest old name first, and a new name never matches an old one.
The learned commands (`-m audit.fit` etc.) are left alone: their old modules forward."""
import re
import sys

# old dotted module -> new dotted module (packages and modules).
MODULES = {
    "audit.backends": "audit.llm.backends",
    "audit.engine": "audit.llm.engine",
    "audit.preflight": "audit.llm.preflight",
    "audit.store": "audit.llm.store",
    "audit.intervals": "audit.stats.intervals",
    "audit.sweeps": "audit.tracking.sweeps",
    "audit.tracking": "audit.tracking.mlflow",
    "audit.stages": "audit.methods.rasch.stages",
    "audit.publish": "audit.methods.rasch.report.publish",
    "audit.report": "audit.methods.rasch.report.summary",
    "audit.report_html": "audit.methods.rasch.report.html",
    "audit.plots": "audit.methods.rasch.report.plots",
    "audit.reading": "audit.methods.rasch.report.reading",
    "audit.run_metrics": "audit.methods.rasch.report.metrics",
    "audit.judge": "audit.methods.rasch.judge",
    "audit.irt": "audit.methods.rasch.irt",
    "audit.methods.rasch": "audit.methods.rasch.method",
    "audit.fit": "audit.cli.fit",
    "audit.iat": "audit.cli.iat",
    "audit.judge_eval": "audit.cli.judge_eval",
    "audit.runs": "audit.cli.runs",
    "audit.params": "audit.cli.params",
    "audit.plan": "audit.cli.plan",
    "audit.power": "audit.methods.rasch.power",
    "audit.methods.counterfactual_design_tests": "audit.methods.counterfactual.design_tests",
    "audit.methods.iat": "audit.methods.iat.design",
    "audit.methods.iat_method": "audit.methods.iat.method",
    "audit.methods.iat_parse": "audit.methods.iat.score",
    "audit.methods.iat_stats": "audit.methods.iat.analyse",
    "audit.methods.iat_plots": "audit.methods.iat.report",
    "audit.methods.iat_schemas": "audit.methods.iat.schemas",
    "audit.methods.dif": "audit.methods.dif.method",
    "audit.methods.dif_run": "audit.methods.dif.run",
    "audit.methods.dif_items": "audit.methods.dif.design",
    "audit.methods.dif_extract": "audit.methods.dif.score",
    "audit.methods.dif_stats": "audit.methods.dif.analyse",
    "audit.methods.dif_plots": "audit.methods.dif.report",
    "audit.methods.dif_schemas": "audit.methods.dif.schemas",
    "audit.methods.dif_compare": "audit.methods.dif.compare",
    "audit.methods.counterfactual": "audit.methods.counterfactual.method",
    "audit.methods.counterfactual_templates": "audit.methods.counterfactual.design",
    "audit.methods.text_metrics": "audit.methods.counterfactual.score",
    "audit.methods.counterfactual_stats": "audit.methods.counterfactual.analyse",
    "audit.methods.counterfactual_plots": "audit.methods.counterfactual.report",
    "audit.methods.counterfactual_schemas": "audit.methods.counterfactual.schemas",
}
# Commands users learned: `python -m audit.fit` etc. keep working through forwarders, so a
# module name right after "-m " or inside quotes (subprocess argv) is left as it is.
COMMANDS = {"audit.plan", "audit.fit", "audit.iat", "audit.judge_eval", "audit.runs", "audit.params",
            "audit.stages"}
PACKAGE_FILES = {"audit.backends", "audit.judge", "audit.irt"}  # folders, not .py files

_names = sorted(MODULES, key=len, reverse=True)
DOTTED = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in _names) + r")(?!\w)")


def _path(dotted: str) -> str:
    return "src/" + dotted.replace(".", "/")


FILE_MAP = {}
for old, new in MODULES.items():
    if old in PACKAGE_FILES:
        FILE_MAP[_path(old) + "/"] = _path(new) + "/"
        FILE_MAP[_path(old)] = _path(new)
    else:
        FILE_MAP[_path(old) + ".py"] = _path(new) + ".py"
FILE_MAP["src/audit/templates"] = "src/audit/methods/rasch/report/templates"
_paths = sorted(FILE_MAP, key=len, reverse=True)
PATHS = re.compile(r"(?<![\w/.])(" + "|".join(re.escape(p) for p in _paths) + r")(?![\w])")

QUOTES = "\"'`"
_prefixes = {n.rsplit(".", k)[0] for n in MODULES.values() for k in range(n.count("."))}
_new = sorted({n for n in set(MODULES.values()) | _prefixes if n not in MODULES and n.count(".") > 1},
              key=len, reverse=True)
NEW_DOTTED = re.compile("(" + "|".join(re.escape(n) for n in _new) + r")(?!\w)")
NEW_NAMES = set(MODULES.values())
IMPORTED = re.compile(r" import (\w+)")
_newp = sorted((p for p in FILE_MAP.values() if p not in FILE_MAP), key=len, reverse=True)
NEW_PATHS = re.compile("(" + "|".join(re.escape(p) for p in _newp) + r")(?!\w)")

# `from audit import tracking` style imports of moved modules.
FROM_AUDIT = re.compile(r"^(\s*)from audit import ([\w, ]+?)(\s*#.*)?$", re.M)
FROM_METHODS = re.compile(r"^(\s*)from audit\.methods import ([\w, ]+?)(\s*#.*)?$", re.M)


def _from_import(match: re.Match, prefix: str) -> str:
    indent, names = match.group(1), [n.strip() for n in match.group(2).split(",")]
    lines, kept = [], []
    for name in names:
        old = f"{prefix}.{name}"
        if old in MODULES:
            parent, _, leaf = MODULES[old].rpartition(".")
            alias = "" if leaf == name else f" as {name}"
            lines.append(f"{indent}from {parent} import {leaf}{alias}")
        else:
            kept.append(name)
    if kept:
        lines.insert(0, f"{indent}from {prefix} import {', '.join(kept)}")
    return "\n".join(lines) + (match.group(3) or "")


def rewrite(text: str) -> str:
    def dotted(m: re.Match) -> str:
        name = m.group(1)
        before = text[max(0, m.start() - 3):m.start()]
        after = text[m.end():m.end() + 1]
        if NEW_DOTTED.match(text, m.start()):  # already in the new layout
            return name
        imported = IMPORTED.match(text, m.end())
        if imported and f"{name}.{imported.group(1)}" in NEW_NAMES:  # from <new package> import x
            return name
        if name in COMMANDS and (before.endswith("-m ")
                                 or (before[-1:] in QUOTES and after in QUOTES)):
            return name
        return MODULES[name]

    text = DOTTED.sub(dotted, text)
    text = PATHS.sub(lambda m: m.group(1) if NEW_PATHS.match(text, m.start())
                     else FILE_MAP[m.group(1)], text)
    text = FROM_AUDIT.sub(lambda m: _from_import(m, "audit"), text)
    text = FROM_METHODS.sub(lambda m: _from_import(m, "audit.methods"), text)
    return text


if __name__ == "__main__":
    for file in sys.argv[1:]:
        with open(file, encoding="utf-8") as handle:
            old = handle.read()
        new = rewrite(old)
        if new != old:
            with open(file, "w", encoding="utf-8") as handle:
                handle.write(new)
            print("rewrote", file)
