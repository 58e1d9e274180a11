"""``python -m cdc_env``: the same as the ``cdc-env`` command."""

from cdc_env.cli import main

raise SystemExit(main())
