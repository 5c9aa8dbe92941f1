"""What a distributed build did (``BuildStats``): filled in by the driver and the assembly,
in a module of its own so that neither has to import the other for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List


@dataclass
class BuildStats:
    """What a distributed build did: counts, the seconds of each stage, and the bytes of the
    file that the driver wrote itself (header, descriptors, padding, finished layers)."""

    rows: int = 0
    keys: int = 0  # distinct key hashes: the file's key count
    groups: int = 0  # a filter set's distinct groups (0 for a filter)
    file_bytes: int = 0
    driver_bytes_written: int = 0
    layers: List[dict] = field(default_factory=list)  # per distributed layer
    one_place_layers: int = 0
    seconds: dict = field(default_factory=dict)
    layer0_route: str = ""  # where an engine that can choose hashed layer 0 ("jvm", "python")

    @property
    def bits_per_key(self) -> float:
        return 8.0 * self.file_bytes / self.keys if self.keys else 0.0
