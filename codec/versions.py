"""Version ranges as the schema format writes them: `none`, `N`, `N-M`, `N+`.

The project's one parser of them: the generator reads schema files with it, and the codec reads
the ranges of a generated module's SCHEMA table with it.
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN = 0x7FFF


@dataclass(frozen=True, order=True)
class Versions:
    """An inclusive range of versions; `lo > hi` is the empty range."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | int | None, default: Versions | None = None) -> Versions:
        """Parse `none`, `N`, `N-M` or `N+`; None gives `default`."""
        if text is None:
            if default is None:
                raise ValueError("a version range is required")
            return default
        if isinstance(text, int):
            return cls(text, text)
        s = text.strip()
        if s == "none":
            return NONE
        try:
            if s.endswith("+"):
                return cls(int(s[:-1]), OPEN)
            if "-" in s:
                lo, hi = s.split("-", 1)
                v = cls(int(lo), int(hi))
                if v.empty:
                    raise ValueError
                return v
            return cls(int(s), int(s))
        except ValueError:
            raise ValueError(f"invalid version range {text!r}") from None

    @property
    def empty(self) -> bool:
        """True for the range that holds no version."""
        return self.lo > self.hi

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def intersect(self, other: Versions) -> Versions:
        """The versions in both ranges."""
        v = Versions(max(self.lo, other.lo), min(self.hi, other.hi))
        return NONE if v.empty else v

    def covers(self, other: Versions) -> bool:
        """True when every version of `other` is in this range."""
        return other.empty or (self.lo <= other.lo and other.hi <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == OPEN:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)
ALL = Versions(0, OPEN)
