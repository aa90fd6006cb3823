"""Log-likelihood choice scoring without a model: what is scored after the prompt, which option
wins (ties, per-character normalisation, several questions), the cache of the numbers, the
configuration's refusal of a chat endpoint, and the stop rule of a base model's run-on answer."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import write_yaml

from pipeline.config import ModelSpec
from pipeline.config.loading import load_models
from pipeline.config.problems import ConfigError
from pipeline.engines import Completion, Request
from pipeline.engines.cache import ResponseCache
from pipeline.inference import chosen_answer, continuations_of, plan, response_rows
from pipeline.prompts import build_prompt_rows
from pipeline.scoring.rules import before_stop, score_rows

MCQ = {"item_id": "aceval/test/historical_facts/1", "benchmark": "aceval", "split": "test",
       "task": "historical_facts", "task_group": "history", "format": "mcq_single", "domain": "历史",
       "question": "秦统一六国在哪一年？", "context": None,
       "choices": ["公元前221年", "公元前206年", "公元前202年", "公元前230年"], "answer": "A",
       "references": [], "source_locator": "1", "metadata": {}}


def _variant(item: dict) -> dict:
    return {k: item[k] for k in ("item_id", "benchmark", "context", "question", "choices", "answer",
                                  "references")} | {"variant": "original"}


def _plan(spec: ModelSpec, item: dict = MCQ) -> dict[str, Request]:
    rows = build_prompt_rows([item], [_variant(item)])
    return {row["setting"]: req for row, req in plan(spec, {"engine": spec.engine}, item["benchmark"], rows,
                                                      {item["item_id"]: item})}


BASE = ModelSpec("base", "vllm", {"model": "m", "chat_template": False}, {"temperature": 0.0},
                 settings={"aceval": ("zero_shot_ao", "zero_shot_cot", "loglikelihood", "loglikelihood_norm")})
CHAT = ModelSpec("chat", "vllm", {"model": "m"}, {}, settings=BASE.settings)


def test_letters_and_texts_are_scored_after_the_prompt_with_no_stop_and_their_own_keys():
    asked = _plan(BASE)
    letters, texts = asked["loglikelihood"], asked["loglikelihood_norm"]
    assert letters.continuations == ("A", "B", "C", "D") and texts.continuations == tuple(MCQ["choices"])
    assert letters.messages == asked["zero_shot_ao"].messages   # the paper's prompt, ending in 答案：
    assert letters.messages[0]["content"].endswith("答案：")
    assert letters.stop == () and letters.max_tokens is None and letters.temperature == 0.0
    assert len({r.cache_key for r in asked.values()}) == 4


def test_a_base_model_gets_its_settings_stop_sequences_and_a_chat_model_none():
    base, chat = _plan(BASE), _plan(CHAT)
    assert base["zero_shot_ao"].stop == ("\n\n", "题目：", "示例")
    assert base["zero_shot_cot"].stop == ("题目：", "示例")   # a chain of thought may hold a blank line
    assert chat["zero_shot_ao"].stop == () and chat["zero_shot_cot"].stop == ()
    assert base["zero_shot_ao"].cache_key != chat["zero_shot_ao"].cache_key


def test_the_run_on_answer_of_a_base_model_is_not_credited():
    # a base model answered C, then wrote a question of its own whose "answer" is the gold (A)
    run_on = "C\n\n题目：下列关于秦朝的说法，正确的一项是\nA. 秦朝统一了文字\nB. 秦朝废除了郡县\n答案：A"
    response = {"item_id": MCQ["item_id"], "benchmark": "aceval", "variant": "original", "setting": "zero_shot_ao",
                "model": "base", "text": run_on, "error": None}
    [cut] = score_rows([response | {"stop": ["\n\n", "题目：", "示例"]}], [MCQ])
    assert (cut["extracted"], cut["score"]) == ("C", 0.0)
    assert before_stop(run_on, ["题目："]) == "C\n\n" and before_stop(run_on, None) == run_on
    assert before_stop("B", ["\n\n"]) == "B" and before_stop(None, ["x"]) is None


def test_the_highest_option_wins_ties_go_to_the_first_and_texts_are_normalised_per_character():
    req = Request(cache_key="k", messages=(), max_tokens=None, continuations=("长的选项文字", "短"),
                  choices=("A", "B"))
    assert chosen_answer(req, (-6.0, -3.0), per_char=False) == "B"    # acc: the sum
    assert chosen_answer(req, (-6.0, -3.0), per_char=True) == "A"     # acc_norm: -1.0 a character against -3.0
    tie = Request(cache_key="k", messages=(), max_tokens=None, continuations=("A", "B", "C"), choices=("A", "B", "C"))
    assert chosen_answer(tie, (-2.0, -1.0, -1.0), per_char=False) == "B"
    labels = Request(cache_key="k", messages=(), max_tokens=None, continuations=("积极", "消极"),
                     labels=("积极", "消极"))
    assert chosen_answer(labels, (-4.0, -1.5), per_char=True) == "消极"   # a label-text item answers its label
    au = Request(cache_key="k", messages=(), max_tokens=None, continuations=("A", "B", "C", "D"),
                 choices=("A", "B", "C", "D"), picks=3)
    assert chosen_answer(au, (-1, -2, -3, -4, -4, -3, -2, -1, -2, -1, -2, -3), per_char=False) == "ADB"


def test_what_each_kind_of_choice_item_is_scored_by():
    assert continuations_of(MCQ, "letters") == ("A", "B", "C", "D")
    assert continuations_of(MCQ, "texts") == tuple(MCQ["choices"])
    inline = MCQ | {"benchmark": "wenmind", "choices": []}   # WenMind: options written in the question
    assert continuations_of(inline, "texts") == ("A", "B", "C", "D")
    label = inline | {"format": "classification", "metadata": {"labels": ["消极", "积极"]}}
    assert continuations_of(label, "letters") == ("消极", "积极") == continuations_of(label, "texts")
    au = MCQ | {"choices": [], "metadata": {"questions": [{}, {}, {}], "options_per_question": 4}}
    assert continuations_of(au, "texts") == ("A", "B", "C", "D")   # the prompt asks for letters


def test_only_single_answer_choice_items_get_log_likelihood_prompts():
    open_item = MCQ | {"item_id": "aceval/test/historical_facts/2", "format": "open_qa", "choices": []}
    rows = build_prompt_rows([MCQ, open_item], [_variant(MCQ), _variant(open_item)])
    scored = {(r["item_id"], r["setting"]) for r in rows if r["setting"].startswith("loglikelihood")}
    assert scored == {(MCQ["item_id"], "loglikelihood"), (MCQ["item_id"], "loglikelihood_norm")}


def test_response_rows_keep_the_numbers_and_write_the_chosen_option():
    asked = _plan(BASE)
    planned = [({"item_id": MCQ["item_id"], "benchmark": "aceval", "variant": "original", "setting": s,
                 "prompt_hash": "p"}, asked[s]) for s in ("loglikelihood", "loglikelihood_norm")]
    numbers = {asked["loglikelihood"].cache_key: (-1.5, -0.9, -2.0, -2.5),
               asked["loglikelihood_norm"].cache_key: (-13.8, -13.3, -13.2, -13.7)}
    found = {k: Completion(text=None, logprobs=v, finish_reason="scored") for k, v in numbers.items()}
    letters, texts = response_rows("base", planned, found)
    assert (letters["text"], letters["logprobs"], letters["continuations"]) == ("B", [-1.5, -0.9, -2.0, -2.5],
                                                                                 ["A", "B", "C", "D"])
    assert texts["text"] == "C" and letters["stop"] is None and letters["max_tokens"] is None


def test_the_cache_keeps_each_continuations_number_and_adds_the_column_to_an_old_file(tmp_path):
    path = tmp_path / "responses.sqlite"
    old = sqlite3.connect(path)   # a cache file from before log-likelihood: no logprobs column
    old.execute("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, text TEXT, finish_reason TEXT, tokens_in "
                "INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT, created_at TEXT, model TEXT)")
    old.execute("INSERT INTO responses VALUES ('g', 'B', 'stop', 3, 1, 0.1, NULL, '2026-01-01T00:00:00.000Z', 'm')")
    old.commit()
    old.close()
    numbers = (-1.0986122886681098, -0.1, -1e-300, -42.0)
    with ResponseCache(path) as cache:
        with cache.writer() as writer:
            writer.put("s", Completion(text=None, logprobs=numbers, finish_reason="scored"))
        cache.put("t", Completion(text=None, logprobs=(-3.5,)))
        got = cache.get_many(["g", "s", "t"])
    assert got["g"].text == "B" and got["g"].logprobs is None
    assert got["s"].logprobs == numbers and got["s"].text is None   # every digit kept
    assert got["t"].logprobs == (-3.5,)


def test_a_chat_endpoint_asked_by_log_likelihood_is_refused_in_one_line(tmp_path):
    path = write_yaml(tmp_path / "models.yaml", """models:
  hosted:
    engine: openai
    model: gpt-4o-mini
    api_key_env: null
    settings: {aceval: [zero_shot_ao, loglikelihood]}
