"""Results tables in each paper's own layout (pure: a scorer's summary in, a table out).

A `PaperTable` is what `scores.json` (`tables`), `build-dataset evaluate --json` and the QA report
show: rows are models (one per evaluation; the report puts the models of one build together, as
the papers do), columns grouped as the paper groups them, each cell kept both as the number the
scorer computed and as the paper prints it (% with the paper's decimals, or a 0-2 score). `notes`
say every choice the paper leaves open and every way the figures differ from the published
scripts' (denominators, judges, bins), so a reader never has to guess.

Layouts:
- ComplexFuncBench (Table 2 of arXiv 2501.10132, per the published `print_results.py`): one group
  per domain (Hotels, Flights, Car Rental, Attraction, then any other domain of the benchmark,
  Cross) and Overall, each Success | Call Acc. | Completeness | Correctness. The paper prints
  completeness and correctness overall only; the per-domain ones are fcbench's additions, said in
  the notes.
- NESTful (Table 1 of arXiv 2409.03797v3): a group per setting ("Three-shot ICL", "One-shot ICL",
  "ReAct"), each F1 Func | F1 Param | Partial Seq. Acc. | Full Seq. Acc. | Win Rate, as fractions
  with 2 decimals (the published scorer prints 3); ReAct adds Answer Match (fcbench's: the agent's
  own final answer against the gold answer).
- CallNavi: API Routing (Easy | Medium | Hard | Macro), Parameters (AST) (Easy | Medium | Hard |
  Macro), Syntax Validity, Structural Acc., GPT Score (0-1), Election Stability, Levenshtein
  Stability; % with 1 decimal, the GPT score and the stability scores on their 0-1 scale.
- CONFETTI: AST Soft Acc. | Parameter Validity | Dialog-Act Acc. (%), then one table per
  breakdown (number of APIs, conversation length, chain length), cells AST soft accuracy with the
  number of turns in each bin in the column name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

Formatter = Callable[[Any], str]


def percent(decimals: int) -> Formatter:
    def show(value: Any) -> str:
        return "-" if value is None else f"{100 * value:.{decimals}f}"

    return show


def fraction(decimals: int) -> Formatter:
    def show(value: Any) -> str:
        return "-" if value is None else f"{value:.{decimals}f}"

    return show


@dataclass(frozen=True)
class Column:
    group: str  # "" for a column outside any group
    name: str
    key: tuple[str, ...]  # where the value sits in the summary given to the table
    show: Formatter


@dataclass
class PaperTable:
    protocol: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)  # {"model", "values", "cells"}
    notes: list[str] = field(default_factory=list)

    def add_row(self, model: str, summary: Mapping[str, Any]) -> None:
        values = [_lookup(summary, column.key) for column in self.columns]
        self.rows.append({"model": model, "values": values,
                          "cells": [column.show(value) for column, value in zip(self.columns, values)]})

    def to_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "title": self.title,
                "columns": [{"group": c.group, "name": c.name} for c in self.columns],
                "rows": self.rows, "notes": self.notes}


def _lookup(summary: Mapping[str, Any], key: Sequence[str]) -> Any:
    value: Any = summary
    for part in key:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def merge_tables(tables: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tables (as JSON) of one protocol and title from several evaluations as one table each, rows
    (models) in the order given; notes kept once each (the report's view of a build)."""
    merged: dict[tuple[str, str, tuple[tuple[str, str], ...]], dict[str, Any]] = {}
    for table in tables:
        columns = tuple((column["group"], column["name"]) for column in table["columns"])
        key = (table["protocol"], table["title"], columns)
        into = merged.setdefault(key, {**table, "rows": [], "notes": []})
        into["rows"].extend(table["rows"])
        into["notes"].extend(note for note in table["notes"] if note not in into["notes"])
    return list(merged.values())


