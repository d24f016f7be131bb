"""What every Python adapter shares: the framework is imported only when an
adapter is used, and a missing framework names the pip extra that installs it."""

from __future__ import annotations

import importlib
import subprocess
import sys
from typing import Any, Dict

import pytest

from conftest import BOB, Shop

ADAPTERS = [  # adapter module, the framework module it imports, the pip extra, tools() options
    ("openai_agents", "agents", "openai-agents", {}),
    ("langchain", "langchain_core.tools", "langchain", {}),
    ("langchain", "langgraph.types", "langgraph", {"interrupt": True}),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai", {}),
]


def test_importing_the_adapters_does_not_import_the_frameworks() -> None:
    code = ("import sys, harnessweaver.adapters.openai_agents, harnessweaver.adapters.langchain, "
            "harnessweaver.adapters.pydantic_ai; "
            "print(sorted(m for m in ('agents', 'langchain_core', 'langgraph', 'pydantic_ai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("adapter,framework,extra,options", ADAPTERS, ids=[a[2] for a in ADAPTERS])
def test_a_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch, shop: Shop, adapter: str,
                                             framework: str, extra: str, options: Dict[str, Any]) -> None:
    module = importlib.import_module(f"harnessweaver.adapters.{adapter}")
    monkeypatch.setitem(sys.modules, framework, None)  # `import framework` now raises ImportError
    if adapter == "langchain" and extra == "langchain":
        monkeypatch.setattr(module, "_TOOL_CLASS", None)
    with pytest.raises(ImportError, match=rf"pip install 'harnessweaver\[{extra}\]'") as missing:
        module.tools(shop.h, shop.h.run(principal=BOB), **options)
    assert missing.value.code == "framework_missing"
