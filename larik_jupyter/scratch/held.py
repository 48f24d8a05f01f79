"""What confined one scratch run, in the words its report uses: the first line says what did
not hold (the network allowed, no confinement by the operating system and why), the last line
names the confinement that did. No sentence claims more than held."""

from __future__ import annotations

from dataclasses import dataclass

from larik_jupyter.scratch import bubblewrap
from larik_jupyter.scratch.confine import TEST_SWITCH, Availability, availability


@dataclass(frozen=True)
class Held:
    """`landlock`: the kernel ran under Landlock (`abi`); else `reason` says why not and
    `bubblewrap` whether bubblewrap confined it instead (else `reason` says why not either);
    `off`: all confinement was switched off (tests only); `network`: connections were allowed."""

    landlock: bool
    abi: int
    reason: str
    off: bool
    network: bool
    bubblewrap: bool = False

    @classmethod
    def here(cls, *, network: bool) -> Held:
        """What this machine can hold for a run that may (`network`) or may not connect out."""
        found: Availability = availability()
        if found.abi > 0 or found.off:
            return cls(found.abi > 0, found.abi, found.reason, found.off, network)
        missing = bubblewrap.unusable()
        reason = f"{found.reason} and {missing}" if missing else found.reason
        return cls(False, 0, reason, False, network, bubblewrap=not missing)

    @property
    def os_confined(self) -> bool:
        """Whether the operating system kept the code from changing files outside its folders."""
        return self.landlock or self.bubblewrap

    @property
    def network_closed(self) -> bool:
        """Whether the operating system refuses connections (Landlock ABI 4 and later: TCP;
        bubblewrap: a network namespace of its own)."""
        return not self.network and (self.bubblewrap or (self.landlock and self.abi >= 4))

    def opening(self, inside: str) -> str:
        """The report's first line ("" when everything held); `inside` is "the copy" or a folder."""
        parts = []
        if self.off:
            parts.append(f"Not confined: confinement was switched off for a test ({TEST_SWITCH}=off), so the code "
                         f"could change files outside {inside} and reach the network.")
        elif self.bubblewrap:
            parts.append(f"Not confined by Landlock: {self.reason}; bubblewrap confined the code instead.")
        elif not self.landlock:
            parts.append(f"Not confined by the operating system: {self.reason}; code in C extensions could write "
                         f"outside {inside}{'' if self.network else ' and open network connections'}.")
        elif not self.network and not self.network_closed:
            parts.append(f"The network was not closed by the operating system: this kernel's Landlock (ABI {self.abi}) "
                         "has no network rules; only Python code's connections were refused.")
        if self.network:
            parts.append("The network was allowed (--network): the code could connect to other machines.")
        return " ".join(parts)

    def closing(self, subject: str, place: str, inside: str) -> str:
        """The report's last line: `subject` ran in `place`, confined as it was."""
        if self.off:
            how = "not confined (switched off for a test)"
        elif not self.os_confined:
            how = "guarded by a Python audit hook only (not confined by the operating system)"
        else:
            net = "no network" if self.network_closed else "network allowed" if self.network else "network not closed"
            by = "Landlock" if self.landlock else "bubblewrap"
            how = f"confined by the operating system ({by}: files outside {inside} read-only, {net})"
        return f"{subject} ran in {place}, {how}."