""")
    with pytest.raises(ConfigError) as caught:
        load_models(path)
    message = str(caught.value)
    assert "models.hosted.settings" in message and "aceval.loglikelihood" in message
    assert "chat endpoint returns no log-probabilities" in message and len(message.splitlines()) == 1
    completions = write_yaml(tmp_path / "ok.yaml", path.read_text(encoding="utf-8").replace(
        "api_key_env: null", "api_key_env: null\n    chat: false"))
    assert load_models(completions)["hosted"].settings == {"aceval": ("zero_shot_ao", "loglikelihood")}


@pytest.mark.parametrize("setting, says", [
    ("{template: '{question}', loglikelihood: words}", "loglikelihood must be one of letters, texts"),
    ("{template: '{question}', loglikelihood: letters, constrained_choice: true}", "not both"),
    ("{template: '{question}', stop: ['']}", r"settings.a.stop: expected a list of non-empty strings \(got \[''\]\)"),
])
def test_a_bad_log_likelihood_or_stop_setting_names_its_key(tmp_path, setting, says):
    from pipeline.benchmark_card import read_protocol

    path = write_yaml(tmp_path / "protocol.yaml", f"settings:\n  a: {setting}\n")
    with pytest.raises(ConfigError, match=says):
        read_protocol(path)
