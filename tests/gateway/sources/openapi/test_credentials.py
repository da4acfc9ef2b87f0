"""The runtime's credentials as services' security schemes want them: an API key in the query
(`query`), in a cookie or a header (`headers`), a bearer token; never a caller's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.sources.openapi.echo import call, echoed, openapi, runtime_for, serve_echo
from toolmesh.config import ConfigError, MeshConfig, RuntimeConfig
from toolmesh.config.runtime_config import HeaderFromEnv
from toolmesh.deploy.render import secret_variables
from toolmesh.errors import InvalidArguments
from toolmesh.gateway.sources.factory import runtime_query

OK = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
SECURITY = {
    "securitySchemes": {
        "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"},
        "cookieKey": {"type": "apiKey", "in": "cookie", "name": "session"},
        "bearer": {"type": "http", "scheme": "bearer"},
    }
}
PATHS = {
    "/echo/weather": {
        "get": {
            "operationId": "weather",
            "security": [{"queryKey": [], "cookieKey": []}, {"bearer": []}],
            # Some documents declare the key as a parameter too.
            "parameters": [
                {"name": "api_key", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "city", "in": "query", "schema": {"type": "string"}},
            ],
            "responses": OK,
        }
    }
}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url:
        yield url


async def test_an_api_key_in_the_query_and_a_cookie_is_the_runtimes(tmp_path: Path, origin: str) -> None:
    config = RuntimeConfig(
        name="echo", openapi="x", base_url=origin, query={"api_key": HeaderFromEnv(env="WEATHER_KEY")}
    )
    read = runtime_query(config, {"WEATHER_KEY": "k&1"})
    assert read.query == {"api_key": "k&1"}
    headers = {"Cookie": "session=s1", "Authorization": "Bearer t"}
    document = openapi(PATHS, components=SECURITY)
    async with runtime_for(document, tmp_path, headers, base_url=origin, query=read.query) as runtime:
        # The key is the runtime's: no argument, so a caller can neither see nor replace it.
        assert list(runtime.specs[0].input_schema["properties"]) == ["city"]
        got = await echoed(runtime, "weather", {"city": "Oslo"})
        assert got["query"] == "api_key=k%261&city=Oslo"
        assert got["headers"]["cookie"] == "session=s1"
        assert got["headers"]["authorization"] == "Bearer t"
        with pytest.raises(InvalidArguments, match="unknown argument 'api_key'"):
            await call(runtime, "weather", {"city": "Oslo", "api_key": "mine"})


def test_an_unset_query_variable_stops_start_up_naming_it() -> None:
    config = RuntimeConfig(name="w", openapi="x", query={"api_key": HeaderFromEnv(env="WEATHER_KEY")})
    with pytest.raises(ConfigError, match=r"runtimes\.w: query api_key: environment variable WEATHER_KEY"):
        runtime_query(config, {})
    # On Kubernetes the variable comes from the Secret, as `headers`' do.
    assert secret_variables(MeshConfig(runtimes=(config,))) == ["WEATHER_KEY"]
    with pytest.raises(ValueError, match="`query` goes with `openapi`"):
        RuntimeConfig(name="m", mcp_url="http://x", query={"k": "v"})
