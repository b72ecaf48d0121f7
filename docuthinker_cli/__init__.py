"""``docuthinker``: the command-line client of the DocuThinker gateway (REST + SSE through Envoy).

Modules: ``client`` (typed REST calls, SSE streams, errors), ``exit_codes`` (what scripts can rely on),
``render`` (rich output and ``--json``), ``progress`` (per-file upload bars), ``app`` (the typer commands).
"""
