"""Argument extraction by any OpenAI-compatible chat endpoint, for what the rules could not find.

The function is offered as the only tool and the model is made to call it
(``tool_choice``); its arguments come back as JSON. Nothing here is required:
without ``[router.llm]`` in the config the deterministic extractor works alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from toolmesh.errors import Unavailable
from toolmesh.runtimes.functions.spec import tool_name

SYSTEM_PROMPT = (
    "Extract the arguments for the function from the user's request. Use only values the request "
    "states or clearly implies; leave out arguments it does not give."
)


class LlmExtractor:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 20.0) -> None:
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    async def extract(
        self, prompt: str, function: str, description: str, schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The arguments the model chose; Unavailable when the endpoint fails or answers nonsense."""
        name = tool_name(function)
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": name, "description": description, "parameters": schema},
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": name}},
            "temperature": 0,
        }
        try:
            response = await self._client.post("/chat/completions", json=body)
            response.raise_for_status()
            call = response.json()["choices"][0]["message"]["tool_calls"][0]["function"]
            arguments = json.loads(call["arguments"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise Unavailable(f"the argument-extraction model did not answer usefully: {exc}") from None
        if not isinstance(arguments, dict):
            raise Unavailable("the argument-extraction model returned arguments that are not an object")
        return arguments

    async def aclose(self) -> None:
        await self._client.aclose()
