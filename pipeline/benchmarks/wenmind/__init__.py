"""WenMind (Cao et al., NeurIPS 2024 Datasets and Benchmarks): 4,875 questions in 42 fine tasks,
26 coarse tasks, 3 domains and 3 capabilities; MCQ, QA and fill-in-the-blank."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.benchmarks.wenmind.adapter import LAYOUT, parse
from pipeline.benchmarks.wenmind.official_prompts import OFFICIAL_JUDGE_PROMPTS
from pipeline.contamination.passages import classical

CARD = BenchmarkCard(
    name="wenmind", title="WenMind",
    paper="Cao et al. 2024, WenMind: A Comprehensive Benchmark for Evaluating Large Language Models "
          "in Chinese Classical Literature and Language Arts",
    parse=parse,
    # Sentiment-style MCQs whose gold is a label text (not a letter) are matched on the label set.
    scorers={"classification": "label"},
    # The paper scores every item with its LLM judge (judge.yaml routes each to one of its four
    # score types); the rule scores above stay beside them as a judge-free number.
    paper_scorer="judge",
    # The passage an item asks about sits inside its question (内容：…, a quoted line, …); these
    # tasks' answers are classical texts themselves (a poem recited, a line, the original).
    passages=classical(answers=frozenset({
        "content Q&A", "comprehension dictation", "write the next sentence", "write the previous sentence",
        "modern Chinese to classical Chinese", "punctuation"})),
    layout=LAYOUT,   # where its files lie under `path` (checked before any stage)
)

# Beside CARD, the card's hook (pipeline/benchmarks/__init__.py): WenMind's own judge prompts,
# Task_Score_Prompt.json at a pinned commit, and their reader (`judges: {prompts: official}`).
__all__ = ["CARD", "OFFICIAL_JUDGE_PROMPTS"]
