"""serve's text log format: one record, one line. Control characters in a message (a newline in a caller's
resource name or request name, which Kafka's audit line writes as given) are escaped, so that no caller can write a
line of its own, such as a forged `is Allowed` audit line, into the log an operator reads. Tracebacks (a record's
exception text) keep their lines."""

from __future__ import annotations

import copy
import logging
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escaped(match: re.Match[str]) -> str:
    return match[0].encode("unicode_escape").decode("ascii")


class OneLineFormatter(logging.Formatter):
    """A logging.Formatter whose message never spans lines (its control characters are written as escapes)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if _CONTROL.search(message) is not None:
            record = copy.copy(record)
            record.msg, record.args = _CONTROL.sub(_escaped, message), None
        return super().format(record)
