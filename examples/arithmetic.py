"""Arithmetic as a class of tools, so a model can hand its sums to something exact.

`Arithmetic` is a `toolmesh.Toolset` in the "arithmetic" namespace. Its methods
carry no decorator at all: being public methods of a toolset is enough, and
their schemas come from the type hints and the reST-style docstrings.

`evaluate` takes a whole expression such as ``"(2 + 3) * sqrt(16) / 2"``. It
walks the expression's syntax tree with the `ast` module and allows only numbers,
arithmetic operators, a few constants and math functions, so it never runs code
the way `eval` would.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

import toolmesh

Number = int | float

# Whole numbers stay exact, but a 2 ** 10 ** 9 would take minutes and gigabytes.
_MAX_BITS = 4096


def _checked(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise ArithmeticError("the result is too large to represent" if math.isinf(value) else "not a number")
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise ArithmeticError(f"the result has more than {_MAX_BITS} bits")
    return value


def _power(base: Number, exponent: Number) -> Number:
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and (abs(base).bit_length() - 1) * exponent > _MAX_BITS
    ):
        raise ArithmeticError(f"the result would have more than {_MAX_BITS} bits")
    if base < 0 and not float(exponent).is_integer():
        raise ArithmeticError("a negative number has no real power with a fractional exponent")
    try:
        return _checked(base**exponent)
    except OverflowError:
        raise ArithmeticError("the result is too large to represent") from None


_OPERATORS: dict[type[ast.AST], Callable[..., Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_ALLOWED = (
    "numbers, + - * / // % **, parentheses, the constants "
    + ", ".join(_CONSTANTS)
    + " and the functions "
    + ", ".join(_FUNCTIONS)
)


class ExpressionError(ValueError):
    """The expression is not valid arithmetic, or uses something not allowed."""


def _evaluate(node: ast.AST) -> Number:
    match node:
        case ast.Constant(value=bool()):
            raise ExpressionError(f"{ast.unparse(node)} is not a number")
        case ast.Constant(value=int() | float() as value):
            return value
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _OPERATORS:
            return _checked(_OPERATORS[type(op)](_evaluate(left), _evaluate(right)))
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _OPERATORS:
            return _OPERATORS[type(op)](_evaluate(operand))
        case ast.Name(id=name) if name in _CONSTANTS:
            return _CONSTANTS[name]
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
            values = [_evaluate(arg) for arg in args]
            try:
                return _checked(_FUNCTIONS[name](*values))
            except (TypeError, ValueError) as exc:
                raise ExpressionError(f"{ast.unparse(node)}: {exc}") from None
        case ast.Name(id=name):
            raise ExpressionError(f"unknown name {name!r}; use {_ALLOWED}")
    raise ExpressionError(f"{ast.unparse(node)!r} is not allowed; use {_ALLOWED}")


class Arithmetic(toolmesh.Toolset, namespace="arithmetic"):
    """Exact arithmetic: basic operations on two numbers, or a whole expression at once."""

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "add 2 and 3",
            "what is 17 plus 25",
            "sum of 1.5 and 2.25",
        ],
    )
    def add(self, a: float, b: float) -> float:
        """Add two numbers.

        :param a: The first number.
        :param b: The number to add to it.
        :returns: ``a + b``.
        """
        return _checked(a + b)

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "subtract 4 from 10",
            "what is 100 minus 37",
            "take 8 away from 20",
        ],
    )
    def subtract(self, a: float, b: float) -> float:
        """Subtract one number from another.

        :param a: The number to subtract from.
        :param b: The number to subtract.
        :returns: ``a - b``.
        """
        return _checked(a - b)

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "multiply 6 by 7",
            "what is 12 times 11",
            "product of 3 and 9",
        ],
    )
    def multiply(self, a: float, b: float) -> float:
        """Multiply two numbers.

        :param a: The first factor.
        :param b: The second factor.
        :returns: ``a * b``.
        """
        return _checked(a * b)

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "divide 10 by 4",
            "what is 144 divided by 12",
            "how much is 9 over 3",
        ],
    )
    def divide(self, dividend: float, divisor: float) -> float:
        """Divide one number by another.

        :param dividend: The number to divide.
        :param divisor: The number to divide by; must not be zero.
        :returns: ``dividend / divisor``.
        :raises ZeroDivisionError: If the divisor is zero.
        """
        if divisor == 0:
            raise ZeroDivisionError(f"cannot divide {dividend:g} by zero")
        return _checked(dividend / divisor)

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "2 to the power of 10",
            "what is 3 raised to 4",
            "5 squared",
        ],
    )
    def power(self, base: float, exponent: float) -> float:
        """Raise a number to a power.

        :param base: The number to raise.
        :param exponent: The power to raise it to; a negative base needs a whole exponent.
        :returns: ``base ** exponent``.
        :raises ArithmeticError: If the result is not a real number or too large.
        """
        return float(_power(base, exponent))

    @toolmesh.function(
        read_only=True,
        idempotent=True,
        examples=[
            "calculate (2 + 3) * 4",
            "evaluate the expression 2**8 - 1",
            "compute 17 * (4 + 6) / 2",
        ],
    )
    def evaluate(self, expression: Annotated[str, Field(min_length=1, max_length=500)]) -> Number:
        """Evaluate an arithmetic expression, such as "(2 + 3) * sqrt(16) / 2".

        Allowed are numbers, + - * / // % ** and parentheses, the constants pi, e and tau, and the
        functions abs, round, min, max, sqrt, exp, log, log10, sin, cos, tan, floor and ceil.
        Whole numbers stay exact; "/" always gives a decimal result.

        :param expression: The expression to evaluate.
        :returns: The value of the expression.
        :raises ExpressionError: If the expression is malformed or uses anything else.
        """
        try:
            tree = ast.parse(expression.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"{expression!r} is not a valid expression: {exc.msg}") from None
        return _evaluate(tree.body)
