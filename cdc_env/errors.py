"""The one exception type users see: a one-line, actionable message (no traceback)."""


class CdcError(Exception):
    """Bad input or an unusable setup. `str(err)` is a complete one-line message."""
