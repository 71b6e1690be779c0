"""The model's settings: temperature, top_p, seed, reasoning effort, the context window and
the answer's cap, set globally, per model (``[per_model."NAME"]``) and per channel. Each value
comes from the highest layer that sets it: a channel's section wins over the model's table,
which wins over the global settings. Through the real core, SQLite store and a scripted model:
what each thread's requests carry; and each mistaken value refused with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.api.commands import ChooseModel, run_command
from bot.api.inbound import ThreadKey
from bot.config import load_settings
from bot.engine.states import EngineConfig
from bot.errors import ConfigError
from bot.llm.messages import Summary
from bot.llm.model import Sampling
from bot.thread.settings import Channels
from tests.bot.world import ALICE, World
from tests.fakes.config import configure
from tests.fakes.scripted_model import text

OPS = "slack:T1:COPS:200.1"
GENERAL = "slack:T1:CGEN:100.1"
PER_MODEL: dict[str, Any] = {
    "global-model": {"temperature": 0.5, "context_window": 64_000},
    "thinker": {
        "temperature": 1.0,
        "reasoning_effort": "high",
        "context_window": 32_000,
        "max_output_tokens": 8_000,
    },
}
CHANNELS: dict[str, Any] = {"slack:T1:COPS": {"model": "thinker", "temperature": 0.1, "seed": 3}}


def world(tmp_path: Path, **settings: Any) -> World:
    w = World(
        tmp_path,
        per_model=PER_MODEL,
        channels=CHANNELS,
        temperature=0.7,
        top_p=0.95,
        max_output_tokens=2_000,
        **settings,
    )
    w.core = w._core(model="global-model")
    return w


def test_a_channel_wins_over_the_models_table_which_wins_over_the_global_settings(
    tmp_path: Path,
) -> None:
    channels = world(tmp_path).core.channels
    ops = channels.config(OPS)  # the channel's model "thinker", and its own temperature and seed
    assert ops.sampling == Sampling(temperature=0.1, top_p=0.95, seed=3, reasoning_effort="high")
    assert (ops.context_window, ops.max_output_tokens) == (32_000, 8_000)
    general = channels.config(GENERAL)  # THREADLINE_MODEL's own table over the global settings
    assert general.sampling == Sampling(temperature=0.5, top_p=0.95)
    assert (general.context_window, general.max_output_tokens) == (64_000, 2_000)
    other = channels.config(GENERAL, "other-model")  # no table: the global settings
    assert other.sampling == Sampling(temperature=0.7, top_p=0.95)
    assert other.context_window == 128_000


async def test_each_request_carries_its_threads_settings(tmp_path: Path) -> None:
    w = world(tmp_path)
    await w.core.start()
    w.model.respond = lambda request: text("ok")
    await w.say("hello", key=OPS)
    await w.say("hello", key=GENERAL)
    said = await run_command(
        w.core, ChooseModel("thinker"), ThreadKey(GENERAL), w.thread(GENERAL), ALICE
    )
    assert said == "This thread now uses thinker; other threads are unchanged."
    await w.say("and now?", key=GENERAL)
    ops, general, chosen = w.model.requests
    assert ops.model == "thinker" and ops.sampling.temperature == 0.1
    assert ops.sampling.reasoning_effort == "high" and ops.max_tokens == 8_000
    assert general.sampling == Sampling(temperature=0.5, top_p=0.95) and general.max_tokens == 2_000
    assert chosen.model == "thinker" and chosen.max_tokens == 8_000
    assert chosen.sampling == Sampling(temperature=1.0, top_p=0.95, reasoning_effort="high")
    await w.core.aclose()


async def test_the_answers_budget_shrinks_as_the_thread_fills_the_window(tmp_path: Path) -> None:
    w = world(tmp_path, compact_at=1.0, max_input_chars=200_000)
    await w.core.start()
    w.model.respond = lambda request: text("ok")
    await w.say("hi", key=OPS)  # thinker: a window of 32,000 tokens and answers up to 8,000
    await w.say("x" * 4 * 25_000, key=OPS)  # about 25,000 tokens more
    first, second = w.model.requests
    assert first.max_tokens == 8_000
    assert second.max_tokens is not None and 4_000 < second.max_tokens < 6_500
    status = await w.core.describe(ThreadKey(OPS))
    assert "Context: about 8" in status and "% of 32,000 tokens" in status
    await w.core.aclose()


async def test_compaction_follows_the_window_of_the_model_in_use(tmp_path: Path) -> None:
    w = world(tmp_path, keep_recent_turns=1, max_input_chars=200_000)
    await w.core.start()
    w.model.respond = lambda request: text("summary" if not request.tools else "ok")
    long = "y" * 4 * 9_000  # about 9,000 tokens a message
    for _ in range(3):  # about 27,000 tokens: past 80% of thinker's 32,000, not of 64,000
        await w.say(long, key=OPS)
        await w.say(long, key=GENERAL)
    ops = await w.core.store.load_session(ThreadKey(OPS), w.clock.now())
    general = await w.core.store.load_session(ThreadKey(GENERAL), w.clock.now())
    assert isinstance(ops.messages[0], Summary)
    assert not any(isinstance(m, Summary) for m in general.messages)
    await w.core.aclose()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "temperature = -0.5\n",
            "threadline.toml, line 1: temperature: Input should be greater than or equal to 0",
        ),
        (
            "top_p = 1.5\n",
            "threadline.toml, line 1: top_p: Input should be less than or equal to 1",
        ),
        (
            'reasoning_effort = "extreme"\n',
            "threadline.toml, line 1: reasoning_effort: "
            "must be one of none, minimal, low, medium, high, xhigh (not 'extreme')",
        ),
        (
            "seed = -1\n",
            "threadline.toml, line 1: seed: Input should be greater than or equal to 0",
        ),
        (
            '[per_model."o3"]\ntemprature = 1\n',
            "threadline.toml, line 2: per_model.o3.temprature: unknown key 'temprature' "
            "(did you mean 'temperature'?)",
        ),
        (
            '[per_model."o3"]\ncontext_window = 10\n',
            "threadline.toml, line 2: per_model.o3.context_window: "
            "Input should be greater than or equal to 1000",
        ),
        (
            '[per_model."my model"]\ntemperature = 1\n',
            "threadline.toml, line 1: per_model.\"my model\": 'my model' is not a model name "
            "(1-200 characters without spaces)",
        ),
        (
            '[channels."slack:T1:C1"]\ntop_p = 2\n',
            'threadline.toml, line 2: channels."slack:T1:C1".top_p: '
            "Input should be less than or equal to 1",
        ),
    ],
    ids=[
        "temperature",
        "top_p",
        "effort",
        "seed",
        "per-model-key",
        "per-model-window",
        "per-model-name",
        "channel-top-p",
    ],
)
def test_a_mistaken_value_is_refused_with_its_place_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "threadline.toml").write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_settings(data_dir=tmp_path)
    assert str(refused.value) == said


def test_the_environment_sets_the_global_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THREADLINE_TEMPERATURE", "0.3")
    monkeypatch.setenv("THREADLINE_TOP_P", "0.8")
    monkeypatch.setenv("THREADLINE_SEED", "11")
    monkeypatch.setenv("THREADLINE_REASONING_EFFORT", "low")
    monkeypatch.setenv("THREADLINE_PER_MODEL", '{"o3": {"context_window": 200000}}')
    settings = load_settings(data_dir=tmp_path)
    assert (settings.temperature, settings.top_p, settings.seed) == (0.3, 0.8, 11)
    assert settings.reasoning_effort == "low"
    assert settings.per_model["o3"].context_window == 200_000


def test_reading_tool_calls_written_as_text_can_be_one_models_own(tmp_path: Path) -> None:
    tables = {**PER_MODEL, "qwen-local": {"text_tool_calls": True}}

    def channels(**values: Any) -> Channels:
        settings, _ = configure(data_dir=tmp_path, per_model=tables, **values)
        return Channels(settings, EngineConfig.from_settings(settings))

    assert channels().config(GENERAL, "qwen-local").text_tool_calls is True
    assert channels().config(GENERAL).text_tool_calls is False  # the global setting: off
    assert channels(text_tool_calls=True).config(GENERAL, "thinker").text_tool_calls is True
