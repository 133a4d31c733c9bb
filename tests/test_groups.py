"""codemod/groups.py: components of linked ids, the same whatever order the links come in."""

from __future__ import annotations

import itertools

import pytest

from codemod.groups import UnionFind

LINKS = [("c", "a"), ("d", "c"), ("x", "y"), ("b", "b")]


@pytest.mark.parametrize("order", list(itertools.permutations(LINKS)))
def test_components_do_not_depend_on_the_order_of_the_links(order) -> None:
    components = UnionFind()
    components.add("lonely")
    for a, b in order:
        components.union(a, b)
    assert components.groups() == [["a", "c", "d"], ["b"], ["lonely"], ["x", "y"]]
    assert components.find("d") == "a"  # the smallest id represents its component
