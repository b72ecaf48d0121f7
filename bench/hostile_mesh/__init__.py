"""What a hostile client finds at the gateway and across replicas (#38, the mesh's part): probes and counts.

Each probe works on a running mesh (``services.launcher.mesh.Mesh``), talks only to 127.0.0.1, is bounded,
and returns what it measured as plain data; ``tests/e2e/test_hostile_mesh.py`` asserts on the same probes, and
``python -m bench.hostile_mesh`` (``__main__``) runs them all. The modules, by what they probe:

- ``edge``: the gateway's door: the mesh credential on Envoy's admin endpoints, leaked headers, floods (429).
- ``bodies``: request bodies: held large uploads (Envoy's RSS), declared sizes over the limit, strict JSON.
- ``faults``: a paused rag, ``/v1/health`` while rag restarts, Envoy's memory cgroup.
- ``replicas``: two rag and two orchestrator processes on one PostgreSQL: a killed replica's ingestion taken
  over, a dead letter retried once.
- ``common``: what they share (tenant, Envoy's admin interface, RSS, the ``google.rpc.Status`` test).
- ``baseline``: the single-mesh probes on another revision's mesh (``--baseline-rev``).

This package imports nothing of its own here: the baseline run loads it by file path into another revision's
tree, where only its modules' relative imports may reach it.
"""
