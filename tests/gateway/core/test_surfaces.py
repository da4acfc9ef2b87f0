"""The refusal table: what each surface raises and what it answers as an error result."""

from __future__ import annotations

import pytest

from toolmesh.errors import (
    FunctionNotFound,
    FunctionTimeout,
    InvalidArguments,
    RateLimited,
    Unavailable,
    Violation,
)
from toolmesh.gateway.core.surfaces import REFUSALS, Surface
from toolmesh.runtimes.functions.results import ErrorInfo, Result

BAD_ARGUMENTS = InvalidArguments("bad", [Violation("a", "integer", "string", "a: bad")])


def test_every_surface_has_a_row() -> None:
    assert set(REFUSALS) == set(Surface)


@pytest.mark.parametrize(
    ("surface", "error", "refused"),
    [
        (Surface.DIRECT, FunctionNotFound("no function named 'x'"), True),
        (Surface.DIRECT, Unavailable("down"), True),
        (Surface.MCP, FunctionNotFound("no function named 'x'"), True),
        (Surface.MCP, RateLimited("slow down"), True),
        (Surface.MCP, Unavailable("down"), False),
        (Surface.BATCH, FunctionNotFound("no function named 'x'"), False),
        (Surface.BATCH, RateLimited("slow down"), False),
    ],
)
def test_errors_before_the_function_ran(surface: Surface, error: Exception, refused: bool) -> None:
    assert isinstance(error, FunctionNotFound | RateLimited | Unavailable)
    if refused:
        with pytest.raises(type(error)):
            REFUSALS[surface].settle(error)
    else:
        result = REFUSALS[surface].settle(error)
        assert result.is_error and result.error is not None and result.error.code == error.code
        assert error.message in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("error", [BAD_ARGUMENTS, FunctionTimeout("too slow")])
def test_error_results_only_a_direct_call_refuses(surface: Surface, error: InvalidArguments) -> None:
    result = Result.failure(ErrorInfo.from_exception(error))
    if surface is Surface.DIRECT:
        with pytest.raises(type(error)):
            REFUSALS[surface].check(result)
    else:
        assert REFUSALS[surface].check(result) is result


def test_a_function_that_raised_is_a_result_everywhere() -> None:
    result = Result.failure(ErrorInfo("function_error", "disk full"))
    assert all(REFUSALS[surface].check(result) is result for surface in Surface)
