# Python adapters (harnessweaver.adapters): the OpenAI Agents SDK, LangChain and
# Pydantic AI, each tested with the real framework and its own fake or scripted model.
TEST_TARGETS += test-adapters-python

ADAPTERS_PY_DIR := tests/adapters/python
ADAPTERS_PY_STAMP := $(VENV)/.hw-adapters-python-requirements.stamp

$(ADAPTERS_PY_STAMP): $(VENV_STAMP) $(ADAPTERS_PY_DIR)/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(ADAPTERS_PY_DIR)/requirements.txt
	touch $@

test-adapters-python: build-python $(ADAPTERS_PY_STAMP) ## run the Python adapter tests (openai-agents, langchain-core, pydantic-ai-slim; no network)
	$(PY) -m pytest -q -c tests/pytest.ini $(ADAPTERS_PY_DIR)

.PHONY: test-adapters-python
