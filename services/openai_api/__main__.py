"""``python -m services.openai_api``: the OpenAI-compatible chat API on ``DOCUTHINKER_OPENAI_API_PORT``."""

from __future__ import annotations

import asyncio
import signal

from aiohttp import web

from gateway import request_validation
from services.clients.rag import RagClient
from services.openai_api.answers import AnswerEngine
from services.openai_api.app import create_app
from services.runtime import ChannelPool, MeshSettings, logs, mesh_auth


async def _serve(settings: MeshSettings) -> None:
    channels = ChannelPool(settings)
    mesh_auth.warn_if_open("openai_api", settings.mesh_credential_file)
    app = create_app(AnswerEngine(RagClient(channels)), settings.default_tenant,
                     mesh_auth.read_credential(settings.mesh_credential_file))
    request_validation.add_route(app)  # the gateway's strict-JSON check runs in this HTTP process
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.openai_api_port, shutdown_timeout=settings.shutdown_grace_s)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    await channels.close()


def main() -> None:
    settings = MeshSettings()
    logs.configure("openai_api", settings.log_level)
    asyncio.run(_serve(settings))


if __name__ == "__main__":
    main()
