"""``threadline doctor`` prints the model's effective settings (globally and per model) and
warns of valid values that are likely mistakes."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.test_cli import threadline

CONFIG = """
model = "gpt-4o-mini"
temperature = 2.5
max_output_tokens = 4000

[per_model."qwen3"]
context_window = 32000
temperature = 0.6
top_p = 0.95
reasoning_effort = "high"

[per_model."gpt-4o-mnii"]
seed = 7

[channels."slack:T1:COPS"]
model = "qwen3"
max_output_tokens = 40000
"""


def test_doctor_prints_the_model_settings_and_warns_of_likely_mistakes(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(CONFIG)
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert (
        "[--  ] model settings: context window 128,000 tokens, answers up to 4,000 tokens "
        "(fewer when the prompt leaves less room); sampling: temperature 2.5"
    ) in lines
    assert (
        '[--  ] per_model "qwen3": context window 32,000 tokens, answers up to 4,000 tokens '
        "(fewer when the prompt leaves less room); sampling: temperature 0.6, top_p 0.95, "
        "reasoning_effort high"
    ) in lines
    warnings = [x.removeprefix("[--  ] warning: ") for x in lines if "warning:" in x]
    assert warnings == [
        "global: temperature 2.5 is above 2, which OpenAI and most servers refuse",
        'per_model "qwen3": both temperature and top_p are set; OpenAI advises setting one of them',
        'channel "slack:T1:COPS": max_output_tokens 40,000 does not fit the context window of '
        "32,000 tokens; each answer gets what the prompt leaves",
        'per_model "gpt-4o-mnii" names a model no setting uses: it applies only where '
        "/threadline model chooses it",
    ]
    channel = next(x for x in lines if 'channel "slack:T1:COPS":' in x and "warning" not in x)
    assert 'context_window 32000 (per_model "qwen3")' in channel
    assert 'sampling: temperature 0.6 (per_model "qwen3"), top_p 0.95 (per_model "qwen3")' in (
        channel
    )
