"""Dataset statistics: inline samples with hand-counted figures, then the published files."""

from __future__ import annotations

import json

from conftest import EXTERNAL

from fcbench.formats import FormatOptions, Rejected, read_samples
from fcbench.sample import Call, Sample, Tool
from fcbench.stats.tables import CROSS_DOMAIN, OVERALL, compute_stats, domain_key, published_difficulty


def _sample(sample_id: str, domain, steps: list[list[Call]], meta: dict | None = None) -> Sample:
    return Sample(id=sample_id, domain=domain, messages=[{"role": "user", "content": "q"}],
                  tools=[Tool(name="f")], calls=steps, meta=meta or {})


def _call(label: str, **arguments) -> Call:
    return Call(label=label, name="f", arguments=arguments)


SAMPLES = [
    # hotels: one call; then a 3-step nested path (c reads b, b reads a): depth 2, 2 dependencies
    _sample("h1", "hotels", [[_call("a")]], meta={"callnavi": {"difficulty": "easy"}}),
    _sample("h2", "hotels", [[_call("a")], [_call("b", x="$a.id$")], [_call("c", y="$b.items[0]$")]],
            meta={"callnavi": {"difficulty": "hard"}}),
    # flights: two parallel calls in one step, nothing read
    _sample("f1", "flights", [[_call("a"), _call("b")]]),
    # cross-domain: d reads both a and b (2 dependencies, depth 1)
    _sample("x1", ["hotels", "flights"], [[_call("a"), _call("b")], [_call("d", p="$a$", q="$b.x$")]]),
    # no call expected (irrelevance); a single-item domain list is that domain
    _sample("n1", ["flights"], []),
]


def test_domain_rows_have_the_shape_of_complexfuncbench_table_3():
    stats = compute_stats(SAMPLES)
    rows = {row.domain: row for row in stats.domains}
    assert [row.domain for row in stats.domains] == [CROSS_DOMAIN, "flights", "hotels", OVERALL]
    assert (rows["hotels"].samples, rows["hotels"].avg_steps, rows["hotels"].avg_calls) == (2, 2.0, 2.0)
    assert (rows["flights"].samples, rows["flights"].avg_steps, rows["flights"].avg_calls) == (2, 0.5, 1.0)
    assert (rows[CROSS_DOMAIN].avg_steps, rows[CROSS_DOMAIN].avg_calls) == (2.0, 3.0)
    overall = rows[OVERALL]
    assert (overall.samples, overall.avg_steps, overall.avg_calls) == (5, 7 / 5, 9 / 5)


def test_difficulty_depth_and_dependency_distributions():
    stats = compute_stats(SAMPLES)
    assert stats.difficulty == {"none": 1, "single": 1, "multiple": 1, "nested": 2}
    assert stats.published_difficulty == {"easy": 1, "hard": 1}
    assert stats.nesting_depth == {0: 3, 1: 1, 2: 1}
    assert stats.dependencies == {0: 3, 2: 2}


def test_rejected_items_are_counted_by_reason():
    items = [*SAMPLES, Rejected("f.jsonl:3", "not valid JSON"), Rejected("f.jsonl:9", "not valid JSON"),
             Rejected("f.jsonl:4", "calls: field required")]
    stats = compute_stats(items)
    assert (stats.samples, stats.rejected) == (5, 3)
    assert stats.reject_reasons == {"not valid JSON": 2, "calls: field required": 1}
    as_json = json.loads(json.dumps(stats.as_dict()))
    assert as_json["nesting_depth"] == {"0": 3, "1": 1, "2": 1}
    overall = as_json["domains"][-1]
    assert {k: overall[k] for k in ("domain", "samples", "avg_steps", "avg_calls")} == \
        {"domain": "all", "samples": 5, "avg_steps": 1.4, "avg_calls": 1.8}
    assert as_json["tokenizer"] == "cl100k_base"


def test_domain_and_label_helpers():
    assert domain_key(_sample("a", None, [])) == "(none)"
    assert domain_key(_sample("b", ["bank", "bank"], [])) == "bank"
    assert published_difficulty(_sample("c", "x", [], meta={"nestful": {"other": 1}})) is None


def test_empty_input_gives_zero_rows_not_a_crash():
    stats = compute_stats([])
    assert stats.samples == 0
    assert [(row.domain, row.samples, row.avg_steps) for row in stats.domains] == [(OVERALL, 0, 0.0)]


# ------------------------------------------------------------------------------------- real files
def test_callnavi_bank_published_difficulty_split():
    questions = EXTERNAL / "callnavi/Questions/bank.json"
    raw = json.loads(questions.read_text(encoding="utf-8"))
    stats = compute_stats(read_samples(questions, "callnavi"))
    assert stats.samples == len(raw) == 115 and stats.rejected == 0
    # counted from the file directly, not through the adapter
    assert stats.published_difficulty == {
        label: sum(1 for item in raw if item["difficulty"] == label) for label in ("easy", "medium", "hard")
    } == {"easy": 70, "medium": 27, "hard": 18}
    total_calls = sum(len(item["ground_truth"]["API"]) for item in raw)
    assert stats.domains[-1].avg_calls == total_calls / 115


def test_nestful_v1_nesting_analysis():
    data = EXTERNAL / "nestful/v1/executable-data.json"
    options = FormatOptions(tools=EXTERNAL / "nestful/v1/executable-spec.json")
    stats = compute_stats(read_samples(data, "nestful", options))
    raw = json.loads(data.read_text(encoding="utf-8"))
    real_calls = sum(1 for item in raw for call in item["output"] if call["name"] != "var_result")
    assert (stats.samples, stats.rejected) == (85, 0)
    assert abs(stats.domains[-1].avg_calls - real_calls / 85) < 1e-12  # var_result is not a call
    assert stats.difficulty == {"none": 0, "single": 0, "multiple": 7, "nested": 78}
    assert stats.nesting_depth == {0: 7, 1: 74, 2: 4}
    assert sum(stats.dependencies.values()) == 85


def test_nestful_v2_toy_data_depth_matches_a_hand_count():
    stats = compute_stats(read_samples(EXTERNAL / "nestful/toy_data.jsonl", "nestful"))
    # first sample, by hand: var_4 -> var_5 -> var_6 -> var_8 -> var_9 is a chain of 4 edges;
    # reads: var_2, var_3, var_5, var_6 one each, var_8 and var_9 two each = 8 dependencies
    assert stats.samples == 4
    assert stats.nesting_depth[4] == 1 and stats.dependencies[8] == 1
    assert stats.difficulty["nested"] == 4
