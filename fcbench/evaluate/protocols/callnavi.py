"""CallNavi's protocol (`callnavi`): each question asked N times, as CallNavi's `predict.py` does
(Etamin/CallNavi @ 520e280), and scored per difficulty with stability over the runs.

- One user message, no system prompt: CallNavi's prompt (fcbench/prompts/callnavi_call.txt,
  verbatim) with every tool of the sample listed the way `predict.py` lists `APIs/<domain>.json`
  (`def name(<parameters dict>)` and a docstring with the description, `Args` and `Returns`), then
  the question (the sample's first user message, as the script sends `question[0]`).
- N runs of every question (`--runs`, default 5: "5 Times for stable"), each its own request (its
  own cache row and, with `llm.seed`, its own derived seed), so a re-run replays the same N.
- Scored by `fcbench.score.callnavi`: syntax validity (the answer parses, repaired in pure code
  where CallNavi washed with GPT-4o), API routing, structural accuracy and AST match over every
  output; election and Levenshtein stability over each question's runs (answers normalised first);
  per difficulty (easy / medium / hard, the sample's published label, else its call shape) and
  the macro average; the GPT score (0-1) from the configured LLM judge (`--judge-model` or the
  pipeline's judge block: CallNavi's GPT-4o prompt, fcbench/evaluate/judges_callnavi.py) or,
  without one, a RULE-BASED STAND-IN named as such in the table and in scores.json.
Choices where the paper and code leave one open (said in scores.json too):
- decoding: the script sets none (each server's default); fcbench sends temperature 1.0 (the
  OpenAI API's default, what the script's OpenAI variant got) and 1,024 new tokens (a CallNavi
  answer is one short JSON object); both overridable, both recorded;
- the tools listed are the sample's (CallNavi lists every API of the question's domain, which is
  what a sample converted from CallNavi carries).

Reference files, in CallNavi's own shapes, under `callnavi/`: `results_stab/<domain>_<run>_para_
<model>.json` (a JSON array in question order of `{"predict": raw text, "ground_truth": str(the
ground truth dict)}`, as `predict.py` writes), `results_washed/<domain>_<run>_washed_<model>.json`
(`predict` parsed, `{}` when it did not parse, as `wash.py` leaves it), and the benchmark itself as
`Questions/<domain>.json` and `APISchema/<domain>.json`, since CallNavi's scripts pair results with
questions by position. An item the endpoint never answered (llm_error) is written as an empty
prediction there, so positions still pair, and is not scored by fcbench.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from fcbench.catalog.callnavi import tool_to_api_port, tools_to_api_schema
from fcbench.config import PipelineConfig
from fcbench.evaluate.judges_callnavi import RULE_BASED, ask_gpt_scores, gpt_score_question
from fcbench.evaluate.protocols.common import (Finished, LoopProtocol, RunContext, ScoringContext, WorkItem, item_key,
                                               json_text)
from fcbench.evaluate.runner import Unanswered, model_slug
from fcbench.formats.callnavi import WriteLosses, item_from_sample
from fcbench.jsonl import write_json
from fcbench.llm.client import ChatRequest, LLMRejection
from fcbench.llm.judge import JudgeError
from fcbench.llm.prompts import PromptFile
from fcbench.sample import Sample, Tool
from fcbench.score.callnavi import (CallNaviTally, parse_callnavi_output, rule_based_gpt_score, score_callnavi)
from fcbench.score.paper_tables import callnavi_table

PROMPT = Path(__file__).resolve().parents[2] / "prompts" / "callnavi_call.txt"
DEFAULT_RUNS = 5  # predict.py: `for it in range(5):  # 5 Times for stable`
REFERENCE_DIR = "callnavi"


def _prompt() -> PromptFile:
    return PromptFile.load(PROMPT, PROMPT.parent)


# ---------------------------------------------------------------------------------- pure helpers
def function_listing(tools: Sequence[Tool]) -> str:
    """The tools as `predict.py` renders `APIs/<domain>.json`: the parameters dict printed with
    Python's str() with brackets removed, each argument name followed by ' (str)' with no
    separator, the return map printed with braces and quotes removed."""
    text = ""
    for tool in tools:
        spec = tool_to_api_port(tool)
        parameters = spec.get("parameters") or {}
        text += ("Function:\ndef " + spec["name"] + "(" + str(parameters).replace("[", "").replace("]", "") + ")\n"
                 + '   """\n   ' + str(spec.get("description", "")) + "\n\n   Args:\n   ")
        for name in parameters:
            text += name + " (str)"
        returns = str(spec.get("returnParameter", "")).replace("{", "").replace("}", "").replace("'", "")
        text += "\n\n   Returns:\n   " + returns + '\n   """\n\n'
    return text


