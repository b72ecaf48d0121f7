"""A TCP proxy that adds a fixed delay, the stand-in for netem (which this kernel lacks), run inside a host's namespace.

``python -m tools.cluster.delay --listen 10.240.40.2:50061 --to 127.0.0.1:50051 --back-ms 20``: every chunk the
upstream sends back reaches the caller ``back-ms`` later (``forward-ms`` the other way), in order and without
throttling, as a link whose one direction is that much longer would. Runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay_s, data))
    except ConnectionError:
        pass
    finally:
        queue.put_nowait((0.0, b""))
        try:
            await sender
        except ConnectionError:
            pass
        writer.close()


async def _serve(listen: str, to: str, forward_s: float, back_s: float) -> None:
    target_host, target_port = to.rsplit(":", 1)

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(target_host, int(target_port)), 5)
        except (TimeoutError, OSError):
            client_writer.close()
            return
        await asyncio.gather(_pump(client_reader, upstream_writer, forward_s),
                             _pump(upstream_reader, client_writer, back_s), return_exceptions=True)

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port))
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.cluster.delay")
    parser.add_argument("--listen", required=True)
    parser.add_argument("--to", required=True)
    parser.add_argument("--forward-ms", type=float, default=0.0)
    parser.add_argument("--back-ms", type=float, default=20.0)
    args = parser.parse_args()
    asyncio.run(_serve(args.listen, args.to, args.forward_ms / 1000, args.back_ms / 1000))


if __name__ == "__main__":
    main()
