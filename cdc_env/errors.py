"""The one exception type users see: a one-line, actionable message (no traceback)."""


class CdcError(Exception):
    """Bad input or an unusable setup. `str(err)` is a complete one-line message."""


# The exit status of every cdc-env command (one set; the README's CLI section lists them).
EXIT_OK = 0  # success: a grade that passed, a check or replay that found what it expected
EXIT_NOT_PASS = 1  # a grade that did not pass, a check that failed, a fixture that deviated
EXIT_USAGE = 2  # bad input or usage: one line on stderr, never a traceback
EXIT_TOOL = 3  # tool_error: the grader could not decide (neither a pass nor a fail)


QUOTE_LIMIT = 80  # characters of a quoted input an error message keeps
MESSAGE_LIMIT = 1000  # characters of a whole error message


def clip_quoted(message: str, limit: int = QUOTE_LIMIT) -> str:
    """``message`` with every quoted span ('...' or "...") longer than ``limit`` cut to its first
    ``limit`` characters, then the whole cut to MESSAGE_LIMIT: an error quotes what it refuses
    (a task id, a rung, a simulator name) and the input may be any size."""
    import re  # noqa: PLC0415

    if len(message) <= 3 * limit:  # short messages stay exactly as written
        return message

    def cut(m: re.Match) -> str:
        q, body = m.group(1), m.group(2)
        return m.group(0) if len(body) <= limit else f"{q}{body[:limit]}...{q} ({len(body)} characters)"

    span = r"""(['"])((?:(?!\1).){""" + str(limit + 1) + r""",})\1"""
    out = re.sub(span, cut, message, flags=re.DOTALL)
    return out if len(out) <= MESSAGE_LIMIT else out[:MESSAGE_LIMIT] + "..."
