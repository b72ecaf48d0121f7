"""The delaying TCP proxy of the cluster drills (tools/cluster/delay.py), the stand-in for netem: bytes intact and
in order, replies held back by the delay asked for."""

from __future__ import annotations

import asyncio
import time

from tools.cluster.delay import _serve


def test_replies_arrive_intact_in_order_and_no_sooner_than_the_delay():
    async def scenario() -> tuple[bytes, float]:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
            writer.close()

        upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
        target = upstream.sockets[0].getsockname()[1]
        probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        proxy = asyncio.create_task(_serve(f"127.0.0.1:{port}", f"127.0.0.1:{target}", 0.0, 0.15))
        for _ in range(50):  # the proxy's listener is up within a few event-loop turns
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.02)
        payload = b"".join(f"chunk {n};".encode() for n in range(20000))
        started = time.monotonic()
        writer.write(payload)
        await writer.drain()
        received = await asyncio.wait_for(reader.readexactly(len(payload)), 10)
        took = time.monotonic() - started
        writer.close()
        proxy.cancel()
        upstream.close()
        return received, took

    received, took = asyncio.run(scenario())
    assert received == b"".join(f"chunk {n};".encode() for n in range(20000))
    assert took >= 0.15
