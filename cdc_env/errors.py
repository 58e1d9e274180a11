"""The one exception type users see: a one-line, actionable message (no traceback)."""


class CdcError(Exception):
    """Bad input or an unusable setup. `str(err)` is a complete one-line message."""


# The exit status of every cdc-env command (one set; the README's CLI section lists them).
EXIT_OK = 0  # success: a grade that passed, a check or replay that found what it expected
EXIT_NOT_PASS = 1  # a grade that did not pass, a check that failed, a fixture that deviated
EXIT_USAGE = 2  # bad input or usage: one line on stderr, never a traceback
EXIT_TOOL = 3  # tool_error: the grader could not decide (neither a pass nor a fail)
