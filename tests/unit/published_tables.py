"""Published numbers from the benchmarks' papers, for tests/unit/test_reproduction.py: the model rows
are the cards' own data (each card's published.yaml, shown beside a user's rows); the task names
and sizes, and the few excerpts no card table places, are typed in here.

Every block names the paper table it comes from. Numbers are as printed (x100), except where a
comment says how a block was repaired from the paper text (misaligned rows, typos in names).
Nothing here is a benchmark item: only the papers' result tables, task names and task sizes.
"""

from __future__ import annotations

from pipeline.benchmarks import cards


def _published(benchmark: str, table: str) -> str:
    """A result table as its card's published.yaml gives it (the paper's CSV, as printed)."""
    return cards()[benchmark].published.csv(table)

# ==== WenMind (Cao et al., NeurIPS 2024) =====================================================

# Section 4.4 / Appendix B.1: the 26 coarse tasks T1..T26 in the paper's order, with the names,
# domain and capability the released data (WenMind_ver1.json) gives them, and n_t = items per task.
WENMIND_TASKS = """\
t,coarse_task,domain,capability,n
T1,sentence structure,ancient prose,understanding,100
T2,classical Chinese to modern Chinese,ancient prose,understanding,200
T3,modern Chinese to classical Chinese,ancient prose,understanding,200
T4,named entity recognition,ancient prose,understanding,200
T5,punctuation,ancient prose,understanding,200
T6,topic classification,ancient prose,understanding,200
T7,word explanation,ancient prose,understanding,100
T8,reading comprehension,ancient prose,understanding,100
T9,function words,ancient prose,understanding,100
T10,homophones,ancient prose,understanding,200
T11,polysemy,ancient prose,understanding,200
T12,ancient prose writing,ancient prose,generation,100
T13,appreciation,ancient poetry,understanding,250
T14,ancient poetry writing,ancient poetry,generation,100
T15,basic Q&A,ancient poetry,knowledge,750
T16,ancient poetry translation,ancient poetry,understanding,200
T17,sentiment classification,ancient poetry,understanding,200
T18,ancient poetry to English,ancient poetry,understanding,50
T19,poet introduction,ancient poetry,knowledge,110
T20,analysis of imagery,ancient poetry,knowledge,185
T21,couplet,ancient literary culture,generation,300
T22,idiom,ancient literary culture,knowledge,400
T23,riddle,ancient literary culture,knowledge,100
T24,xiehouyu,ancient literary culture,knowledge,100
T25,historical Chinese phonology,ancient literary culture,knowledge,100
T26,knowledge of sinology Q&A,ancient literary culture,knowledge,130
"""

# Table 3: Overall and T1..T26 (ERNIE-3.5 judge). The extracted text misaligns its first rows;
# re-joined here: the row printed as "Baichuan2-7B-Chat" carries Baichuan2-13B's T13-T26 (and so
# on down), the row printed as "ChatGLM2-6B" with Overall 39.5 is ChatGLM3-6B. Baichuan2-7B's
# T13-T26 and ChatGLM2-6B's T1-T12 are lost (left empty). Names fixed: "LLaMA2-8B-Instruct" is
# LLaMA3-8B-Instruct, "Bloom-7B-Chinese" is Bloom-7B-Chunhua.
WENMIND_TABLE3 = _published("wenmind", "Table 3")

# Table 4: Overall, the three domains and the three capabilities.
WENMIND_TABLE4 = _published("wenmind", "Table 4")

# Table 12 (fine-grained subtasks), the columns of T13 and T14 for the two rows whose Table 3
# cell it corrects ("Zylo-LLaMA3-13B-v1" in Table 12 is Ziya-LLaMA-13B-v1.1), with the subtasks'
# item counts (T13-1 150, T13-2 100; T14-1 30, T14-2 50, T14-3 20).
WENMIND_TABLE12_EXCERPT = """\
model,T13-1,T13-2,T14-1,T14-2,T14-3
Qwen1.5-72B-Chat,79.7,74.1,57.3,69.6,76.5
Ziya-LLaMA-13B-v1.1,43.9,49.1,39.0,53.8,57.0
"""
WENMIND_FINE_SIZES = {"T13": [150, 100], "T14": [30, 50, 20]}

# Table 5, column T5/MSM (the judge score, which Table 3 otherwise repeats): LLaMA3-Chinese-8B-Chat.
WENMIND_TABLE5_T5_MSM = {"LLaMA3-Chinese-8B-Chat": 68.5}


