"""Currency names and symbols, read as ISO 4217 codes.

"convert 100 euros to dollars" names two currencies by their names; a function takes
codes ("EUR", "USD"). A name qualified by its country ("canadian dollars") is read before
the bare one; a bare name means the currency it usually means in English ("dollars": US
dollars, "pounds": sterling, "francs": Swiss francs, "yen", "¥": Japanese yen) and is read
only where a parameter takes currencies: a currency enum, or a string parameter whose
name or description says currency (choices.py). There "pounds" is money; elsewhere it
stays a unit of weight (values.py). A name whose usual code is not among a parameter's
options is not read as another one: the executor asks instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAMES: dict[str, tuple[str, ...]] = {
    "USD": ("us dollar", "u.s. dollar", "american dollar", "dollar", "buck"),
    "EUR": ("euro",),
    "GBP": ("pound sterling", "pounds sterling", "british pound", "sterling", "pound", "quid"),
    "JPY": ("japanese yen", "yen"),
    "CNY": ("chinese yuan", "yuan", "renminbi", "rmb"),
    "CHF": ("swiss franc", "franc"),
    "CAD": ("canadian dollar",),
    "AUD": ("australian dollar",),
    "NZD": ("new zealand dollar",),
    "HKD": ("hong kong dollar",),
    "SGD": ("singapore dollar",),
    "INR": ("indian rupee", "rupee"),
    "MXN": ("mexican peso", "peso"),
    "BRL": ("brazilian real", "reais"),
    "SEK": ("swedish krona", "swedish kronor", "krona", "kronor"),
    "NOK": ("norwegian krone", "norwegian kroner"),
    "DKK": ("danish krone", "danish kroner"),
    "RUB": ("russian ruble", "russian rouble", "ruble", "rouble"),
    "ZAR": ("south african rand",),
    "PLN": ("polish zloty", "zloty", "zlotys"),
    "KRW": ("south korean won", "korean won"),
    "TRY": ("turkish lira",),
}
SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "₽": "RUB"}
#: The codes a string parameter about currencies may take.
CODES = tuple(_NAMES)

_BY_NAME = {name: code for code, names in _NAMES.items() for name in names}
_NAME = re.compile(
    r"(?<![\w.])("
    + "|".join(re.escape(n) for n in sorted(_BY_NAME, key=len, reverse=True))
    + r")(?:e?s)?(?!\w)",
    re.I,
)
_SYMBOL = re.compile("|".join(map(re.escape, SYMBOLS)))
#: Codes that are also English words count only in capitals ("try", "rub", "cad").
_WORDS = {"TRY", "RUB", "CAD"}
_CODE = re.compile(r"(?<![\w.])([A-Za-z]{3})(?!\w)")


@dataclass(frozen=True, slots=True)
class CurrencyMention:
    code: str
    start: int
    end: int
    #: A symbol ("$100"): it is also the number's, which keeps its text.
    symbol: bool


def code_of(option: object) -> str | None:
    """The ISO code an enum option stands for ("usd" and "USD" alike), if it is one."""
    code = str(option).upper()
    return code if code in _NAMES else None


def currency_mentions(text: str) -> list[CurrencyMention]:
    """Currencies named in `text` (longest name first: "canadian dollars" is not "dollars"),
    by code ("usd", "EUR") and by symbol, in order."""
    found = [
        CurrencyMention(_BY_NAME[m.group(1).lower()], m.start(), m.end(), False) for m in _NAME.finditer(text)
    ]
    for m in _CODE.finditer(text):
        code = m.group(1).upper()
        if code in _NAMES and (code not in _WORDS or m.group(1) == code):
            found.append(CurrencyMention(code, m.start(), m.end(), False))
    found += [CurrencyMention(SYMBOLS[m.group(0)], m.start(), m.end(), True) for m in _SYMBOL.finditer(text)]
    return sorted(found, key=lambda mention: mention.start)
