"""Connected components of linked ids (a union-find): copy groups, and the shards ``plan`` writes as one.

Deterministic: a component's representative is its smallest id, and ``groups`` lists components and
their members in sorted order, so no result depends on the order links were added in.
"""

from __future__ import annotations


class UnionFind:
    """Ids joined by ``union``; ``groups`` lists the components (singletons too)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def add(self, item: str) -> None:
        self.parent.setdefault(item, item)

    def find(self, item: str) -> str:
        self.add(item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]  # path halving: later finds stay short
            item = self.parent[item]
        return item

    def union(self, a: str, b: str) -> None:
        ra, rb = sorted((self.find(a), self.find(b)))
        self.parent[rb] = ra

    def groups(self) -> list[list[str]]:
        """Every component, members sorted, in the order of their smallest member."""
        out: dict[str, list[str]] = {}
        for item in sorted(self.parent):
            out.setdefault(self.find(item), []).append(item)
        return list(out.values())
