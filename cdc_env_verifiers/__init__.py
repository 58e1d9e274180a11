"""``vf-eval cdc-env-verifiers``: the id verifiers resolves to this top-level module, which exports
the taskset of ``cdc_env.adapters.verifiers`` (verifiers imports a taskset by a plain module name)."""

from cdc_env.adapters.verifiers import CdcTaskset

__all__ = ["CdcTaskset"]
