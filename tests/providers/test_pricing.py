"""Price table, context windows, cost arithmetic and the override file."""

from __future__ import annotations

import json

import pytest

from services.providers.base import Usage
from services.providers.errors import classify_status, retry_after_from_headers
from services.providers.pricing import DEFAULT_CONTEXT_WINDOW, UNKNOWN, load_price_table


@pytest.fixture
def table():
    return load_price_table()


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("claude-sonnet-4-20250514", (3, 15, 0.3, 3.75)),
        ("claude-haiku-4.5", (0.8, 4, 0.08, 1)),
        ("claude-opus-4-20250514", (15, 75, 1.5, 18.75)),
        ("gpt-4", (30, 60, None, None)),
        ("gpt-4o-mini", (0.15, 0.6, None, None)),  # not gpt-4: the longest matching key wins
        ("gpt-3.5-turbo", (0.5, 1.5, None, None)),
        ("gemini-pro", (0.5, 1.5, None, None)),
        ("gemini-1.5-pro-002", (3.5, 10.5, None, None)),
        ("mistral-large", (1, 3, 0.1, 1.25)),
    ],
)
def test_seed_prices(table, model, price):
    p = table.price_of(model)
    assert (p.input, p.output, p.cache_read, p.cache_write) == price


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-20250514", 200_000),
        ("claude-haiku-4.5", 200_000),
        ("gpt-4", 128_000),
        ("gpt-3.5-turbo", 16_385),
        ("gemini-pro", 1_000_000),
        ("gemini-1.5-pro", 2_000_000),
        ("some-new-model", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_windows(table, model, window):
    assert table.context_window(model) == window


def test_cost_uses_all_four_token_kinds(table):
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000, cache_write_tokens=400_000)
    assert table.with_cost("claude-sonnet-4-20250514", usage).cost_usd == pytest.approx(3 + 1.5 + 0.6 + 1.5)
    # Without cache prices, cached input costs the input price (no discount assumed).
    assert table.with_cost("gpt-4", usage).cost_usd == pytest.approx(30 + 6 + 60 + 12)


def test_local_models_are_free(table):
    usage = Usage(input_tokens=10_000, output_tokens=10_000)
    assert table.with_cost("SmolLM2-135M-Instruct", usage).cost_usd == 0.0
    assert table.with_cost("whatever", usage, local=True).cost_usd == 0.0
    assert table.with_cost("whatever", usage).cost_usd == pytest.approx(UNKNOWN.cost(usage))


def test_json_override_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "prices": {"gpt-4o-mini": {"input": 0.1, "output": 0.4, "cache_read": 0.05}, "my-model": {"input": 2, "output": 4}},
                "context_windows": {"my-model": 32768},
            }
        )
    )
    table = load_price_table(path)
    assert table.price_of("gpt-4o-mini").cache_read == 0.05
    assert table.price_of("my-model-v2").output == 4
    assert table.context_window("my-model-v2") == 32768
    assert table.price_of("claude-sonnet-4").input == 3  # defaults stay


def test_toml_override_file(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[prices."sonnet-4"]\ninput = 2.5\noutput = 12.5\n\n[context_windows]\n"sonnet-4" = 1000000\n')
    table = load_price_table(path)
    price = table.price_of("claude-sonnet-4-20250514")
    assert (price.input, price.output, price.cache_read) == (2.5, 12.5, None)
    assert table.context_window("claude-sonnet-4-20250514") == 1_000_000


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [({"Retry-After": "12"}, 12.0), ({"retry-after-ms": "250"}, 0.25), ({}, None), ({"retry-after": "soon"}, None)],
)
def test_retry_after_headers(headers, seconds):
    assert retry_after_from_headers(headers) == seconds


def test_retry_after_http_date():
    assert retry_after_from_headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


@pytest.mark.parametrize(
    ("status", "message", "kind", "retryable"),
    [
        (429, "slow down", "rate_limited", True),
        (408, "request timeout", "timeout", True),
        (502, "bad gateway", "provider_down", True),
        (400, "exceeds the available context size", "context_overflow", False),
        (413, "request too large", "context_overflow", False),
        (400, "temperature: must be <= 1", "invalid_request", False),
        (403, "forbidden", "auth", False),
    ],
)
def test_status_classification(status, message, kind, retryable):
    error = classify_status("p", status, message)
    assert (error.kind, error.retryable, error.status_code) == (kind, retryable, status)
