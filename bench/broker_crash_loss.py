"""Does the durable broker (Tansu on s3 storage served by moto) keep every record it acknowledged across a SIGKILL?

Four threads publish (acks=all, each publish waited for) for 3 s; then Tansu is killed mid-stream (`--kill`) or
left running, restarted on the same object store, and every partition is read from the beginning with a plain
consumer. Prints the acknowledged count and the acknowledged records that cannot be read back.

    .venv/bin/python bench/broker_crash_loss.py --kill
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

PARTITIONS = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill", action="store_true", help="SIGKILL Tansu while the publishers run")
    args = parser.parse_args()

    import kafka

    from skbqa.bus.kafka import KafkaBus
    from skbqa.devstack.tansu import start_tansu

    handle = start_tansu(storage="s3", data_dir=Path(tempfile.mkdtemp()) / "broker", s3_server="moto")
    bus = KafkaBus(handle.bootstrap, topic_prefix="crash.")
    bus.ensure_topics(["work"], partitions=PARTITIONS)
    acked: list[str] = []
    lock, stop = threading.Lock(), threading.Event()

    def publish(thread: int) -> None:
        for i in range(1_000_000):
            if stop.is_set():
                return
            key = f"t{thread}-{i}"
            try:
                bus.publish("work", key, key.encode())
            except Exception:  # the broker is down: nothing acknowledged
                continue
            with lock:
                acked.append(key)

    threads = [threading.Thread(target=publish, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(3)
    if args.kill:
        os.kill(handle.pids()["tansu"], signal.SIGKILL)
        time.sleep(0.3)
    stop.set()
    for thread in threads:
        thread.join()
    if args.kill:
        handle.start_tansu_only()
    consumer = kafka.KafkaConsumer(bootstrap_servers=handle.bootstrap, enable_auto_commit=False)
    partitions = [kafka.TopicPartition("crash.work", p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    read: set[str] = set()
    quiet_since, deadline = time.monotonic(), time.monotonic() + 60
    while time.monotonic() - quiet_since < 5 and time.monotonic() < deadline:
        batches = consumer.poll(timeout_ms=500, max_records=500)
        if batches:
            quiet_since = time.monotonic()
        read.update(r.key.decode() for batch in batches.values() for r in batch)
    consumer.close()
    handle.stop()
    missing = [key for key in acked if key not in read]
    print(json.dumps({"killed": args.kill, "acknowledged": len(acked), "acknowledged_but_lost": len(missing)}))


if __name__ == "__main__":
    main()
