"""Delete confirmation tokens: a client may delete only the session state it was shown."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path


class DeleteTokens:
    """Signs a session file's identity (name, size, mtime) with a per-server secret."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def token(self, path: Path) -> str:
        """The token confirming deletion of `path` as it is now; any later append changes it."""
        stat = os.lstat(path)  # the entry itself: a link is never followed
        identity = f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()
        return hmac.new(self._secret, identity, hashlib.sha256).hexdigest()[:32]

    def matches(self, path: Path, token: str) -> bool:
        """Whether `token` confirms deletion of `path` in its current state."""
        return hmac.compare_digest(self.token(path), token)
