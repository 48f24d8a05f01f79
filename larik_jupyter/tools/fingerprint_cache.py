"""The fingerprints the kernel keeps between calls (`KernelHost.fingerprints`), and the shape of
one; `tools/kernel/fingerprint.py` takes them."""

from __future__ import annotations

from dataclasses import dataclass, field

IMMUTABLE = -1  # the digest of a value that cannot change in place


@dataclass(frozen=True)
class Fingerprint:
    """`type` and `shape` as shown to the user; `digest` None when the content was not hashed
    (`why` says why), `IMMUTABLE` for a scalar."""

    type: str
    shape: str = ""
    digest: int | None = None
    why: str = ""
    hashed: int = field(default=0, compare=False)  # bytes of the budget it used
    # What the digest's proof needs alive: Arrow buffers compared by address (`arrow_buffers.py`).
    held: tuple[object, ...] = field(default=(), compare=False, repr=False)

    @property
    def summary(self) -> str:
        """`DataFrame 1000×5`, `list len 3`, `int`."""
        return f"{self.type} {self.shape}".rstrip()


@dataclass
class FingerprintCache:
    """Fingerprints taken after a call, by name, with the object they are of: the state before
    the next call of the same turn (nothing else runs in the kernel between them), so each call
    fingerprints a variable once. `said`: the names already reported as not compared."""

    prints: dict[str, tuple[object, Fingerprint]] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)

    def get(self, name: str, value: object) -> Fingerprint | None:
        """The cached fingerprint of `name` if it is still bound to the same object."""
        found = self.prints.get(name)
        return found[1] if found is not None and found[0] is value else None

    def clear(self) -> None:
        """A new turn: the user may have run cells since, so nothing cached holds."""
        self.prints.clear()
        self.said.clear()