# ==== AC-EVAL (Wei et al., EMNLP Findings 2024) ==============================================

# Subjects (subject_mapping.json file stems) with the paper's abbreviations, levels and test sizes
# (the released test files, 3,180 questions).
ACEVAL_SUBJECTS = """\
abbr,subject,level,n
HF,historical_facts,General Historical Knowledge,199
GEO,geography,General Historical Knowledge,197
SC,social_customs,General Historical Knowledge,202
ACH,art_and_cultural_heritage,General Historical Knowledge,195
PR,philosophy_and_religion,General Historical Knowledge,196
LPA,lexical_pragmatics_analysis,Short Text Understanding,198
AI,allusions_and_idioms,Short Text Understanding,206
WSD,word_sense_disambiguation,Short Text Understanding,402
TR,translation,Short Text Understanding,199
EE,event_extraction,Short Text Understanding,185
SP,sentence_pauses,Long Text Understanding,202
SA,summarization_and_analysis,Long Text Understanding,598
PA,poetry_appreciation,Long Text Understanding,201
"""
ACEVAL_LEVELS = {"GHK": "General Historical Knowledge", "STU": "Short Text Understanding",
                 "LTU": "Long Text Understanding"}

# Tables 2-3 and 7 (per subject, all four settings), as in the authors' breakdown_results.xlsx:
# zero-/few-shot answer-only (AO) and chain-of-thought (CoT); GHK/STU/LTU are the level scores and
# Average their mean. The paper's Table 7 permutes 8 subject labels of the short/long-text rows;
# the xlsx labels are the ones that fit the test sizes (e.g. ERNIE 78.22 = 158/202 is SP, not
# LPA), so they are used. LLaMA2-70B zero-shot LTU is 30.78 (xlsx, consistent with its Average);
# the paper prints 30.72. Every subject value is k/n_test except ERNIE-Bot-4.0 few-shot HF 76.76.
ACEVAL_RESULTS = _published("aceval", "Tables 3-6")


# ==== WYWEB (Zhou et al., ACL Findings 2023) =================================================

# Table 2: the eight NLU tasks (PUNC and GLNER F1, the others accuracy) and Avg. (their mean).
WYWEB_TABLE2 = _published("wyweb", "Table 2")
WYWEB_TASKS = {"PUNC": "punc", "GLNER": "glner", "GJC": "gjc", "FSPC": "fspc", "TLC": "tlc", "Xuci": "xuci",
               "WYWRC": "wywrc", "IRC": "irc"}


# ==== Fùxì (Zhao et al., 2024) ===============================================================

# Table 2: test items per task (TCMNER, listed there but in no results table, is left out).
FUXI_SIZES = {"ACRC": 300, "IRC": 1000, "TCMSRC": 1098, "ASQA": 553, "LCQA": 500, "BA": 384, "BD": 372, "BCC": 532,
              "PG": 300, "PLST": 400, "FQST": 200, "IST": 962, "IPT": 300, "PT": 300, "ACT": 1000, "PA": 109,
              "IE": 1236, "TCMQA": 740, "PE": 404, "CG": 500, "CiG": 300}

# Table 3: zero-shot per task (accuracy; BLEU for PT, ACT, PA, IE, TCMQA, PE). "PG" here is the
# Poetry Generation task.
FUXI_TABLE3 = _published("fuxi", "Table 3")

# Table 4: Couplet Generation (CG) and Ci Generation (CiG), zero-shot and 5-shot (the caption
# misnames them; "62.6" is printed so).
FUXI_TABLE4 = _published("fuxi", "Table 4")

# Table 5: zero-shot category averages; here PG is the Pattern-constrained Generation category.
FUXI_TABLE5 = _published("fuxi", "Table 5")

# Table 7: 5-shot per task, model names as printed (underscores where Table 8 has hyphens). It has
# no rows for gpt-4o(-mini) or qwen-max, and rows for qwen2_1.5b and yi34bchat, which Tables 4 and
# 8 do not have.
FUXI_TABLE7 = _published("fuxi", "Table 7")

# Table 8: 5-shot category averages ("-" = not reported).
FUXI_TABLE8 = _published("fuxi", "Table 8")


# ==== CP-DUE (anonymous ACL submission) ======================================================

# Table 2: accuracy per module; AU per question and all three right, OQ best, worst and both.
CPDUE_TABLE2 = _published("cpdue", "Table 2")
