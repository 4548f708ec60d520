"""What makes a sample hard: token counts with the offline tokenizer, constraints, long values,
values found in responses, and their aggregation into the statistics (Table 3 and beyond)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fcbench.stats.hardness import find_constraints, measure_hardness, needs_response_values, value_length
from fcbench.sample import Call, Sample, Tool
from fcbench.stats.tables import BUCKET_LABELS, OVERALL, compute_stats, context_bucket
from fcbench.catalog.openai import openai_tool_param
from fcbench.stats.tokens import ENCODING, context_parts, context_tokens, count_tokens


def _sample(query: str, steps: list[list[Call]], sample_id: str = "s", domain: str = "hotels") -> Sample:
    return Sample(id=sample_id, domain=domain, messages=[{"role": "user", "content": query}],
                  tools=[Tool(name="search", description="find things"), Tool(name="book")], calls=steps)


def test_tokens_are_cl100k_base_counts():
    # Reference token ids of cl100k_base for this text: "Hello"(9906) " world"(1917) ","(11) ...
    assert ENCODING == "cl100k_base"
    assert count_tokens("Hello world, find the cheapest hotel in Paris") == 9
    assert count_tokens("") == 0
    long_text = "The quick brown fox jumps over the lazy dog. " * 200  # above the memo threshold, twice
    # 10 tokens a sentence (9 words and the full stop, each word with its leading space), and the
    # trailing space on its own
    assert count_tokens(long_text) == count_tokens(long_text) == 200 * 10 + 1


def test_tokenizer_needs_no_network(tmp_path):
    # A proxy that refuses every connection and an empty home: a download or a cached vocabulary
    # outside the installed package would fail.
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"), "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}
    code = "from fcbench.stats.tokens import count_tokens; print(count_tokens('Hello world'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_context_is_messages_tools_and_gold_responses():
    with_response = _sample("Find a hotel", [[Call(label="a", name="search", arguments={"q": "x"},
                                                   response={"hotels": ["Plaza " * 50]})]])
    without = _sample("Find a hotel", [[Call(label="a", name="search", arguments={"q": "x"})]])
    parts = list(context_parts(with_response))
    assert len(parts) == 3 and json.loads(parts[1])[0]["function"]["name"] == "search"
    assert context_tokens(with_response) == sum(count_tokens(part) for part in parts)
    assert context_tokens(with_response) - context_tokens(without) == count_tokens(json.dumps(
        {"hotels": ["Plaza " * 50]}, separators=(",", ":")))


def test_constraint_rules():
    kinds = [c.kind for c in find_constraints(
        "Book the cheapest hotel in Paris rated above 8, with a flight leaving before 10 am on Friday, "
        "for under $300 and arriving by noon.")]
    assert kinds == ["superlative", "comparison", "time_bound", "comparison", "time_bound"]
    assert find_constraints("Find a hotel in Rome for two adults.") == []
    assert [c.text for c in find_constraints("after March 3 or until Sunday")] == ["after March 3", "until Sunday"]
    # a comparison needs an amount: "over there" is not one
    assert find_constraints("the hotel over there") == []


def test_value_length_counts_characters_of_strings_and_json_of_the_rest():
    assert value_length("abc") == 3
    assert value_length("é" * 10) == 10
    assert value_length({"a": [1, 2]}) == len('{"a":[1,2]}')


def test_values_found_in_responses():
    responded = [Call(label="a", name="search", arguments={"q": "Paris"}, response={"hotels": [{"id": "H-778", "n": 42}]})]
    # a reference reads an earlier output by construction
    assert needs_response_values(_sample("q", [responded, [Call(label="b", name="book", arguments={"id": "$a.hotels[0].id$"})]]), "q")
    # a literal only the response holds
    literal = _sample("hotels in Paris", [responded, [Call(label="b", name="book", arguments={"id": "H-778"})]])
    assert needs_response_values(literal, "hotels in Paris")
    number = _sample("hotels in Paris", [responded, [Call(label="b", name="book", arguments={"n": 42})]])
    assert needs_response_values(number, "hotels in Paris")
    # the same value stated by the user does not need the response
    assert not needs_response_values(number, "hotels in Paris, 42 of them")
    # a value of a parallel call in the same step is not readable
    parallel = _sample("q", [[*responded, Call(label="b", name="book", arguments={"id": "H-778"})]])
    assert not needs_response_values(parallel, "q")


def test_stats_add_hardness_per_domain_and_overall():
    long_response = {"items": [{"name": f"Hotel {i}", "price": i} for i in range(400)]}
    samples = [
        _sample("Find the cheapest hotel under $200", [
            [Call(label="a", name="search", arguments={"q": "x" * 120}, response=long_response)],
            [Call(label="b", name="book", arguments={"id": "$a.items[0].name$"})]], "h1", "hotels"),
        _sample("Find a flight", [[Call(label="a", name="search", arguments={"q": "LHR"})]], "f1", "flights"),
    ]
    stats = compute_stats(samples)
    rows = {row.domain: row for row in stats.domains}
    hotel = measure_hardness(samples[0])
    assert rows["hotels"].max_context_tokens == hotel.context_tokens > 4000
    assert rows["hotels"].longest_value == 120 and rows["flights"].longest_value == 3
    assert rows["hotels"].needs_response_share == 1.0 and rows["flights"].needs_response_share == 0.0
    assert rows["hotels"].avg_constraints == 2 and rows[OVERALL].avg_constraints == 1
    assert rows[OVERALL].avg_context_tokens == (hotel.context_tokens + measure_hardness(samples[1]).context_tokens) / 2
    assert list(stats.context_histogram) == list(BUCKET_LABELS)
    assert stats.context_histogram[context_bucket(hotel.context_tokens)] == 1
    assert stats.context_histogram["<1k"] == 1 and sum(stats.context_histogram.values()) == 2
    assert stats.constraint_kinds == {"superlative": 1, "comparison": 1, "time_bound": 0}
    assert stats.queries_with_constraints == 1 and stats.long_context_share == 0.0


def test_histogram_buckets():
    assert [context_bucket(n) for n in (0, 999, 1000, 31_999, 32_000, 127_999, 128_000, 10**7)] == \
        ["<1k", "<1k", "1k-4k", "16k-32k", "32k-64k", "64k-128k", ">=128k", ">=128k"]


def test_long_texts_counts_are_kept_on_disk_and_a_broken_cache_is_ignored(tmp_path):
    cache = tmp_path / "tokens.sqlite"
    code = ("import json, sys; from fcbench.stats.tokens import count_tokens; "
            "print(count_tokens(json.dumps([{'name': f'Hotel {i}', 'token': 'Zq9x' * 20} for i in range(300)])))")

    def count(path: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "FCBENCH_TOKEN_CACHE": path},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first = count(str(cache))
    import sqlite3
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT tokens FROM counts").fetchall()
    assert rows == [(int(first),)]
    assert count(str(cache)) == first
    with sqlite3.connect(cache) as db:  # another process reads the count from the cache, not the tokenizer
        db.execute("UPDATE counts SET tokens = 12345")
    assert count(str(cache)) == "12345"
    assert count("off") == first
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database" * 100)
    assert count(str(broken)) == first


def test_a_forked_child_opens_its_own_token_cache(tmp_path):
    code = ("import json, os; from fcbench.stats.tokens import count_tokens, _memo\n"
            "text = json.dumps([{'n': i, 'v': 'Zq9x' * 30} for i in range(50)])\n"
            "parent = count_tokens(text)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    ok = _memo.disk.db is None and count_tokens(text + ' ') >= parent\n"
            "    _memo.disk.flush(); os._exit(0 if ok and _memo.disk.db is not None else 3)\n"
            "_, status = os.waitpid(pid, 0); print(os.waitstatus_to_exitcode(status))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "FCBENCH_TOKEN_CACHE": str(tmp_path / "t.sqlite")},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_the_longest_value_is_what_the_model_writes_with_references_resolved():
    token = "BK" + "x7Q" * 200  # a 602-character booking token, found only in the search's answer
    steps = [[Call(label="var_1", name="search", arguments={"city": "Paris"},
                   response={"offers": [{"token": "short"}, {"token": token}]})],
             [Call(label="var_2", name="book", arguments={"token": "$var_1.offers[1].token$", "note": "hi"})]]
    assert measure_hardness(_sample("Book the second offer in Paris", steps)).longest_value == 602
    unresolved = [[Call(label="var_2", name="book", arguments={"token": "$var_9.token$"})]]  # no such output
    assert measure_hardness(_sample("Book it", unresolved)).longest_value == len("$var_9.token$")


def test_tool_specs_are_counted_once_per_content_and_never_confused():
    """The tool specs' count is remembered by what the tools are made of: the same catalog in many
    samples is counted once; a tool differing only in its parameters is counted anew."""
    from fcbench.sample import Tool
    from fcbench.stats import tokens

    base = Tool(name="find", description="Find places.", parameters={
        "type": "object", "properties": {"city": {"type": "string", "x-internal": "dropped from the spec"}}})
    wider = Tool(name="find", description="Find places.", parameters={
        "type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}})
    for tools in ([base], [wider], [base, wider]):
        direct = count_tokens(json.dumps([openai_tool_param(tool) for tool in tools], ensure_ascii=False,
                                         separators=(",", ":")))
        assert tokens.tools_tokens(tools) == direct
        assert tokens.tools_tokens([tool.model_copy(deep=True) for tool in tools]) == direct  # remembered
    assert tokens.tools_tokens([base]) != tokens.tools_tokens([wider])


def test_a_samples_parts_are_looked_up_on_disk_together_and_count_as_one_by_one(tmp_path):
    """`context_tokens` counts a sample's parts with one disk lookup: the same counts as counting
    them one by one, read back from the disk by another process (and from a changed entry: the
    disk is really read), with a repeated part counted each time."""
    code = ("import json, sys; from fcbench.stats.tokens import _memo, count_tokens\n"
            "texts = [json.dumps([{'n': i, 'v': 'Zq9x' * (30 + k)} for i in range(40)]) for k in range(5)]  # over _DISK_TEXT\n"
            "texts += [texts[1], 'short']\n"
            "print(_memo.count_many(texts), sum(count_tokens(t) for t in texts))\n"
            "_memo.disk.flush()")

    def run() -> list[int]:
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "FCBENCH_TOKEN_CACHE": str(cache)},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return [int(n) for n in done.stdout.split()]

    cache = tmp_path / "tokens.sqlite"
    many, one_by_one = run()
    assert many == one_by_one
    import sqlite3

    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM counts").fetchone()[0] == 5
        db.execute("UPDATE counts SET tokens = tokens + 1")
    again, _ = run()
    assert again == many + 6  # five distinct long texts, one of them twice, each read from the disk
