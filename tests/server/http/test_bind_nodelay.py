"""``bind``: connections accepted on the listening socket have Nagle off."""

from __future__ import annotations

import asyncio
import socket

from server.http._serving import bind


def test_accepted_connections_have_tcp_nodelay() -> None:
    sock = bind("127.0.0.1:0")
    port = sock.getsockname()[1]
    seen: list[int] = []
    accepted = asyncio.Event()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            conn = transport.get_extra_info("socket")
            seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()
            accepted.set()

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.wait_for(accepted.wait(), 10)
            writer.close()

    asyncio.run(main())
    assert seen and seen[0] != 0, "uvicorn's writes would wait for delayed ACKs (Nagle)"
