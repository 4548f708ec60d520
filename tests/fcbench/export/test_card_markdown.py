"""The dataset card shows what comes from the samples as literal text: a hostile domain, model name,
prompt file, published difficulty, stage summary or format warning injects no heading, link,
image or HTML and breaks no table. The card is parsed by a real CommonMark parser with GFM tables
(markdown-it-py) and its tokens are inspected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

from conftest import REPO, read_all
from fcbench.config import ExportConfig
from fcbench.export.card import read_front_matter
from fcbench.export.markdown import literal
from fcbench.export.single import ExportPaths, ExportSettings, export_samples
from fcbench.formats import write_samples

SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
# every way into Markdown at once: a line break before a heading, HTML and an event handler, an
# image, a link, a bare address GFM links by itself, a table's pipes, backticks that would close
# a code span, an entity, emphasis, an escaped pipe and a trailing backslash
HOSTILE = ("x\n# Injected heading\n<script>alert(1)</script><img src=x onerror=alert(2)>"
           " ![img](http://evil.example/i.png) [link](http://evil.example) www.evil.example"
           " | a | b ` `` &lt; **bold** \\| end\\")
SHOWN = HOSTILE.replace("\n", " ")  # a card line cannot hold a line break; all the rest is kept


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def _inspect(card: str) -> dict:
    body = card.split("\n---\n", 1)[1]
    tokens = list(_walk(MarkdownIt("commonmark").enable("table").parse(body)))
    headings = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            headings.append(next(t for t in tokens[index + 1:] if t.type == "inline").content)
    tables, rows = [], []
    for token in tokens:
        if token.type == "tr_open":
            rows.append(0)
        elif token.type in ("th_open", "td_open"):
            rows[-1] += 1
        elif token.type == "table_close":
            tables.append(rows)
            rows = []
    return {"types": {token.type for token in tokens}, "headings": headings, "tables": tables,
            "code": [token.content for token in tokens if token.type == "code_inline"],
            "text": [token.content for token in tokens if token.type == "text"]}


def _hostile_export(tmp_path: Path) -> str:
    samples = read_all(SEEDS, "fcbench")[:12]
    for index, sample in enumerate(samples):
        sample.domain = HOSTILE if index % 2 else "math"
        sample.provenance = sample.provenance.model_copy(update={
            "model": HOSTILE, "prompt_file": HOSTILE, "prompt_hash": "ab" * 32, "source_format": HOSTILE,
            "stage": HOSTILE})
        sample.meta = {**sample.meta, "published": {"difficulty": HOSTILE}}
    source = tmp_path / "validated.jsonl"
    write_samples(samples, source, "fcbench")
    build = tmp_path / "build"
    build.mkdir()
    # a stage summary file naming hostile counts (a build folder's files are read into the card)
    (build / "filter.summary.json").write_text(json.dumps({
        "total": HOSTILE, "counts": {HOSTILE: 3, "passed": HOSTILE}, "reasons": {HOSTILE: 2}, "grounding_reported": HOSTILE}))
    settings = ExportSettings(name="hostile", config=ExportConfig(ratios={"test": 1.0}, formats=["parquet"]), seed=1)
    export_samples(source, ExportPaths(build), settings)
    return (build / "export" / "README.md").read_text(encoding="utf-8")


def test_sample_text_in_the_card_injects_no_markdown_or_html(tmp_path):
    card = _hostile_export(tmp_path)
    seen = _inspect(card)
    assert not {"link_open", "image", "html_inline", "html_block", "em_open", "strong_open"} & seen["types"]
    assert not any("Injected" in heading for heading in seen["headings"])
    assert seen["headings"][0] == "hostile"
    for table in seen["tables"]:  # every row has its header's number of cells
        assert len(set(table)) == 1, table
    # the hostile text is in the card, whole, and only inside code spans
    assert SHOWN in seen["code"]
    assert not any("evil" in text or "Injected" in text or "script" in text for text in seen["text"])
    assert read_front_matter(card)["pretty_name"] == "hostile"  # the YAML is intact


def test_a_benign_card_keeps_its_tables_and_headings(tmp_path):
    """The same parse over an ordinary card: the checks above are not passing for want of tables."""
    samples = read_all(SEEDS, "fcbench")[:12]
    source = tmp_path / "validated.jsonl"
    write_samples(samples, source, "fcbench")
    export_samples(source, ExportPaths(tmp_path / "build"),
                   ExportSettings(name="plain", config=ExportConfig(ratios={"test": 1.0}, formats=["parquet"])))
    seen = _inspect((tmp_path / "build" / "export" / "README.md").read_text(encoding="utf-8"))
    assert len(seen["tables"]) >= 6 and all(len(set(table)) == 1 for table in seen["tables"])
    assert "html_inline" not in seen["types"] and "list<string>" in seen["code"]  # a type, not a tag
    assert {"Dataset structure", "Splits", "Construction", "Statistics", "Known limitations"} <= set(seen["headings"])


def test_literal_keeps_every_character_and_survives_backticks():
    for text in ["plain", "`", "``x``", " lead", "trail ", "a`b", "|", "\\", "<b>&amp;</b>", "* [x](y) #"]:
        rendered = MarkdownIt("commonmark").parseInline(literal(text))[0].children
        assert [token.type for token in rendered] == ["code_inline"], (text, rendered)
        assert rendered[0].content == text
    assert literal("two\nlines\r\nhere") == "`two lines here`"
    assert literal("") == "(empty)"


def test_plain_words_stay_plain_and_anything_else_is_literal():
    from fcbench.export.markdown import data_text

    for word in ("hotels", "gpt-4o-mini", "format.unknown_tool", "cross-domain", "a b"):
        assert data_text(word) == word
    for text in ("_emphasis_", "www.evil.example", "WWW.evil.example", "a|b", "x\ny", "<b>", "a:b", "# h", "-", "http://x"):
        assert data_text(text) == literal(text)
