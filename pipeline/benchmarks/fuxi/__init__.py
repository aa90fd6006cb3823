"""Fùxì (Zhao et al., 2024): 21 understanding and generation tasks on classical Chinese; accuracy, BLEU, an LLM
judge, and format rules for couplets and ci."""

from pathlib import Path

from pipeline.benchmarks.benchmark_card import BenchmarkCard
from pipeline.benchmarks.fuxi.adapter import TASKS, parse

# The paper's metric per task -> wenheng's rule scorer (pipeline/scoring/rules.py).
SCORER_OF_METRIC = {"accuracy": "option", "bleu": "bleu", "llm_judge": "judge",
                    "rule_couplet": "format_rules", "rule_ci": "format_rules"}

CARD = BenchmarkCard(
    name="fuxi",
    title="Fùxì",
    paper="Zhao et al. 2024, Fùxì: A Benchmark for Evaluating Language Models on Ancient Chinese Text "
          "Understanding and Generation",
    folder=Path(__file__).parent,
    parse=parse,
    scorers={task.name: SCORER_OF_METRIC[task.metric] for task in TASKS.values()},
)
