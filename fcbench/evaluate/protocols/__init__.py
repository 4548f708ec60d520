"""The evaluation protocols: each paper's way of running models (`build-dataset evaluate PIPELINE
--protocol P`). One module per paper; `PROTOCOLS` is the only place that knows which exist.

| protocol | paper | pipelines | runs |
|---|---|---|---|
| `complexfuncbench` | ComplexFuncBench | single-turn (default) | ComplexEval: native tools, gold responses, greedy, 2,048 tokens |
| `nestful-icl` | NESTful | single-turn | k fixed in-context examples, a JSON call list in text |
| `nestful-react` | NESTful | single-turn, executable environment | a ReAct agent executing each call |
| `callnavi` | CallNavi | single-turn | N runs a question, stability, per difficulty |
| `confetti` | CONFETTI | `kind: conversation` (default) | teacher-forced per turn, both turn-level sets |
"""

from __future__ import annotations

from typing import Any

from fcbench.config import PipelineConfig
from fcbench.evaluate.protocols.common import Protocol, ProtocolOptions
from fcbench.registry import Registry
from fcbench.stage import EvaluateSettings, PipelineContext, StageSummary

# the one table of protocols; each class imported on use (a protocol's dependencies load only when it runs)
PROTOCOLS: Registry[Any] = Registry("protocol")
PROTOCOLS.register_lazy("complexfuncbench", "fcbench.evaluate.protocols.complexfuncbench:ComplexFuncBench")
PROTOCOLS.register_lazy("nestful-icl", "fcbench.evaluate.protocols.nestful:NestfulICL")
PROTOCOLS.register_lazy("nestful-react", "fcbench.evaluate.protocols.nestful:NestfulReAct")
PROTOCOLS.register_lazy("callnavi", "fcbench.evaluate.protocols.callnavi:CallNavi")
PROTOCOLS.register_lazy("confetti", "fcbench.evaluate.protocols.confetti:Confetti")
DEFAULT_FOR_KIND = {"single": "complexfuncbench", "conversation": "confetti"}


def default_protocol(pipeline: PipelineConfig) -> str:
    """ComplexFuncBench's for a single-turn pipeline, CONFETTI's for a conversational one."""
    return DEFAULT_FOR_KIND[pipeline.kind]


def protocol_for(name: str | None, pipeline: PipelineConfig, options: ProtocolOptions) -> Protocol:
    """The protocol named (default: the pipeline kind's), set up with this run's options."""
    return PROTOCOLS.get(name or default_protocol(pipeline))(options)


def run(ctx: PipelineContext, settings: EvaluateSettings) -> StageSummary:
    """The evaluate stage (fcbench.stage contract): one model run the protocol's way, scored."""
    options = ProtocolOptions(settings.model, base_url=settings.base_url, split=settings.split,
                              input_file=settings.input_file, limit=settings.limit, batch=settings.batch,
                              temperature=settings.temperature, max_tokens=settings.max_tokens, runs=settings.runs,
                              icl_examples=settings.icl_examples, max_steps=settings.max_steps, compat=settings.compat,
                              judge_model=settings.judge_model, judge_base_url=settings.judge_base_url,
                              context_window=settings.context_window, extra_turns=settings.extra_turns,
                              progress=settings.progress)
    result = protocol_for(settings.protocol, ctx.config, options).evaluate(ctx.config)
    if hasattr(result, "trajectories_path"):  # ComplexEval's streamed runner
        return StageSummary("evaluate", {"samples": result.samples, "ran": result.ran, "reused": result.reused},
                            outputs={"trajectories": str(result.trajectories_path), "scores": str(result.scores_path),
                                     "rejects": str(result.rejects_path)}, report=result)
    return StageSummary("evaluate", {"items": result.items, "ran": result.ran, "reused": result.reused},
                        outputs={"predictions": str(result.predictions_path), "scores": str(result.scores_path),
                                 "rejects": str(result.rejects_path), **result.finished.reference_files},
                        report=result)


__all__ = ["DEFAULT_FOR_KIND", "PROTOCOLS", "Protocol", "ProtocolOptions", "default_protocol", "protocol_for", "run"]
