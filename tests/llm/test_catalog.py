"""The bundled catalog's tables are checked as they are read: a `compat` switch or a model key
that is not known, or a value of the wrong kind, is one error naming the table (models.json is
edited by hand)."""

from __future__ import annotations

import pytest

from treechat.llm import catalog
from treechat.llm.catalog import ProviderInfo, builtin_providers, compat_said, model_info, model_spec
from treechat.llm.registry import ModelRefError, ModelRegistry
from treechat.llm.types import Compat


def test_a_models_compat_is_said_over_its_providers() -> None:
    openai = builtin_providers()["openai"]
    assert openai.compat == Compat(max_tokens_field="max_completion_tokens")
    model = model_info(openai, "gpt-5.3-codex")
    assert model.compat == Compat(max_tokens_field="max_completion_tokens", supports_xhigh=True, supports_minimal=False)
    assert model_info(openai, "an-id-nobody-listed").compat == openai.compat


@pytest.mark.parametrize("table,said", [
    ({"supports_xhig": True}, "unknown key 'compat.supports_xhig'"),
    ({"supports_xhigh": "yes"}, "compat.supports_xhigh must be true or false"),
    ({"max_tokens_field": "max_output_tokens"}, "compat.max_tokens_field 'max_output_tokens' is not one of"),
    ([], "compat: must be a table"),
])
def test_a_compat_table_is_checked(table, said) -> None:
    with pytest.raises(ValueError, match="^models.json, provider p") as raised:
        compat_said(table, "models.json, provider p")
    assert said in str(raised.value)


def test_a_model_table_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown key 'context'"):
        model_spec({"context": 8192}, "models.json, provider p, model m")
    with pytest.raises(ValueError, match="context_window must be a whole number over 0"):
        model_spec({"context_window": "8k"}, "models.json, provider p, model m")
    spec = model_spec({"context_window": 8192, "compat": {"adaptive_thinking": True}}, "m")
    info = model_info(ProviderInfo(name="p", api="anthropic", base_url="https://example.com", models={"m": spec}), "m")
    assert info.context_window == 8192 and info.compat.adaptive_thinking and info.api == "anthropic"


def test_an_edited_catalog_with_a_mistake_is_one_line_naming_the_file(monkeypatch) -> None:
    data = {"defaults": {}, "providers": {"p": {"api": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                "models": {"m": {"compat": {"suports_xhigh": True}}}}}}
    monkeypatch.setattr(catalog, "_data", lambda: data)
    with pytest.raises(ModelRefError) as raised:
        ModelRegistry(env={})
    said = str(raised.value)
    assert "models.json, provider p, model m: unknown key 'compat.suports_xhigh'" in said and "\n" not in said
    assert said.endswith(f"fix it in {catalog.catalog_file()}.")
