"""stage1's feed graph on a large real catalog: the indexed linking against comparing every
parameter with every answer field of every tool (the way `build_feed_graph` worked before issue
27), in one run, with the same links checked.

The catalog: Blockfrost (datasets/blockfrost, 126 operations) and the 40 Amadeus descriptions (54),
imported, copied `--copies` times under new names (3: 540 tools). Reference: for each required
parameter, every field of every other tool goes through the same name, type and link rules
(`reference_feeds`). Indexed: `build_feed_graph` (an index of answer fields by last word and by the
word runs a description spells). Then the chain lengths of every goal and one tool subset per draft
for `--drafts` drafts (the per-draft exhaustive chain walk never finished on 197 tools).

  .venv/bin/python bench/feed_graph.py [--copies 3] [--reference-copies 1] [--drafts 500]

The reference runs on `--reference-copies` (the brute force takes minutes beyond one copy); the
last line is the ratio indexed / reference linking time on that same catalog.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def catalog(copies: int):
    from fcbench.catalog.openapi import import_openapi

    base = import_openapi([REPO / "datasets" / "blockfrost" / "blockfrost.yaml",
                           REPO.parent / "shared" / "external" / "amadeus"]).tools
    return [tool.model_copy(update={"name": f"{tool.name[:60]}_{n}"}, deep=True) for n in range(copies) for tool in base]


def reference_feeds(tools, pools):
    """Every required parameter against every answer field of every other tool (no index)."""
    from generate.stage1 import graph_sampler as g

    fields_of = {tool.name: g.response_fields(tool.returns) for tool in tools}
    links = {}
    for tool in tools:
        properties = tool.parameters.get("properties") or {}
        for parameter in tool.parameters.get("required") or []:
            if parameter in pools.covered_arguments(tool.name):
                continue
            schema = properties.get(parameter) or {}
            description = str(schema.get("description", ""))
            fed = g.singular(parameter) if g.is_list_parameter(schema) else parameter
            found = set()
            for other in tools:
                if other.name == tool.name:
                    continue
                for output in fields_of[other.name]:
                    words = g.matched_prefix(fed, output.name)
                    if words is None:
                        words = g.described_prefix(parameter, description, output.name)
                    if words is not None and g._types_agree(schema, output.type):
                        found.add((other.name, output.path))
            links[(tool.name, parameter)] = found
    return links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--reference-copies", type=int, default=1)
    parser.add_argument("--drafts", type=int, default=500)
    args = parser.parse_args()
    from generate.slots import value_pools_from_dict
    from generate.stage1.graph_sampler import build_feed_graph, chain_lengths, sample_tool_subset

    pools = value_pools_from_dict({"slots": {}})
    small = catalog(args.reference_copies)
    started = time.perf_counter()
    reference = reference_feeds(small, pools)
    reference_s = time.perf_counter() - started
    started = time.perf_counter()
    graph_small = build_feed_graph(small, pools)
    indexed_small_s = time.perf_counter() - started
    # every link the indexed graph makes is one the brute force found by name and type too
    indexed_links = {(tool, parameter): {(feed.source, feed.output.path) for feed in group.feeds[parameter]}
                     for tool, groups in graph_small.groups.items() for group in groups for parameter in group.parameters}
    assert all(found <= reference[key] for key, found in indexed_links.items())
    print(f"{len(small)} tools: reference (every field) {reference_s:.1f} s, indexed {indexed_small_s:.2f} s; "
          f"{sum(map(len, indexed_links.values()))} links, all among the reference's candidates")

    large = catalog(args.copies)
    started = time.perf_counter()
    graph = build_feed_graph(large, pools)
    linked_s = time.perf_counter() - started
    started = time.perf_counter()
    lengths = chain_lengths(graph)
    for index in range(args.drafts):
        sample_tool_subset(index, random.Random(index).random() < 0.3, graph, [4, 6], seed=0)
    subsets_s = time.perf_counter() - started
    print(f"{len(large)} tools: linked in {linked_s:.2f} s ({len(graph.goals())} goals, longest chain "
          f"{max(lengths.values())}); chain lengths + {args.drafts} tool subsets in {subsets_s:.2f} s")
    print(f"indexed/reference linking time ({len(small)} tools): {indexed_small_s / reference_s:.3f}")


if __name__ == "__main__":
    main()
