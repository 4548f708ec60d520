"""The offline sampler's feed graph on real catalogs (issue 27): large catalogs link in one pass over
an index of answer fields (not every field of every tool per parameter), chain lengths are computed
once per graph, identifiers link by what they identify (not by name shape: `*_sid` does not feed any
`sid`), and a field of unknown type (maybe an object) feeds no typed parameter."""

from __future__ import annotations

from pathlib import Path

from conftest import EXTERNAL
from fcbench.catalog.openapi import import_openapi
from fcbench.sample import Tool
from generate.slots import value_pools_from_dict
from generate.stage1.graph_sampler import (EXACT_CHAIN_STEPS, _estimated_chain_lengths, _exact_chain_lengths,
                                           build_feed_graph, chain_lengths, sample_tool_subset)

REPO = Path(__file__).resolve().parents[3]
BLOCKFROST = REPO / "datasets" / "blockfrost" / "blockfrost.yaml"
NO_POOLS = value_pools_from_dict({"slots": {}})


def _sources(graph, tool: str, parameter: str) -> set[str]:
    return {source for group in graph.groups.get(tool, []) if parameter in group.parameters for source in group.sources()}


def test_blockfrost_transactions_are_fed_by_transaction_hashes_only():
    tools = import_openapi([BLOCKFROST]).tools
    graph = build_feed_graph(tools, NO_POOLS)
    tx_sources = _sources(graph, "get_txs_by_hash", "hash")
    # answers listing `tx_hash` (an address's transactions) feed /txs/{hash}; a block's `hash` does not
    assert "get_addresses_by_address_transactions" in tx_sources
    assert not {"get_blocks_latest", "get_blocks_by_hash_or_number"} & tx_sources
    feeds = [feed for group in graph.groups["get_txs_by_hash"] for fed in group.feeds.values() for feed in fed]
    # a `tx_hash` anywhere, or a bare `hash` only from a transaction's own sub-resources (/txs/{hash}/utxos);
    # never a `datum_hash`, `script_hash` or `block_hash` (the same last word, another kind of thing)
    assert {feed.output.name for feed in feeds} == {"tx_hash", "hash"}
    assert all(graph.tools[feed.source].meta["endpoint"].startswith("/txs/") for feed in feeds if feed.output.name == "hash")
    # a stake address is what /accounts/{stake_address} reads, wherever it is answered
    assert "get_addresses_by_address" in _sources(graph, "get_accounts_by_stake_address", "stake_address")


def test_a_bare_sid_feeds_only_what_its_source_identifies():
    def tool(name: str, endpoint: str, parameters: dict, returns: dict) -> Tool:
        return Tool(name=name, description="", parameters=parameters, returns=returns, meta={"endpoint": endpoint})

    answer = {"type": "object", "properties": {"sid": {"type": "string"}, "detail": {"description": "anything"}}}
    catalog = [
        tool("list_calls", "/Calls", {"type": "object", "properties": {}}, answer),
        tool("list_accounts", "/Accounts", {"type": "object", "properties": {}}, answer),
        tool("fetch_account", "/Accounts/{account_sid}",
             {"type": "object", "properties": {"account_sid": {"type": "string"}}, "required": ["account_sid"]}, None),
        tool("annotate", "/notes", {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}, None),
    ]
    graph = build_feed_graph(catalog, NO_POOLS)
    assert _sources(graph, "fetch_account", "account_sid") == {"list_accounts"}  # not the calls' `sid`
    assert _sources(graph, "annotate", "detail") == set()  # a field of no type may be an object: no feed


def test_a_large_cyclic_catalog_links_and_weighs_goals(tmp_path):
    base = import_openapi([BLOCKFROST, EXTERNAL / "amadeus"]).tools
    catalog = [tool.model_copy(update={"name": f"{tool.name[:60]}_{copy}"}, deep=True) for copy in range(3) for tool in base]
    linked: list[int] = []
    graph = build_feed_graph(catalog, NO_POOLS, progress=lambda: linked.append(1))
    assert len(linked) == len(catalog) >= 500  # progress once per tool
    lengths = chain_lengths(graph)
    assert set(lengths) == set(graph.tools) and max(lengths.values()) >= 3
    subset = sample_tool_subset(0, False, graph, [6], seed=0)
    assert subset.goals and set(subset.goals) <= set(subset.tools)


def test_exact_chain_lengths_below_the_budget_and_the_estimate_never_above():
    # sources: a <- b, a <- d, b <- c, c <- a: the longest simple chain ending at b is b <- c <- a <- d
    sources = {"a": ["b", "d"], "b": ["c"], "c": ["a"], "d": []}
    exact = _exact_chain_lengths(sources)
    assert exact == {"a": 3, "b": 4, "c": 3, "d": 1}
    estimate = _estimated_chain_lengths(sources)
    assert all(1 <= estimate[tool] <= exact[tool] for tool in sources)
    assert EXACT_CHAIN_STEPS > 1000
