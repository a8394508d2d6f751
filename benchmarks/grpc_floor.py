"""What grpcio itself costs a server per unary call: an echo handler (bytes in, 40 bytes out,
the context calls our handlers make) under each way of driving grpcio, at the size of a
one-row and of a 10,000-row V2 request.

Shapes: ``interceptor`` (generic handlers and a pass-through server interceptor: the gRPC
server before issue 41's last change), ``generic`` (generic handlers alone), ``registered``
(``add_registered_method_handlers``: the server now), ``aio`` (a ``grpc.aio`` server on its
own thread's event loop, the handler a coroutine run on that loop) and ``aio-pool`` (the same
server, the handler a plain function run on a thread pool). Each server runs in a process of
its own; a client in another process sends one message after another. Two readings:

* the server process's CPU time per call (every thread; ``--rounds`` rounds alternating the
  shapes, medians), which other load on the machine moves;
* with ``--instructions N``, the instructions the server process executes per call over N
  calls after a warm-up (valgrind's callgrind, every thread, counters zeroed and dumped around
  the calls with ``callgrind_control``): repeatable, but user space only, none of the
  kernel's work (sockets, futexes).

    .venv/bin/python benchmarks/grpc_floor.py [--rounds 5] [--seconds 2] [--instructions 1000]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
from typing import NamedTuple

SHAPES = ("interceptor", "generic", "registered", "aio", "aio-pool")
SIZES = {"1 row": 200, "10,000 rows": 1_600_000}
"""Message sizes: about a one-row V2 request's, a 10,000-row raw request's."""

SERVER = r'''
import asyncio, os, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
import grpc
shape, size, calls, client = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ANSWER = b"x" * 40

def echo(request, context):
    context.invocation_metadata(); context.peer(); context.time_remaining()
    context.set_trailing_metadata((("flask-predict-worker", "1"),))
    return ANSWER

async def echo_async(request, context):
    return echo(request, context)

class PassThrough(grpc.ServerInterceptor):
    def intercept_service(self, continuation, details):
        return continuation(details)

def handlers(behaviour):
    return {"Echo": grpc.unary_unary_rpc_method_handler(behaviour)}

def sync_server():
    server = grpc.server(ThreadPoolExecutor(4), options=[("grpc.so_reuseport", 1)],
                         interceptors=[PassThrough()] if shape == "interceptor" else [])
    if shape == "registered":
        server.add_registered_method_handlers("bench.Echo", handlers(echo))
    else:
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("bench.Echo", handlers(echo)),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port

def aio_server():
    ready, box = threading.Event(), {}
    async def serve():
        pool = {"migration_thread_pool": ThreadPoolExecutor(4)} if shape == "aio-pool" else {}
        server = grpc.aio.server(**pool)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "bench.Echo", handlers(echo if shape == "aio-pool" else echo_async)),))
        box["port"] = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        ready.set()
        await server.wait_for_termination()
    threading.Thread(target=asyncio.run, args=(serve(),), daemon=True).start()
    ready.wait()
    return None, box["port"]

server, port = aio_server() if shape.startswith("aio") else sync_server()
child = subprocess.Popen([sys.executable, "-c", client, str(port), str(size), calls],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
child.stdout.readline()            # the client is warm
print("warm echo", flush=True)
sys.stdin.readline()               # counters zeroed, where counted
spent = time.process_time()
child.stdin.write("go\n")
child.stdin.flush()
done = int(child.stdout.readline())
print(f"done echo {done} {(time.process_time() - spent) / done}", flush=True)
sys.stdin.readline()               # counters dumped, where counted
'''

SEND = r'''
import sys, time

def send(call, body, calls, case):
    """A warm-up, then *case* printed and the go awaited on stdin, then *body* sent *calls*
    times ("n<count>") or for *calls* seconds; prints how many calls were made."""
    for _ in range(20):
        call(body, timeout=300)
    print(case, flush=True)
    sys.stdin.readline()
    if calls.startswith("n"):
        done = int(calls[1:])
        for _ in range(done):
            call(body, timeout=300)
    else:
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < float(calls):
            call(body, timeout=300)
            done += 1
    print(done, flush=True)
'''
"""The client's loop, in both benchmarks' clients."""

CLIENT = SEND + r'''
import grpc
port, size, calls = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
    send(channel.unary_unary("/bench.Echo/Echo"), b"y" * size, calls, "echo")
'''


class Served(NamedTuple):
    """One case served by one server child."""

    calls: int
    cpu_seconds: float
    """The server process's CPU time a call."""
    instructions: int | None
    """Instructions a call, every thread (``None`` when not counted)."""


def serve(argv: list[str], counted: str | None = None,
          env: dict[str, str] | None = None) -> dict[str, Served]:
    """Run a server child (*argv*: its arguments after the interpreter; *env*: its
    environment), under callgrind when *counted* (the stem of its output files) is given;
    each case it serves, by name.

    The child says ``warm <case>`` and waits for a line before its client starts the calls
    (the counters are zeroed meanwhile), then ``done <case> <calls> <CPU seconds a call>``
    and waits again (the counters are dumped meanwhile)."""
    command = [sys.executable, *argv]
    if counted is not None:
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={counted}",
                   *command]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
    assert child.stdout is not None and child.stdin is not None
    served: dict[str, Served] = {}
    dumps = 0
    for line in child.stdout:
        word, case, *rest = line.split()
        if word == "done":
            instructions = None
            if counted is not None:
                dumps += 1
                control(child.pid, "-d")
                instructions = dumped(f"{counted}.{dumps}") // int(rest[0])
            served[case] = Served(int(rest[0]), float(rest[1]), instructions)
        elif counted is not None:
            control(child.pid, "-z")
        child.stdin.write("next\n")
        child.stdin.flush()
    if child.wait() != 0 or not served:
        raise RuntimeError(f"the server child failed: {' '.join(argv[:4])[:200]}")
    return served


def control(pid: int, option: str) -> None:
    """``callgrind_control`` *option* (``-z``: zero the counters, ``-d``: dump them)."""
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)


def dumped(path: str) -> int:
    """The instructions a callgrind dump counted."""
    with open(path) as dump:
        for line in dump:
            if line.startswith("summary:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--instructions", type=int, default=0,
                        help="also count instructions over this many calls (callgrind)")
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    args = parser.parse_args()
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for size_name, size in SIZES.items():
            for shape in args.shapes:
                echo = serve(["-c", SERVER, shape, str(size), str(args.seconds), CLIENT])
                cpu.setdefault((shape, size_name), []).append(echo["echo"].cpu_seconds)
    counts: dict[tuple[str, str], int | None] = {}
    if args.instructions:
        with tempfile.TemporaryDirectory() as folder:
            for size_name, size in SIZES.items():
                for shape in args.shapes:
                    stem = os.path.join(folder, f"{shape}-{size}")
                    counts[shape, size_name] = serve(
                        ["-c", SERVER, shape, str(size), f"n{args.instructions}", CLIENT],
                        stem)["echo"].instructions
    print("| shape | " + " | ".join(f"{s}: CPU us a call | {s}: instructions a call"
                                     for s in SIZES) + " |")
    print("|---|" + "---|---|" * len(SIZES))
    for shape in args.shapes:
        cells = []
        for size_name in SIZES:
            count = counts.get((shape, size_name))
            cells.append(f"{statistics.median(cpu[shape, size_name]) * 1e6:.0f} | "
                         + ("-" if count is None else f"{count / 1000:.1f}k"))
        print(f"| {shape} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
