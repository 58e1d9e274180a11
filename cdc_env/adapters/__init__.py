"""Adapters to the RL stacks people use. Each imports its framework, so import the one you need:

    cdc_env.adapters.gym        a gymnasium.Env, registered as ``cdc_env/<task>`` (extra: gym)
    cdc_env.adapters.verifiers  a verifiers v1 Taskset with a Toolset of the five tools (extra: verifiers);
                                ``vf-eval cdc-env-verifiers`` (the top-level shim package cdc_env_verifiers)

    cdc_env.adapters.openenv    TokenEnvClient: openenv-core's stock client sending the bearer token
                                (extra: openenv)

OpenEnv clients otherwise need no adapter: ``cdc-env serve`` answers OpenEnv's reset / step /
state routes over HTTP and WebSocket, its OpenAPI document and MCP (``cdc_env.server_openenv``).

Every adapter uses the same prompts (``cdc_env.prompts``), tools (``tools/*.json``) and grader
(``cdc_env.grade``) as ``cdc-env eval``.
"""
