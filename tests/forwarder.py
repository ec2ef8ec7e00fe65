"""A TCP port that answers only from when a test says so: a database that comes up after the server.

``forwarding(port, target)`` listens on ``127.0.0.1:port`` and passes every connection through to
``target``, both ways, until the block ends; before and after, nothing listens there.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _passed(
    target: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(*target)
    except OSError:
        writer.close()
        return
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


@contextlib.contextmanager
def forwarding(port: int, target: tuple[str, int]) -> Iterator[None]:
    loop = asyncio.new_event_loop()

    def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop.create_task(_passed(target, reader, writer))

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", port))
    thread = threading.Thread(target=loop.run_forever, name=f"forwarding {port}", daemon=True)
    thread.start()
    try:
        yield
    finally:

        async def stop() -> None:
            server.close()
            pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), loop)
        thread.join()
        loop.close()