def first_question(sample: Sample) -> str:
    users = [m for m in sample.messages if m.get("role") == "user"]
    content = users[0].get("content") if users else ""
    return content if isinstance(content, str) else json_text(content)


def ground_truth_and_difficulty(sample: Sample) -> tuple[dict[str, Any], str]:
    """CallNavi's `ground_truth` of a sample (references written "$$$", as CallNavi does) and its
    difficulty label (the published one, else from the call shape)."""
    item = item_from_sample(sample, WriteLosses())
    return item["ground_truth"], str(item["difficulty"])


def sample_domain(sample: Sample) -> str:
    domain = sample.domain
    if isinstance(domain, list):
        return "+".join(domain) or "all"
    return domain or "all"


# ---------------------------------------------------------------------------------- the protocol
class CallNavi(LoopProtocol):
    name: ClassVar[str] = "callnavi"
    temperature: ClassVar[float] = 1.0
    max_tokens: ClassVar[int] = 1024
    sampling_source: ClassVar[str] = ("CallNavi's predict.py sets no decoding option (the server's defaults): "
                                      "fcbench's choice, temperature 1.0 = the OpenAI API's default")
    choices: ClassVar[tuple[str, ...]] = (
        "prompt: CallNavi's predict.py prompt, verbatim, one user message, the tools rendered as predict.py renders "
        "APIs/<domain>.json; the question is the sample's first user message",
        "runs: each its own request (sample_index = run), so each is cached apart and, with llm.seed, seeded apart",
        "answers repaired in pure code (fcbench.score.json_repair) where CallNavi washed them with GPT-4o",
        "stability on normalised answers (Judge_call.py's normalisation); Levenshtein: first run vs each other",
        "per difficulty: real question counts (Judge_para.py hard-codes 456/188/85); macro = mean of the three",
    )

    @property
    def runs(self) -> int:
        return self.options.runs or DEFAULT_RUNS

    def run_settings(self, config: Any) -> dict[str, Any]:
        # not the number of runs: run r of a question is the same request whatever N is, so a run
        # asked for 5 after 3 reuses the first 3
        return {**super().run_settings(config), "prompt_sha256": _prompt().sha256}

    def refusal(self, pipeline: PipelineConfig) -> str | None:
        if self.runs < 1:
            return "--runs must be at least 1"
        return super().refusal(pipeline)

    def work_items(self, part: str, samples: Sequence[Sample], digests: Mapping[str, str]) -> list[WorkItem]:
        return [WorkItem(item_key(part, sample, run), sample, digests[f"{part}/{sample.id}"], run=run, part=part)
                for sample in samples for run in range(self.runs)]

    def message(self, sample: Sample) -> str:
        return _prompt().render(functions=function_listing(sample.tools), question=first_question(sample))

    async def run_item(self, ctx: RunContext, item: WorkItem) -> dict[str, Any] | Unanswered:
        request = ChatRequest(messages=[{"role": "user", "content": self.message(item.sample)}],
                              sample_index=item.run, prompt_hash=_prompt().sha256)
        outcome = await ctx.llm.complete(request)
        if isinstance(outcome, LLMRejection):
            return Unanswered(item.sample.id, outcome.reason)
        return {"output": outcome.completion.content or ""}

    def finish(self, ctx: ScoringContext) -> Finished:
        by_id = {item.sample.id: item.sample for item in ctx.work}
        outputs: dict[str, list[tuple[int, str]]] = {}
        for item in ctx.work:
            record = ctx.records.get(item.key)
            if record is not None:
                outputs.setdefault(item.sample.id, []).append((item.run, str(record.get("output", ""))))
        truths = {sample_id: ground_truth_and_difficulty(by_id[sample_id]) for sample_id in by_id}
        # one GPT score per output: the LLM judge, or the stand-in
        pairs = [(sample_id, run, text) for sample_id in by_id for run, text in outputs.get(sample_id, [])]
        gpt, judges, first_line = self._gpt_scores(ctx, pairs, truths)
        tally = CallNaviTally()
        items: list[dict[str, Any]] = []
        for sample_id in by_id:
            runs = outputs.get(sample_id, [])
            if not runs:
                continue
            truth, difficulty = truths[sample_id]
            texts = [text for _, text in runs]
            scores = [score_callnavi(text, truth, ctx.options.compat) for text in texts]
            run_scores = [gpt[(sample_id, run)] for run, _ in runs]
            tally.add_question(difficulty, texts, scores, [s if isinstance(s, float) else None for s in run_scores])
            for (run, _), score, judged in zip(runs, scores, run_scores):
                item = {"id": sample_id, "run": run, "difficulty": difficulty, "syntax_valid": score.syntax_valid,
                        "routing": score.routing, "structural": score.structural, "ast_match": score.ast_match,
                        "repairs": list(score.repairs)}
                if isinstance(judged, JudgeError):
                    item["gpt_score"] = None
                    item["judge_error"] = f"{judged.reason}"
                else:
                    item["gpt_score"] = judged
                items.append(item)
        figures = tally.figures()
        judge_errors = sum("judge_error" in item for item in items)
        summary = {**figures, "questions": len(outputs), "outputs": len(items), "runs": self.runs,
                   "gpt_score_judge": judges["gpt_score"], "judge_errors": judge_errors}
        notes = [f"GPT Score: {judges['gpt_score']}."]
        if judge_errors:
            notes.append(f"{judge_errors} output(s) without a usable GPT score (judge_error) are left out of it.")
        reference = self._write_reference(ctx, [by_id[sample_id] for sample_id in by_id], outputs, truths)
        table = callnavi_table(ctx.model, figures, notes)
        return Finished(summary, items, [table.to_json()], reference, judges=judges, first_line=first_line)

    def _gpt_scores(self, ctx: ScoringContext, pairs: list[tuple[str, int, str]],
                    truths: Mapping[str, tuple[dict[str, Any], str]]) -> tuple[dict[tuple[str, int], Any], dict[str, Any], str]:
        if ctx.judge is None:
            scores = {(sample_id, run): rule_based_gpt_score(text, truths[sample_id][0]) for sample_id, run, text in pairs}
            line = f"CallNavi GPT score by a {RULE_BASED}: no judge LLM configured (--judge-model or a judge block)"
            return scores, {"gpt_score": RULE_BASED, "llm": None}, line
        questions = [gpt_score_question(parse_callnavi_output(text)[0], truths[sample_id][0])
                     for sample_id, _, text in pairs]
        verdicts, llm = ask_gpt_scores(questions, ctx.judge, ctx.folder / "judges.sqlite", ctx.options.environ)
        scores = {(sample_id, run): verdict for (sample_id, run, _), verdict in zip(pairs, verdicts)}
        who = f"LLM {ctx.judge.model} with CallNavi's GPT-4o prompt (temperature 0)"
        line = f"CallNavi GPT score by {who}; routing, AST and stability computed, no judge"
        return scores, {"gpt_score": who, "llm": {key: llm.get(key) for key in (
            "model", "base_url", "requests_sent", "cache_hits", "completed", "rejected", "cost_usd")}}, line

    def _write_reference(self, ctx: ScoringContext, samples: list[Sample], outputs: Mapping[str, list[tuple[int, str]]],
                         truths: Mapping[str, tuple[dict[str, Any], str]]) -> dict[str, str]:
        from fcbench.formats.callnavi import write as write_questions

        root = ctx.folder / REFERENCE_DIR
        model = model_slug(ctx.model)
        by_domain: dict[str, list[Sample]] = {}
        for sample in samples:
            by_domain.setdefault(sample_domain(sample), []).append(sample)
        files: dict[str, str] = {}
        for domain, domain_samples in by_domain.items():
            questions = root / "Questions" / f"{domain}.json"
            questions.parent.mkdir(parents=True, exist_ok=True)
            (root / "APISchema").mkdir(parents=True, exist_ok=True)
            write_questions(domain_samples, questions)
            tools: dict[str, Tool] = {}
            for sample in domain_samples:
                for tool in sample.tools:
                    if not tool.meta.get("inferred"):
                        tools.setdefault(tool.name, tool)
            write_json(root / "APISchema" / f"{domain}.json", tools_to_api_schema(list(tools.values())), indent=2)
            files[f"questions:{domain}"] = str(questions)
            for run in range(self.runs):
                raw, washed = [], []
                for sample in domain_samples:
                    text = dict(outputs.get(sample.id, [])).get(run, "")
                    truth = truths[sample.id][0]
                    raw.append({"predict": text, "ground_truth": str(truth)})
                    answer = parse_callnavi_output(text)[0] if text else None
                    washed.append({"predict": answer if answer is not None else {}, "ground_truth": truth})
                stab = root / "results_stab" / f"{domain}_{run}_para_{model}.json"
                wash = root / "results_washed" / f"{domain}_{run}_washed_{model}.json"
                stab.parent.mkdir(parents=True, exist_ok=True)
                wash.parent.mkdir(parents=True, exist_ok=True)
                write_json(stab, raw)
                write_json(wash, washed)
                files[f"results_stab:{domain}:{run}"] = str(stab)
        return files
