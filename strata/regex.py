"""Regular expressions that come from outside the code: matched in linear time, whatever they say.

Python's ``re`` backtracks: ``^.{1}([^!]+)+!`` against a 27-character string takes seconds, and each
added character doubles it. A CDX query's ``filter=~...`` comes from anyone on the web; a job's
``exclude``, ``include`` and ``*_patterns`` from whoever edits jobs, and run against every link a
harvest meets. Both go through RE2 (``google-re2``, Google's automaton engine: time linear in the
input, memory bounded by ``MAX_MEM``). RE2 has no backreferences or lookaround; a pattern that uses
them is refused with a message saying so, when it is given (job validation, the query's 400), never
at match time.
"""

from __future__ import annotations

import re
from typing import Any

import re2

MAX_MEM = 8 << 20  # bytes one compiled pattern may use (RE2's default; a larger program is refused)


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would also print every refused pattern on stderr
    options.max_mem = MAX_MEM
    return options


_OPTIONS = _options()


def compile_linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (``.search``, ``.match``, ``.sub``, ``.pattern`` as in ``re``);
    ``ValueError`` saying why when RE2 cannot take it."""
    try:
        re.compile(pattern)  # a plain syntax error is said as Python says it
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"{pattern!r} is not a regular expression that can be matched in linear time ({reason}); "
            "backreferences and lookaround are not supported"
        ) from None
