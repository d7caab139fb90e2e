#!/usr/bin/env python3
"""The waiting room under load: N requests wait for one key (max_concurrent = 1)
while a first request holds it; then the key is freed. Prints how long the
queue took to drain, keyshim's CPU seconds, and /health latency while the
requests wait. A measurement, not a test: it asserts nothing but that every
waiter was answered.

    bench/waitroom.py build/ci/keyshim [--waiters 2000] [--verbose]

Everything runs on 127.0.0.1: an asyncio upstream that holds the first
request until told and answers every other one at once, keyshim, and the
clients. Needs `ulimit -n` above 3 * waiters.
"""
import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REQUEST = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Content-Type: application/json\r\nContent-Length: {n}\r\n\r\n{body}")
ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


class Upstream:
    """Holds the request whose body says "hold" until release; answers the rest."""

    def __init__(self):
        self.released = asyncio.Event()
        self.held = asyncio.Event()
        self.count = 0

    async def serve(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.count += 1
                if head.startswith(b"POST /release "):
                    self.released.set()
                elif head.startswith(b"POST /held "):
                    await self.held.wait()
                elif b"hold" in body:
                    self.held.set()
                    await self.released.wait()
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def run_upstream(ports):
    """The upstream, in a process of its own so that the clients do not slow it."""

    async def serve():
        upstream = Upstream()
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0, backlog=4096)
        ports.put(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(serve())


async def post_to(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{{}}").encode())
    await writer.drain()
    return await read_answer(reader, writer)


async def send(port, body):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(REQUEST.format(n=len(body), body=body).encode())
    await writer.drain()
    return reader, writer


async def read_answer(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    writer.close()
    return status, time.monotonic()


async def health_latency(port):
    start = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    await reader.read()
    writer.close()
    return time.monotonic() - start


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main(args):
    ports = multiprocessing.Queue()
    upstream_proc = multiprocessing.Process(target=run_upstream, args=(ports,), daemon=True)
    upstream_proc.start()
    up_port = ports.get(timeout=10)
    tmp = tempfile.mkdtemp(prefix="waitroom-")
    config = os.path.join(tmp, "keys.toml")
    with open(config, "w") as f:
        f.write(f'[server]\nlisten = "127.0.0.1:{args.port}"\nstate = false\n[upstream]\n'
                f'base_url = "http://127.0.0.1:{up_port}"\nmax_wait = "300s"\n'
                'first_byte_timeout = "300s"\n'
                '[[keys]]\nlabel = "only"\nkey = "sk-waitroom-bench-0123456789abcdef"\nmax_concurrent = 1\n')
    os.chmod(config, 0o600)
    cmd = [args.keyshim, "serve", "-c", config] + (["-v"] if args.verbose else [])
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL if not args.log else open(args.log, "w"))
    try:
        for _ in range(100):
            try:
                await health_latency(args.port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        holder = await send(args.port, '{"hold":1}')
        await post_to(up_port, "/held")  # answered once the upstream holds the first request
        probes = []
        arriving = True

        async def probe_while_arriving():
            while arriving:
                probes.append(await health_latency(args.port))
                await asyncio.sleep(0.05)

        prober = asyncio.create_task(probe_while_arriving())
        waiters = []
        sent_at = time.monotonic()
        cpu_start = cpu_seconds(proc.pid)
        for i in range(args.waiters):
            waiters.append(await send(args.port, '{"n":%d}' % i))
        # Every head has reached keyshim once it goes idle (its CPU time stops
        # moving): a measurement, not a synchronisation.
        last = cpu_seconds(proc.pid)
        while True:
            await asyncio.sleep(0.3)
            now = cpu_seconds(proc.pid)
            if now - last < 0.02:
                break
            last = now
        absorb_s = time.monotonic() - sent_at - 0.3
        absorb_cpu = cpu_seconds(proc.pid) - cpu_start
        arriving = False
        await prober
        idle_probes = []
        for _ in range(20):
            idle_probes.append(await health_latency(args.port))
            await asyncio.sleep(0.05)
        cpu_before = cpu_seconds(proc.pid)
        freed = time.monotonic()
        await post_to(up_port, "/release")
        results = await asyncio.gather(*(read_answer(r, w) for r, w in waiters))
        drained = max(t for _, t in results) - freed
        cpu = cpu_seconds(proc.pid) - cpu_before
        await read_answer(*holder)
        # The pace of the upstream through keyshim with nobody waiting: the
        # same number of requests one after the other on one connection.
        reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
        sequential_start = time.monotonic()
        for i in range(args.waiters):
            writer.write(REQUEST.format(n=2, body="{}").encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            await reader.readexactly(length[0] if length else 0)
        sequential = time.monotonic() - sequential_start
        writer.close()
        statuses = {}
        for status, _ in results:
            statuses[status] = statuses.get(status, 0) + 1
        print(f"keyshim {args.keyshim}, {args.waiters} waiters, one key, max_concurrent = 1"
              f"{', -v' if args.verbose else ''}")
        print(f"  arrivals absorbed in {absorb_s:.2f} s, keyshim CPU {absorb_cpu:.2f} s; "
              "the upstream holds the first request")
        print(f"  /health while they arrive: median {statistics.median(probes) * 1e3:.1f} ms, "
              f"max {max(probes) * 1e3:.1f} ms ({len(probes)} probes)")
        print(f"  /health while they wait: median {statistics.median(idle_probes) * 1e3:.1f} ms, "
              f"max {max(idle_probes) * 1e3:.1f} ms (20 probes)")
        print(f"  key freed -> last waiter answered: {drained:.3f} s; keyshim CPU meanwhile {cpu:.2f} s")
        print(f"  the same number of requests one after the other, nobody waiting: {sequential:.3f} s")
        print(f"  statuses: {statuses}")
        return 0 if statuses == {200: args.waiters} else 1
    finally:
        proc.terminate()
        proc.wait()
        upstream_proc.terminate()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("keyshim")
    parser.add_argument("--waiters", type=int, default=2000)
    parser.add_argument("--port", type=int, default=18787)
    parser.add_argument("--verbose", action="store_true", help="run keyshim with -v")
    parser.add_argument("--log", help="keyshim's stderr goes here (default: discarded)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.waiters + 100)), hard))
    sys.exit(asyncio.run(main(args)))
