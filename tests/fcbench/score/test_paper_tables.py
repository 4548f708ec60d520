"""The papers' table layouts (fcbench.score.paper_tables): columns as each paper groups them, cells
as each paper prints them, and the report's merge of several models' rows."""

from __future__ import annotations

import pytest

from fcbench.score.paper_tables import (callnavi_table, complexfuncbench_domain, complexfuncbench_domain_figures,
                                        complexfuncbench_table, confetti_tables, merge_tables, nestful_setting,
                                        nestful_table)


def test_complexfuncbench_domains_take_the_papers_names():
    assert [complexfuncbench_domain(d) for d in ("hotels", "Car-Rental", "car-rental", "attractions", "Flights",
                                                 "flights+hotels", "Cross", "taxi")] == [
        "Hotels", "Car Rental", "Car Rental", "Attraction", "Flights", "Cross", "Cross", "Taxi"]


def test_complexfuncbench_merged_domains_weigh_by_samples():
    merged = complexfuncbench_domain_figures({
        "flights+hotels": {"n": 1, "success_rate": 1.0, "call_accuracy": 1.0, "completeness": 2.0, "correctness": 2.0},
        "hotels+taxi": {"n": 3, "success_rate": 0.0, "call_accuracy": 0.5, "completeness": 1.0, "correctness": 0.0}})
    # Cross: success (1*1 + 3*0) / 4 = 0.25; call accuracy (1*1 + 3*0.5) / 4 = 0.625
    assert merged == {"Cross": {"n": 4, "success_rate": 0.25, "call_accuracy": 0.625, "completeness": 1.25,
                                "correctness": 0.5}}


def test_complexfuncbench_table_orders_domains_as_the_paper_and_prints_percent_and_0_2():
    summary = {"n": 3, "success_rate": 1 / 3, "call_accuracy": 0.5, "completeness": 1.5, "correctness": 2.0,
               "by_domain": {"taxi": {"n": 1, "success_rate": 0.0, "call_accuracy": 0.0, "completeness": 1.0,
                                      "correctness": 2.0},
                             "flights+hotels": {"n": 1, "success_rate": 0.0, "call_accuracy": 0.5, "completeness": 1.0,
                                                "correctness": 2.0},
                             "hotels": {"n": 1, "success_rate": 1.0, "call_accuracy": 1.0, "completeness": 2.5,
                                        "correctness": 2.0}}}
    table = complexfuncbench_table("m", summary).to_json()
    assert list(dict.fromkeys(c["group"] for c in table["columns"])) == ["Hotels", "Taxi", "Cross", "Overall"]
    assert table["rows"][0]["cells"][:4] == ["100.00", "100.00", "2.50", "2.00"]
    assert table["rows"][0]["cells"][-4:] == ["33.33", "50.00", "1.50", "2.00"]
    assert any("outside the paper's: Taxi" in note for note in table["notes"])


def test_nestful_table_groups_by_setting():
    assert nestful_setting("nestful-icl", 3) == "Three-shot ICL" and nestful_setting("nestful-icl", 1) == "One-shot ICL"
    table = nestful_table("m", {"f1_func": 0.919, "f1_param": 0.5, "partial_acc": 0.2761, "full_acc": 0.18,
                                "win_rate": None}, "Three-shot ICL").to_json()
    assert table["rows"][0]["cells"] == ["0.92", "0.50", "0.28", "0.18", "-"]
    react = nestful_table("m", {"answer_match": 1.0}, "ReAct").to_json()
    assert react["protocol"] == "nestful-react" and react["columns"][-1]["name"] == "Answer Match"


def test_callnavi_table_reads_difficulties_and_macro():
    figures = {"by_difficulty": {"easy": {"routing_exact_match": 0.9186, "ast_exact_match": 0.5},
                                 "hard": {"routing_exact_match": 0.0, "ast_exact_match": 0.0}},
               "macro": {"routing_exact_match": 0.4593, "ast_exact_match": 0.25, "gpt_score": 0.71234}}
    table = callnavi_table("m", figures).to_json()
    assert table["rows"][0]["cells"][:8] == ["91.9", "-", "0.0", "45.9", "50.0", "-", "0.0", "25.0"]
    assert table["rows"][0]["cells"][10] == "0.712"


def test_confetti_tables_and_a_merge_of_two_models():
    summary = {"ast_soft_accuracy": 0.4001, "parameter_validity_rate": 0.9, "dialog_act_accuracy": None,
               "by_api_count": {"1-5": {"n": 2, "ast_soft_accuracy": 0.5}}, "by_turn_count": {}, "by_chain_bin": {}}
    first = [t.to_json() for t in confetti_tables("a", summary)]
    second = [t.to_json() for t in confetti_tables("b", {**summary, "ast_soft_accuracy": 0.3})]
    assert first[0]["rows"][0]["cells"] == ["40.01", "90.00", "-"]
    merged = merge_tables(first + second)
    assert len(merged) == 4
    assert [row["model"] for row in merged[0]["rows"]] == ["a", "b"]
    assert merged[0]["rows"][1]["values"][0] == pytest.approx(0.3)
    assert merged[1]["columns"] == [{"group": "", "name": "1-5 (n=2)"}]
