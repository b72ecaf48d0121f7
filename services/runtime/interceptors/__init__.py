"""The mesh's interceptors, one module per concern, chained on both sides of every call.

Server side, ``server.py`` turns each RPC into a ``ServerCall`` and runs it through a chain of ``Inbound``
concerns built once per server, outermost first (as Temporal's SDK chains its interceptors):

1. ``mesh_auth.CredentialCheck``: a caller that is not the mesh reaches nothing else (no log, no metrics);
2. ``observability.ServerObservability``: RPC metrics, a span continuing the caller's trace, one log line;
3. ``error_mapping.ErrorMapping``: a ``DomainError`` becomes a rich ``google.rpc.Status``, anything else
   INTERNAL (logged with its traceback, reported without it); a server stream that fails after its first
   message ends with an in-band ``error`` event instead (HTTP/1.1 clients behind the transcoder never see
   trailers);
4. ``context.RequestScope``: the ``RequestContext`` (request id, tenant, role, deadline) bound for the call;
5. ``validation.Validation``: a request holding an enum number its enum does not define is refused.

Unary and streaming calls go through the same concerns, so they are logged, metered and mapped alike.

Client side, ``client.py`` runs each outgoing call past ``ClientConcern``s: ``ClientObservability``
(metrics, span and its headers), ``ContextPropagation`` (request id, tenant, role and the caller's
remaining deadline) and ``mesh_auth.AddCredential``.
"""

from services.runtime.interceptors.client import ClientConcern, OutgoingCall, client_interceptors
from services.runtime.interceptors.context import ContextPropagation, RequestScope
from services.runtime.interceptors.error_mapping import ErrorMapping
from services.runtime.interceptors.observability import ClientObservability, ServerObservability
from services.runtime.interceptors.server import Inbound, ServerCall, server_interceptor
from services.runtime.interceptors.validation import Validation

__all__ = [
    "ClientConcern",
    "ClientObservability",
    "ContextPropagation",
    "ErrorMapping",
    "Inbound",
    "OutgoingCall",
    "RequestScope",
    "ServerCall",
    "ServerObservability",
    "Validation",
    "client_interceptors",
    "server_interceptor",
]
