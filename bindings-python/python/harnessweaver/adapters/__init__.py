"""Adapters: a harness's tools as the tools of the agent framework you already use.

Each module wraps the tools a run's principal may call (``h.tool_specs``) as that
framework's tools, with the name, description and input schema of the pinned
manifest; every call goes through the governor with the run's context. Refusals
reach the model as the framework's tool errors, carrying the core's code, and
approvals use the framework's own approval mechanism:

- :mod:`harnessweaver.adapters.openai_agents` (``pip install 'harnessweaver[openai-agents]'``)
- :mod:`harnessweaver.adapters.langchain` (``pip install 'harnessweaver[langchain]'``;
  with ``interrupt=True``, approvals are LangGraph interrupts: ``harnessweaver[langgraph]``)
- :mod:`harnessweaver.adapters.pydantic_ai` (``pip install 'harnessweaver[pydantic-ai]'``)

The framework is imported when you call the adapter, not when this package is
imported, so a missing framework only matters to the adapter that needs it.
See ``docs/adapters.md``.

:mod:`harnessweaver.adapters.opentelemetry` is the adapter to the host's own
OpenTelemetry API (``opentelemetry-api``, optional): the governor loads it, and
it gives no observer when that package is not installed (``docs/observability.md``).
"""
