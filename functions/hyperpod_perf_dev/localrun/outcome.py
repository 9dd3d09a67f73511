"""What a local pipeline run produced: how its execution ended, and what it left in the bucket."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunOutcome:
    """How an execution ended, and lazy access to what it left in the bucket."""

    status: str
    execution_arn: str
    error: str | None
    cause: str | None
    prefix: str | None  # reports/<cluster>/<stamp>-<execution>/, when the run got that far
    history: list[dict[str, Any]]
    store: Any = field(repr=False, default=None)  # the LocalPipeline (reads the bucket on demand)
    _objects: dict[str, bytes] | None = field(repr=False, default=None)
    _keys: list[str] | None = field(repr=False, default=None)

    def names(self) -> list[str]:
        """Every key under the run's prefix, relative to it."""
        if self._keys is None:
            self._keys = [k[len(self.prefix) :] for k in self.store.keys(self.prefix)] if self.prefix else []
        return self._keys

    def get(self, name: str) -> bytes | None:
        if self._objects is not None or not self.prefix:
            return (self._objects or {}).get(name)
        return self.store.get(self.prefix + name)

    @property
    def objects(self) -> dict[str, bytes]:
        """Every object under the prefix (reads them all: for small runs)."""
        if self._objects is None:
            self._objects = self.store.objects(self.prefix) if self.prefix else {}
        return self._objects

    @property
    def report(self) -> dict[str, Any] | None:
        body = self.get("report.json")
        return json.loads(body) if body is not None else None

    @property
    def email(self) -> str | None:
        body = self.get("notification-email.txt")
        return body.decode() if body is not None else None

    @property
    def chatbot(self) -> dict[str, Any] | None:
        body = self.get("notification-chatbot.json")
        return json.loads(body) if body is not None else None

    def raw(self, instance_id: str) -> bytes | None:
        return self.get(f"raw/{instance_id}.txt")

    def states_entered(self) -> list[str]:
        return [
            e["stateEnteredEventDetails"]["name"] for e in self.history if "stateEnteredEventDetails" in e
        ]

    def findings(self, check: str | None = None, severity: str | None = None) -> list[dict[str, Any]]:
        report = self.report or {}
        return [
            f
            for f in report.get("findings", [])
            if (check is None or f["check"] == check) and (severity is None or f["severity"] == severity)
        ]
