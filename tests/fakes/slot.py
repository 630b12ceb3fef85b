"""The embedded server's slot endpoint, faked: save writes a file, restore reads it."""

from __future__ import annotations

from pathlib import Path


class FakeSlot:
    """The server's ``/slots/0``: ``save`` writes the file, ``restore`` reads it; ``fail`` raises."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.calls: list[tuple[str, str]] = []
        self.fail = False

    def __call__(self, action: str, filename: str) -> dict[str, object]:
        self.calls.append((action, filename))
        if self.fail:
            raise OSError("HTTP Error 400: slot is busy")
        path = self.directory / filename
        if action == "save":
            path.write_bytes(b"kv" * 10)
            return {"n_saved": 10}
        return {"n_restored": len(path.read_bytes())}
