"""Model routes and fallbacks: the real ``openai`` client against two fake OpenAI servers."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings, load_settings
from bot.engine.messages import failure_text
from bot.errors import (
    ConfigError,
    ContextOverflow,
    FallbacksFailed,
    ModelRejected,
    ModelStreamBroken,
)
from bot.llm.model import ModelRequest, NoticePiece
from bot.llm.openai_model import build_openai_model
from bot.llm.routing import RoutedModel
from tests.bot.llm.test_openai_model import (
    KEY,
    REQUEST,
    InstantClock,
    Result,
    closed_port,
    failure,
    run,
)
from tests.fakes.openai_server import CutOff, Delay, FakeOpenAI, Fault, Reply

LOCAL_KEY = "sk-local-9876543210fedcbaLOCAL"
LOCAL = "llama3.1"


@pytest.fixture
async def first() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def second() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
def clock() -> InstantClock:
    return InstantClock()


MakeModel = Callable[..., RoutedModel]


@pytest.fixture
async def make_model(
    first: FakeOpenAI,
    second: FakeOpenAI,
    clock: InstantClock,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[MakeModel]:
    """The configured model: ``gpt-4o`` on the first server, ``llama3.1`` on the second with
    its own key, and ``llama3.1`` as the fallback (unless the settings say otherwise)."""
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    monkeypatch.setenv("LOCAL_MODEL_KEY", LOCAL_KEY)
    made: list[RoutedModel] = []

    def make(**settings: Any) -> RoutedModel:
        values: dict[str, Any] = {
            "openai_api_key": KEY,
            "openai_base_url": first.base_url,
            "model": "gpt-4o",
            "model_max_retries": 0,
            "per_model": {LOCAL: {"base_url": second.base_url, "api_key_env": "LOCAL_MODEL_KEY"}},
            "fallback_models": [LOCAL],
        }
        model = build_openai_model(
            Settings(_env_file=None, **(values | settings)), clock, rng=random.Random(2)
        )
        assert isinstance(model, RoutedModel)
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


def notices(got: Result) -> list[str]:
    return [p.text for p in got.pieces if isinstance(p, NoticePiece)]


async def test_a_server_error_after_retries_falls_over_to_the_next_model(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    first.push(*[Fault.server_error(503)] * 3)
    second.push(Reply("Answered from the local model."))
    got = await run(make_model(model_max_retries=2))
    assert got.pieces[0] == NoticePiece(
        "gpt-4o did not answer (server error 503); answered by llama3.1"
    )
    assert got.text == "Answered from the local model."
    assert len(first.requests) == 3 and len(clock.sleeps) == 2  # the retries came first
    assert second.requests[0].body["model"] == LOCAL
    assert second.requests[0].headers["Authorization"] == f"Bearer {LOCAL_KEY}"
    assert first.requests[0].headers["Authorization"] == f"Bearer {KEY}"


async def test_an_exhausted_quota_falls_over_at_once(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    first.push(Fault.no_quota())
    second.push(Reply("Still here."))
    got = await run(make_model(model_max_retries=3))
    assert notices(got) == ["gpt-4o did not answer (no quota left); answered by llama3.1"]
    assert got.text == "Still here."
    assert len(first.requests) == 1 and clock.sleeps == []


async def test_a_server_that_does_not_answer_in_time_falls_over(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    never = asyncio.Event()
    first.push(Delay(Reply("too late"), until=never))
    second.push(Reply("On time."))
    try:
        got = await run(make_model(model_timeout_s=0.3))
    finally:
        never.set()
    assert notices(got) == ["gpt-4o did not answer (timed out); answered by llama3.1"]
    assert got.text == "On time."


async def test_an_unreachable_server_falls_over(second: FakeOpenAI, make_model: MakeModel) -> None:
    second.push(Reply("Reached."))
    got = await run(make_model(openai_base_url=f"http://127.0.0.1:{closed_port()}/v1"))
    assert notices(got) == ["gpt-4o did not answer (unreachable); answered by llama3.1"]
    assert got.text == "Reached."


async def test_a_refused_request_is_not_sent_to_another_model(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(Fault(400, "Invalid schema for function 'todo_write'.", param="tools"))
    error, got = await failure(make_model())
    assert isinstance(error, ModelRejected) and "Invalid schema" in str(error)
    assert got.pieces == [] and second.requests == []


async def test_a_context_too_long_is_not_sent_to_another_model(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(Fault.context_overflow())
    error, _ = await failure(make_model())
    assert isinstance(error, ContextOverflow)
    assert second.requests == []


async def test_an_answer_cut_after_its_text_is_not_finished_by_another_model(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(CutOff(Reply("Here is the first part of a long answer"), 4))
    error, got = await failure(make_model())
    assert isinstance(error, ModelStreamBroken)
    assert got.text and notices(got) == []
    assert second.requests == []


async def test_when_every_model_fails_one_error_says_how_each_did(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(Fault.server_error(503))
    second.push(Fault.no_quota())
    error, got = await failure(make_model())
    assert isinstance(error, FallbacksFailed)
    assert error.failures == (("gpt-4o", "server error 503"), (LOCAL, "no quota left"))
    assert got.pieces == []
    assert failure_text(error, partial=False) == (
        "No model could answer: gpt-4o (server error 503); llama3.1 (no quota left). "
        "Please try again in a moment."
    )


async def test_each_fallback_is_asked_in_turn(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(Fault.server_error(502), Reply("The mini model answers."))
    second.push(Fault.server_error(500))
    got = await run(make_model(fallback_models=[LOCAL, "gpt-4o-mini"]))
    assert notices(got) == [
        "gpt-4o did not answer (server error 502); llama3.1 did not answer (server error 500); "
        "answered by gpt-4o-mini"
    ]
    assert [r.body["model"] for r in first.requests] == ["gpt-4o", "gpt-4o-mini"]


async def test_a_model_with_a_route_is_asked_on_its_own_server(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    second.push(Reply("Local answer."))
    got = await run(
        make_model(fallback_models=[]), ModelRequest("", REQUEST.messages, (), model=LOCAL)
    )
    assert got.text == "Local answer." and notices(got) == []
    assert first.requests == []
    assert second.requests[0].headers["Authorization"] == f"Bearer {LOCAL_KEY}"


async def test_the_default_key_never_goes_to_another_server(
    first: FakeOpenAI, second: FakeOpenAI, make_model: MakeModel
) -> None:
    second.push(Reply("No key needed."))
    model = make_model(per_model={"ollama": {"base_url": second.base_url}}, fallback_models=[])
    got = await run(model, ModelRequest("", REQUEST.messages, (), model="ollama"))
    assert got.text == "No key needed."
    assert second.requests[0].headers["Authorization"] == "Bearer not-needed"


async def test_a_route_on_the_default_server_keeps_it_with_its_own_key(
    first: FakeOpenAI, make_model: MakeModel
) -> None:
    first.push(Reply("Billed elsewhere."))
    model = make_model(per_model={"gpt-4.1": {"api_key_env": "LOCAL_MODEL_KEY"}})
    got = await run(model, ModelRequest("", REQUEST.messages, (), model="gpt-4.1"))
    assert got.text == "Billed elsewhere."
    assert first.requests[0].headers["Authorization"] == f"Bearer {LOCAL_KEY}"


async def test_a_refused_route_key_names_its_variable_and_never_shows_it(
    second: FakeOpenAI, make_model: MakeModel
) -> None:
    second.push(Fault.bad_key(LOCAL_KEY))
    request = ModelRequest("", REQUEST.messages, (), model=LOCAL)
    error, _ = await failure(make_model(fallback_models=[]), request)
    assert isinstance(error, ModelRejected)
    assert "Check LOCAL_MODEL_KEY." in str(error)
    assert LOCAL_KEY not in str(error)


def test_a_route_key_is_one_of_the_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_MODEL_KEY", LOCAL_KEY)
    settings = Settings(_env_file=None, per_model={LOCAL: {"api_key_env": "LOCAL_MODEL_KEY"}})
    assert LOCAL_KEY in settings.secrets()


def test_fallback_models_are_a_comma_list_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    monkeypatch.setenv("THREADLINE_FALLBACK_MODELS", "gpt-4o-mini, llama3.1:8b")
    assert Settings(_env_file=None).fallback_models == ["gpt-4o-mini", "llama3.1:8b"]


def test_without_routes_or_fallbacks_the_model_is_the_plain_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    model = build_openai_model(
        Settings(_env_file=None, openai_api_key=KEY), InstantClock(), rng=random.Random(1)
    )
    assert not isinstance(model, RoutedModel)


@pytest.mark.parametrize(
    ("toml", "where", "problem"),
    [
        (
            '[per_model."llama3.1"]\napi_key_env = "NOT_SET_ANYWHERE"\n',
            'line 2: per_model."llama3.1".api_key_env',
            "the environment variable NOT_SET_ANYWHERE is not set",
        ),
        (
            '[per_model."llama3.1"]\nbase_url = "localhost:11434"\n',
            'line 2: per_model."llama3.1".base_url',
            "must be a URL starting with http:// or https://",
        ),
        (
            '[per_model."llama3.1"]\napi_key_env = "my key"\n',
            'line 2: per_model."llama3.1".api_key_env',
            "is not the name of an environment variable",
        ),
        (
            '[per_model."llama3.1"]\nkey = "sk-1"\n',
            'line 2: per_model."llama3.1".key',
            "unknown key 'key'",
        ),
        (
            'fallback_models = ["gpt 4o"]\n',
            "line 1: fallback_models",
            "is not a model name",
        ),
    ],
)
def test_a_wrong_route_is_refused_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, where: str, problem: str
) -> None:
    path = tmp_path / "threadline.toml"
    path.write_text(toml)
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None)
    assert caught.value.setting == f"{path}, {where}"
    assert problem in caught.value.problem


def test_a_wrong_fallback_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    monkeypatch.setenv("THREADLINE_FALLBACK_MODELS", "gpt-4o,,bad\tname")
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None)
    assert caught.value.setting == "THREADLINE_FALLBACK_MODELS"
