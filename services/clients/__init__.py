"""The typed clients of the mesh's services, one module per service, for every caller (the other services, the
MCP server, the chat API, tests and benchmarks).

Each client wraps one service's generated stub in the runtime's ``ServiceClient`` (its channel carries tenant,
request id and deadline; read-only calls are retried on UNAVAILABLE) and returns the results as the plain typed
values of ``results`` or of its own module; a failed call raises ``errors.remote_error``'s domain error with the
service's whole status. The package depends only on ``gen/`` and ``services.runtime``, so any layer above may
call any service without importing another service's package.
"""
