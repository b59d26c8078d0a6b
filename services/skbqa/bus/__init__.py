"""The message bus: the `Bus` port, its in-memory and Kafka adapters, topic names, and a Tansu broker launcher.

Importing this package never imports kafka-python; `KafkaBus` and `start_tansu` import it when used.
"""

from skbqa.bus.base import Bus, Consumer, Message
from skbqa.bus.kafka import KafkaBus, bus_from_url
from skbqa.bus.memory import MemoryBus

__all__ = ["Bus", "Consumer", "KafkaBus", "MemoryBus", "Message", "bus_from_url"]
