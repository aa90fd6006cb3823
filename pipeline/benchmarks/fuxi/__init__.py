"""Fùxì (Zhao et al., 2024): 21 understanding and generation tasks on classical Chinese; accuracy, BLEU, an LLM
judge, and format rules for couplets and ci (tone, rhyme and cipai tables: pipeline/scoring/format_rules.py)."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.benchmarks.fuxi.adapter import TASKS, parse
from pipeline.contamination.passages import classical
from pipeline.sources.layout import JSONL

# The paper's metric per task -> wenheng's rule scorer (pipeline/scoring/rules.py).
SCORER_OF_METRIC = {"accuracy": "option", "bleu": "bleu", "llm_judge": "judge",
                    "rule_couplet": "couplet_rules", "rule_ci": "ci_rules"}

CARD = BenchmarkCard(
    name="fuxi", title="Fùxì",
    paper="Zhao et al. 2024, Fùxì: A Benchmark for Evaluating Language Models on Ancient Chinese Text "
          "Understanding and Generation",
    parse=parse,
    scorers={task.name: SCORER_OF_METRIC[task.metric] for task in TASKS.values()},
    # The ten QA tasks are scored by the paper's LLM evaluator (judge.yaml: its Figure 4 prompt, Y/N).
    paper_scorer={task.name: "judge" for task in TASKS.values() if task.metric == "llm_judge"},
    # The question is the passage for these tasks (a poem to translate or appreciate, a sentence
    # whose source is asked), and the answer is a classical text for those (a poem written to
    # keywords, the poem a translation renders, a ci to a tune).
    passages=classical(questions=frozenset({"PT", "PA", "ACT", "FQST", "PLST", "LCQA", "CG"}),
                       answers=frozenset({"PG", "CiG", "IPT", "CG"})),
    layout=JSONL,   # where its files lie under `path` (checked before any stage)
)
