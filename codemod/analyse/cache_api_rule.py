"""TB009: the ``Cache`` methods 4.36 - 4.4x remote code calls that later releases removed.

Code written against the first ``Cache`` classes (DeepSeek-V2/V3, MiniCPM ...) reads the past length with
``get_usable_length`` or ``seen_tokens`` and converts tuples with ``DynamicCache.from_legacy_cache`` /
``to_legacy_cache``. Read from the wheels' ``cache_utils.py``: 4.53.3 defines ``get_usable_length`` and the
``seen_tokens`` property, 4.54.0 neither; 4.57.1 defines ``from_legacy_cache`` and ``to_legacy_cache``, 5.0.0
neither. A file that defines the method itself (its own cache class) is not reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from codemod.analyse.blockers import BlockerRule, Example, Hit, NearMiss, TreeFacts

#: method -> the first release without it
REMOVED_METHODS = {
    "get_usable_length": "4.54.0",
    "seen_tokens": "4.54.0",
    "from_legacy_cache": "5.0.0",
    "to_legacy_cache": "5.0.0",
}
#: what a cache is called where ``seen_tokens`` is read (an attribute of that name elsewhere is someone else's)
_CACHE_NAME = re.compile(r"^(layer_)?past(_key_values?|_kv)?$|^(next_)?(decoder_)?cache$")


def _removed_methods(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in REMOVED_METHODS or node.attr in own:
            continue
        if node.attr == "seen_tokens" and not (isinstance(node.value, ast.Name) and _CACHE_NAME.match(node.value.id)):
            continue
        yield Hit(node.lineno, ast.unparse(node), REMOVED_METHODS[node.attr], f"{node.attr} is gone")


CACHE_API = BlockerRule(
    "TB009",
    "removed-cache-method",
    "calls a Cache method the target no longer has",
    "4.54.0",
    "cache_utils.py: 4.53.3's Cache defines get_usable_length and seen_tokens, 4.54.0's neither; 4.57.1's "
    "DynamicCache defines from_legacy_cache and to_legacy_cache, 5.0.0's neither ('DynamicCache' object has no "
    "attribute 'get_usable_length')",
    "`past_key_values.get_seq_length(layer_idx)` for the past length; `DynamicCache(tuples)` and the Cache itself "
    "returned on 5.x",
    _removed_methods,
    (
        Example("usable", "kv_seq_len += past_key_value.get_usable_length(kv_seq_len, self.layer_idx)\n"),
        Example("seen", "past_length = past_key_values.seen_tokens\n"),
        Example(
            "legacy",
            "past_key_values = DynamicCache.from_legacy_cache(past_key_values)\n"
            "next_cache = next_decoder_cache.to_legacy_cache() if use_legacy_cache else next_decoder_cache\n",
            2,
        ),
    ),
    (
        NearMiss("seq-length", "past_length = past_key_values.get_seq_length()\n", "the method every release has"),
        NearMiss(
            "own-cache",
            "class MyCache:\n    def get_usable_length(self, n, layer_idx=0):\n        return 0\n"
            "n = cache.get_usable_length(3)\n",
            "the file's own cache class defines it",
        ),
        NearMiss("other-seen", "total = self.stats.seen_tokens\n", "not a cache by its name"),
    ),
)