# ----------------------------------------------------------------------------- ComplexFuncBench
COMPLEXFUNCBENCH_DOMAINS = ("Hotels", "Flights", "Car Rental", "Attraction")
CROSS = "Cross"
OVERALL = "Overall"
_DOMAIN_SPELLINGS = {"hotels": "Hotels", "hotel": "Hotels", "flights": "Flights", "flight": "Flights",
                     "car-rental": "Car Rental", "car rental": "Car Rental", "car_rental": "Car Rental",
                     "attraction": "Attraction", "attractions": "Attraction", "cross": CROSS}


def complexfuncbench_domain(domain: str) -> str:
    """The paper's domain name of a sample's domain (`Car-Rental` and `car-rental` are Car Rental;
    a domain made of several joined with `+` is Cross); other domains keep their name, capitalised."""
    if "+" in domain:
        return CROSS
    known = _DOMAIN_SPELLINGS.get(domain.strip().lower())
    return known or domain.strip().replace("-", " ").title()


def complexfuncbench_domain_figures(by_domain: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The scorer's per-domain figures regrouped under the paper's domain names (counts merged:
    success and judge scores weighted by samples, call accuracy by gold calls is not recoverable
    from shares, so a merged domain's call accuracy is weighted by samples and says so)."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for domain, figures in by_domain.items():
        grouped.setdefault(complexfuncbench_domain(domain), []).append(figures)
    out: dict[str, dict[str, Any]] = {}
    for name, parts in grouped.items():
        n = sum(part.get("n", 0) for part in parts)
        merged: dict[str, Any] = {"n": n}
        for key in ("success_rate", "call_accuracy", "completeness", "correctness"):
            merged[key] = (sum(part.get(key, 0.0) * part.get("n", 0) for part in parts) / n) if n else None
        out[name] = merged
    return out


def complexfuncbench_table(model: str, summary: Mapping[str, Any], notes: Sequence[str] = ()) -> PaperTable:
    domains = complexfuncbench_domain_figures(summary.get("by_domain") or {})
    extra = sorted(d for d in domains if d not in (*COMPLEXFUNCBENCH_DOMAINS, CROSS))
    order = [d for d in COMPLEXFUNCBENCH_DOMAINS if d in domains] + extra + ([CROSS] if CROSS in domains else [])
    metrics = (("Success", "success_rate", percent(2)), ("Call Acc.", "call_accuracy", percent(2)),
               ("Completeness", "completeness", fraction(2)), ("Correctness", "correctness", fraction(2)))
    columns = [Column(domain, name, ("domains", domain, key), show) for domain in order for name, key, show in metrics]
    columns += [Column(OVERALL, name, ("overall", key), show) for name, key, show in metrics]
    table_notes = ["Success and Call Acc. in %, Completeness and Correctness on the 0-2 scale, as the paper.",
                   "The paper prints Completeness and Correctness overall only; the per-domain ones are fcbench's.",
                   "Denominators: the samples evaluated (print_results.py hard-codes 150 per domain, 400 for Cross, "
                   "1,000 overall); Call Acc. = matched calls / gold calls (micro)."]
    if extra:
        table_notes.append(f"Domains outside the paper's: {', '.join(extra)}.")
    table = PaperTable("complexfuncbench", "ComplexFuncBench: results per domain (the paper's Table 2)", columns,
                       notes=[*table_notes, *notes])
    table.add_row(model, {"domains": domains, "overall": summary})
    return table


# ------------------------------------------------------------------------------------- NESTful
NESTFUL_METRICS = (("F1 Func", "f1_func"), ("F1 Param", "f1_param"), ("Partial Seq. Acc.", "partial_acc"),
                   ("Full Seq. Acc.", "full_acc"), ("Win Rate", "win_rate"))
_SHOT_NAMES = {1: "One-shot ICL", 2: "Two-shot ICL", 3: "Three-shot ICL"}


def nestful_setting(protocol: str, shots: int = 0) -> str:
    if protocol == "nestful-react":
        return "ReAct"
    return _SHOT_NAMES.get(shots, f"{shots}-shot ICL")


def nestful_table(model: str, summary: Mapping[str, Any], setting: str, notes: Sequence[str] = ()) -> PaperTable:
    columns = [Column(setting, name, (key,), fraction(2)) for name, key in NESTFUL_METRICS]
    react = setting == "ReAct"
    if react:
        columns.append(Column(setting, "Answer Match", ("answer_match",), fraction(2)))
    table = PaperTable("nestful-react" if react else "nestful-icl", f"NESTful: {setting} (the paper's Table 1 layout)",
                       columns, notes=["Fractions with 2 decimals (NESTful's scorer prints 3)."
                                       + (" Answer Match is fcbench's: the agent's own Final Answer against the gold "
                                          "answer." if react else ""), *notes])
    table.add_row(model, summary)
    return table


# ------------------------------------------------------------------------------------ CallNavi
def callnavi_table(model: str, figures: Mapping[str, Any], notes: Sequence[str] = ()) -> PaperTable:
    difficulty_columns = [("Easy", ("by_difficulty", "easy")), ("Medium", ("by_difficulty", "medium")),
                          ("Hard", ("by_difficulty", "hard")), ("Macro", ("macro",))]
    columns = [Column("API Routing", name, (*where, "routing_exact_match"), percent(1)) for name, where in difficulty_columns]
    columns += [Column("Parameters (AST)", name, (*where, "ast_exact_match"), percent(1)) for name, where in difficulty_columns]
    columns += [Column("", "Syntax Validity", ("macro", "syntax_validity"), percent(1)),
                Column("", "Structural Acc.", ("macro", "structural_accuracy"), percent(1)),
                Column("", "GPT Score", ("macro", "gpt_score"), fraction(3)),
                Column("", "Election Stability", ("macro", "election_stability"), fraction(3)),
                Column("", "Levenshtein Stability", ("macro", "levenshtein_stability"), fraction(3))]
    table = PaperTable("callnavi", "CallNavi: routing and parameters per difficulty, with stability", columns,
                       notes=["% with 1 decimal; GPT score and stability scores on their 0-1 scale. Macro = the "
                              "mean of the difficulties' figures; the micro overall (every output alike, "
                              "Judge_para.py's 'overall') is in summary.overall.",
                              "Judge_para.py divides by 456 / 188 / 85; fcbench by the questions actually "
                              "scored (the published files hold 456 / 187 / 86).", *notes])
    table.add_row(model, figures)
    return table


# ------------------------------------------------------------------------------------ CONFETTI
def confetti_tables(model: str, summary: Mapping[str, Any], notes: Sequence[str] = ()) -> list[PaperTable]:
    main = PaperTable("confetti", "CONFETTI: function calling and response quality", [
        Column("", "AST Soft Acc.", ("ast_soft_accuracy",), percent(2)),
        Column("", "Parameter Validity", ("parameter_validity_rate",), percent(2)),
        Column("", "Dialog-Act Acc.", ("dialog_act_accuracy",), percent(2)),
    ], notes=["% with 2 decimals. Parameter validity over the calls with a right function name only.", *notes])
    main.add_row(model, summary)
    tables = [main]
    for key, title in (("by_api_count", "AST soft accuracy by number of available APIs"),
                       ("by_turn_count", "AST soft accuracy by conversation length (turns before the evaluated one)"),
                       ("by_chain_bin", "AST soft accuracy by chain length (calls in the turn)")):
        bins = summary.get(key) or {}
        columns = [Column("", f"{label} (n={figures.get('n', 0)})", (key, label, "ast_soft_accuracy"), percent(2))
                   for label, figures in bins.items()]
        table = PaperTable("confetti", f"CONFETTI: {title}", columns,
                           notes=["Bin edges are fcbench's (CONFETTI does not publish them)."])
        table.add_row(model, summary)
        tables.append(table)
    return tables
