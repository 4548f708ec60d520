"""The provenance field of the senior form: written from a map, read back to the same sources, and
every line it cannot read named."""

from __future__ import annotations

from annotate.tasks.provenance_text import format_provenance, parse_provenance
from fcbench.checks.provenance import infer_provenance
from fcbench.sample import user_query
from gold_cases import week_stay


def test_the_field_reads_back_the_sources_it_shows():
    stay = week_stay()
    inferred = infer_provenance(stay).provenance
    text = format_provenance(inferred)
    lines = text.splitlines()
    assert lines[0].startswith("# where each argument value comes from")
    query = user_query(stay)
    start = query.index("November 15, 2025")
    assert f'var_3.departure_date: date.offset "November 15, 2025"@{start} + "a week"@{query.index("a week")}' in lines
    assert 'var_1.query: slot "Paris"@15' in lines
    assert "var_3.dest_id: reference name" in lines
    declared, problems = parse_provenance(text, query)
    assert problems == []
    for label, arguments in declared.items():
        for name, source in arguments.items():
            assert source == inferred[label][name], (label, name)
    assert "dest_id" not in declared["var_3"]  # what a reference reads is the path's, not this text's


def test_a_line_it_cannot_read_is_named():
    query = "Find hotels in Paris for a week starting November 15, 2025 for a group of four."
    text = "\n".join([
        'var_2.adults: count.words "for a group of four"',  # said once: no position needed
        'var_2.arrival_date: date.spelled "November 15, 2025"@3',  # not there
        "var_2.currency_code: euros",  # not a rule
        'var_2.radius: slot "5"',  # not said
        "this is not a line",
        'var_2.price_max: annotator ""',
    ])
    declared, problems = parse_provenance(text, query)
    assert declared["var_2"]["adults"].spans[0].start == query.index("for a group of four")
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [
        (2, "the query does not say 'November 15, 2025' at 3"), (3, "unknown source 'euros'"),
        (4, "the query does not say '5'"), (5, "expected 'label.argument"), (6, "annotator needs the reason in quotes")]
