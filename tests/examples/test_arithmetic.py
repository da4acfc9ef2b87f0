"""examples.arithmetic: exact answers, clear errors, and an evaluator that runs no code."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve


@pytest.fixture
async def calc(serve: Serve) -> Client:
    return await serve("examples.arithmetic")


@pytest.mark.parametrize(
    ("function", "arguments", "expected"),
    [
        ("add", {"a": 2, "b": 3}, 5),
        ("subtract", {"a": 2, "b": 3.5}, -1.5),
        ("multiply", {"a": 2.5, "b": 4}, 10),
        ("divide", {"dividend": 7, "divisor": 2}, 3.5),
        ("power", {"base": 2, "exponent": 10}, 1024),
        ("power", {"base": -8, "exponent": 3}, -512),
    ],
)
async def test_operations(calc: Client, function: str, arguments: dict[str, float], expected: float) -> None:
    assert await calc.ok(f"arithmetic.{function}", **arguments) == expected


async def test_divide_by_zero_is_an_error_result(calc: Client) -> None:
    result = await calc.call("arithmetic.divide", dividend=1, divisor=0)
    assert result.is_error and result.error is not None
    assert result.error.code == "function_error"
    assert result.error.message == "ZeroDivisionError: cannot divide 1 by zero"
    assert result.text == result.error.message, "a model reads the error as the result's text"


async def test_power_without_a_real_result_is_an_error(calc: Client) -> None:
    result = await calc.call("arithmetic.power", base=-8, exponent=0.5)
    assert result.error is not None and "fractional exponent" in result.error.message


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(2 + 3) * sqrt(16) / 2", 10.0),
        ("2 ** 64 + 1", 2**64 + 1),  # whole numbers stay exact
        ("-2 ** 2", -4),
        ("7 // 2 + 7 % 2", 4),
        ("round(pi, 2) + max(1, e)", 3.14 + 2.718281828459045),
        ("  1_000 * 1e-3 ", 1.0),
    ],
)
async def test_evaluate(calc: Client, expression: str, expected: float) -> None:
    assert await calc.ok("arithmetic.evaluate", expression=expression) == pytest.approx(expected)


async def test_evaluate_keeps_big_whole_numbers_exact(calc: Client) -> None:
    assert await calc.ok("arithmetic.evaluate", expression="3 ** 100") == 3**100


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('echo pwned')", "is not allowed"),
        ("open('/etc/passwd').read()", "is not allowed"),
        ("(1).__class__", "is not allowed"),
        ("x + 1", "unknown name 'x'"),
        ("True + 1", "True is not a number"),
        ("1 +", "is not a valid expression"),
        ("sqrt(-1)", "sqrt(-1): math domain error"),
        ("1 / 0", "ZeroDivisionError"),
        ("9 ** 9 ** 9", "more than 4096 bits"),
        ("1e308 * 10", "too large to represent"),
    ],
)
async def test_evaluate_rejects_what_is_not_arithmetic(calc: Client, expression: str, message: str) -> None:
    result = await calc.call("arithmetic.evaluate", expression=expression)
    assert result.is_error and result.error is not None
    assert result.error.code == "function_error"
    assert message in result.error.message


@pytest.mark.parametrize(
    ("function", "arguments", "path"),
    [
        ("arithmetic.add", {"a": "two", "b": 3}, "a"),
        ("arithmetic.divide", {"dividend": 1}, "divisor"),
        ("arithmetic.evaluate", {"expression": ""}, "expression"),
    ],
)
async def test_bad_arguments_are_named(
    calc: Client, function: str, arguments: dict[str, object], path: str
) -> None:
    result = await calc.call(function, **arguments)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert [v.path for v in result.error.violations] == [path]
