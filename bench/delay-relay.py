"""A TCP relay that adds a round trip, for bench/ping.sh where the kernel has no netem.

    python3 bench/delay-relay.py LISTEN UPSTREAM RTT_SECONDS

It holds each new connection one round trip (the TCP handshake netem would delay) and each
chunk half a round trip in each direction, chunks in order, without serialising them.
"""

import asyncio
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def read():
        while True:
            data = await reader.read(65536)
            await queue.put((loop.time() + delay, data))
            if not data:
                return

    async def write():
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                else:
                    writer.close()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        writer.close()


async def main(listen, upstream, rtt):
    up_host, up_port = upstream.rsplit(":", 1)

    async def serve(c_reader, c_writer):
        await asyncio.sleep(rtt)
        try:
            u_reader, u_writer = await asyncio.open_connection(up_host, int(up_port))
        except OSError:
            c_writer.close()
            return
        await asyncio.gather(
            pipe(c_reader, u_writer, rtt / 2), pipe(u_reader, c_writer, rtt / 2)
        )

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(serve, host, int(port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
