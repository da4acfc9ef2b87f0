"""A lone surrogate in arguments is named, with its argument's path, not as a parser's complaint."""

from __future__ import annotations

import pytest

import toolmesh
from tests.runtimes.functions.test_validation import order
from toolmesh.runtimes.functions.discovery import host_function


def violation(body: bytes) -> toolmesh.Violation:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        host_function(order).validator.validate(body)
    (found,) = caught.value.violations
    return found


def test_a_lone_surrogate_is_named_with_its_path() -> None:
    found = violation(b'{"customer": "ann", "items": [{"sku": "a\\udc00b", "quantity": 1}]}')
    assert found.path == "items[0].sku" and found.got == "a lone surrogate U+DC00"
    assert "lone surrogate (U+DC00) at character 1" in found.message and "UTF-8" in found.message


def test_a_lone_surrogate_in_a_key_and_other_malformed_json() -> None:
    assert "key" in violation(b'{"cust\\ud800": "ann"}').message
    assert violation(b'{"customer": "ann"').got == "malformed JSON"
