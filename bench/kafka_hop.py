"""One bus hop on the local Kafka-protocol broker (Tansu), by `fetch_max_wait_ms`.

A stage worker is already waiting in `poll` when the previous stage publishes; the time from `publish` to the
record in the worker's hands is one hop of the pipeline (six hops per question). Tansu 0.6 does not answer a
held fetch when a record arrives, so `fetch_max_wait_ms` sets that hop's floor; a smaller value costs idle
CPU (every idle consumer re-asks more often). Both are measured here, for each value, in one run:

    .venv/bin/python bench/kafka_hop.py --waits 100 20 10 --out bench/results/kafka-hop.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from skbqa.bus.base import Consumer
from skbqa.bus.kafka import KafkaBus
from skbqa.devstack.tansu import start_tansu

IDLE_CONSUMERS = 6  # one per consuming service of the pipeline (five stages and the gateway)


def _bus(bootstrap: str, wait_ms: int) -> KafkaBus:
    return KafkaBus(bootstrap, fetch_max_wait_ms=wait_ms, session_timeout_ms=2000, heartbeat_interval_ms=500)


def _poll_until(consumer: Consumer, stop: threading.Event, seen: dict[str, float] | None) -> None:
    while not stop.is_set():
        messages = consumer.poll(0.5)
        for message in messages:
            if seen is not None:
                seen[message.key] = time.perf_counter()
        if messages:
            consumer.commit(messages)


def hop_latency(bootstrap: str, wait_ms: int, hops: int) -> dict[str, float]:
    bus = _bus(bootstrap, wait_ms)
    topic = f"hop-{wait_ms}"
    bus.ensure_topics([topic], partitions=4)
    consumer = bus.consumer([topic], f"hop-{wait_ms}", from_beginning=False)
    seen: dict[str, float] = {}
    stop = threading.Event()
    worker = threading.Thread(target=_poll_until, args=(consumer, stop, seen))
    worker.start()
    latencies = []
    try:
        for i in range(hops + 5):
            time.sleep(0.03)  # the consumer is back in a held fetch
            key = f"k{i}"
            started = time.perf_counter()
            bus.publish(topic, key, b"x")
            deadline = started + 5
            while key not in seen and time.perf_counter() < deadline:
                time.sleep(0.0002)
            if key not in seen:
                raise RuntimeError(f"record {key} not received within 5 s")
            if i >= 5:  # the first hops include connection set-up
                latencies.append((seen[key] - started) * 1000)
    finally:
        stop.set()
        worker.join()
        consumer.close()
        bus.close()
    latencies.sort()
    return {
        "p50_ms": round(statistics.median(latencies), 2),
        "p90_ms": round(latencies[int(len(latencies) * 0.9)], 2),
    }


def idle_cpu(bootstrap: str, broker_pid: int, wait_ms: int, seconds: float) -> dict[str, float]:
    bus = _bus(bootstrap, wait_ms)
    topics = [f"idle-{wait_ms}-{i}" for i in range(IDLE_CONSUMERS)]
    bus.ensure_topics(topics, partitions=4)
    consumers = [bus.consumer([t], t, from_beginning=False) for t in topics]
    stop = threading.Event()
    threads = [threading.Thread(target=_poll_until, args=(c, stop, None)) for c in consumers]
    for thread in threads:
        thread.start()
    try:
        time.sleep(2)
        broker, me = psutil.Process(broker_pid), psutil.Process()
        b0, m0 = broker.cpu_times(), me.cpu_times()
        time.sleep(seconds)
        b1, m1 = broker.cpu_times(), me.cpu_times()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        for consumer in consumers:
            consumer.close()
        bus.close()

    def share(a: Any, b: Any) -> float:
        return round(100 * (b.user + b.system - a.user - a.system) / seconds, 1)

    return {"broker_pct_of_core": share(b0, b1), "clients_pct_of_core": share(m0, m1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waits", type=int, nargs="+", default=[100, 20, 10])
    parser.add_argument("--hops", type=int, default=100)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with start_tansu() as broker:
        broker_pid = next(p.pid for p in psutil.Process().children(recursive=True) if "tansu" in p.name())
        for wait_ms in args.waits:
            row = {"fetch_max_wait_ms": wait_ms, **hop_latency(broker.bootstrap, wait_ms, args.hops)}
            row.update(
                {
                    "idle_" + k: v
                    for k, v in idle_cpu(broker.bootstrap, broker_pid, wait_ms, args.idle_seconds).items()
                }
            )
            print(json.dumps(row), flush=True)
            rows.append(row)
    baseline = rows[0]
    for row in rows:
        row["hop_p50_ratio_vs_first"] = round(row["p50_ms"] / baseline["p50_ms"], 3)
    result = {"idle_consumers": IDLE_CONSUMERS, "hops": args.hops, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
