"""``python -m cdc_env.cli``: the same as the ``cdc-env`` command."""

from . import main

raise SystemExit(main())
