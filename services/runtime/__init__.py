"""Shared runtime of every DocuThinker service: config, server bootstrap, channels and clients, errors."""

from services.runtime.channels import open_channel, service_channel
from services.runtime.clients import ChannelPool
from services.runtime.config import SERVICE_NAMES, MeshSettings
from services.runtime.request_context import current_tenant
from services.runtime.server import RunningServer, ServiceBinding, create_server, serve

__all__ = [
    "ChannelPool",
    "SERVICE_NAMES",
    "MeshSettings",
    "RunningServer",
    "ServiceBinding",
    "create_server",
    "current_tenant",
    "open_channel",
    "service_channel",
    "serve",
]
