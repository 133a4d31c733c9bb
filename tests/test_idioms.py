"""The fixes for the generation-machinery idioms (``codemod.transform.idioms``): each idiom as a (before, after)
pair on its target, what is left as it is and why, and that every byte outside an edit is kept."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codemod.analyse.blocker_rules import RULES
from codemod.analyse.blockers import TreeFacts
from codemod.transform.idioms import IdiomTarget, migrate, target_of

FIVE = IdiomTarget("5.23.0", from_legacy_cache=False)
FOUR = IdiomTarget("4.57.1", from_legacy_cache=True)

#: the 4.3x Llama shape, cut to what the cache idioms touch
LLAMA = """
import torch
from torch import nn
from transformers import PreTrainedModel


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.k_proj = nn.Linear(8, 8)

    def forward(self, hidden_states, past_key_value=None, use_cache=False):
        key_states, value_states = self.k_proj(hidden_states), hidden_states
        kv_seq_len = key_states.shape[-2]
        if past_key_value is not None:
            kv_seq_len += past_key_value[0].shape[-2]
        if past_key_value is not None:
            # reuse k, v
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)

        past_key_value = (key_states, value_states) if use_cache else None
        return key_states, past_key_value


class DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = Attention(config=config)

    def forward(self, hidden_states, past_key_value=None, use_cache=False):
        return self.self_attn(hidden_states, past_key_value, use_cache)


class Model(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, past_key_values=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        past_key_values_length = 0
        if past_key_values is not None:
            past_key_values_length = past_key_values[0][0].shape[2]
        next_decoder_cache = () if use_cache else None
        for idx, decoder_layer in enumerate(self.layers):
            past_key_value = past_key_values[idx] if past_key_values is not None else None
            layer_outputs = decoder_layer(hidden_states, past_key_value, use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                next_decoder_cache += (layer_outputs[1],)
        return hidden_states, next_decoder_cache, past_key_values_length
"""

LLAMA_AFTER = """
import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.cache_utils import Cache, DynamicCache


class Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.k_proj = nn.Linear(8, 8)

    def forward(self, hidden_states, past_key_value=None, use_cache=False):
        key_states, value_states = self.k_proj(hidden_states), hidden_states
        kv_seq_len = key_states.shape[-2]
        if past_key_value is not None:
            kv_seq_len += past_key_value.get_seq_length(self.layer_idx)
        if past_key_value is not None:
            # reuse k, v
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        return key_states, past_key_value


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.self_attn = Attention(config=config, layer_idx=layer_idx)

    def forward(self, hidden_states, past_key_value=None, use_cache=False):
        return self.self_attn(hidden_states, past_key_value, use_cache)


class Model(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([DecoderLayer(config, layer_idx=layer_idx) for layer_idx in range(config.num_hidden_layers)])

    def forward(self, hidden_states, past_key_values=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        past_key_values_length = 0
        if (use_cache or past_key_values is not None) and not isinstance(past_key_values, Cache):
            past_key_values = DynamicCache(past_key_values)
        if past_key_values is not None:
            past_key_values_length = past_key_values.get_seq_length()
        next_decoder_cache = () if use_cache else None
        for idx, decoder_layer in enumerate(self.layers):
            past_key_value = past_key_values
            layer_outputs = decoder_layer(hidden_states, past_key_value, use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                next_decoder_cache = layer_outputs[1]
        return hidden_states, next_decoder_cache, past_key_values_length
"""

REORDER = """
class M(PreTrainedModel):
    def forward(self, past_key_values=None):
        return past_key_values.get_seq_length()

    @staticmethod
    def _reorder_cache(past, beam_idx):
        return tuple(tuple(p.index_select(0, beam_idx) for p in layer_past) for layer_past in past)
"""

REORDER_AFTER = """
class M(PreTrainedModel):
    def forward(self, past_key_values=None):
        return past_key_values.get_seq_length()
"""

HEAD_MASK = """
from transformers import PreTrainedModel


class M(PreTrainedModel):
    def forward(self, head_mask=None):
        head_mask = self.get_head_mask(head_mask, self.config.n_layer)
        return head_mask
"""

HEAD_MASK_AFTER = '''
from transformers import PreTrainedModel


def _get_head_mask(head_mask, num_hidden_layers, mask_dtype):
    """ModuleUtilsMixin.get_head_mask of transformers 4.x, which 5.0 removed: a mask per layer, 5-D."""
    if head_mask is None:
        return [None] * num_hidden_layers
    if head_mask.dim() == 1:
        head_mask = head_mask.unsqueeze(0).unsqueeze(0).unsqueeze(-1).unsqueeze(-1)
        head_mask = head_mask.expand(num_hidden_layers, -1, -1, -1, -1)
    elif head_mask.dim() == 2:
        head_mask = head_mask.unsqueeze(1).unsqueeze(-1).unsqueeze(-1)
    return head_mask.to(dtype=mask_dtype)


class M(PreTrainedModel):
    def forward(self, head_mask=None):
        head_mask = _get_head_mask(head_mask, self.config.n_layer, self.dtype)
        return head_mask
'''

FX = """
import torch
from transformers.utils import is_torch_fx_available, logging

if is_torch_fx_available():
    import torch.fx
"""

FX_AFTER = """
import torch
from transformers.utils import logging


def is_torch_fx_available():
    # transformers 5.0 removed it; it said whether torch has torch.fx, which every torch 5.x supports has
    return True

if is_torch_fx_available():
    import torch.fx
"""

FX_ALONE = """
from transformers.utils.import_utils import is_torch_fx_available as fx_ok

USE_FX = fx_ok()
"""

FX_ALONE_AFTER = """


def fx_ok():
    # transformers 5.0 removed it; it said whether torch has torch.fx, which every torch 5.x supports has
    return True

USE_FX = fx_ok()
"""


@pytest.mark.parametrize(
    ("before", "after", "codes"),
    [
        pytest.param(LLAMA, LLAMA_AFTER, {"TB001", "TB002", "TB003"}, id="llama-caches"),
        pytest.param(REORDER, REORDER_AFTER, {"TB004"}, id="reorder-cache"),
        pytest.param(HEAD_MASK, HEAD_MASK_AFTER, {"TB005"}, id="get-head-mask"),
        pytest.param(FX, FX_AFTER, {"TB008"}, id="fx-import"),
        pytest.param(FX_ALONE, FX_ALONE_AFTER, {"TB008"}, id="fx-import-alone-aliased"),
    ],
)
def test_each_idiom_is_migrated_onto_5x(before: str, after: str, codes: set[str]) -> None:
    result = migrate(before, FIVE)
    assert result.source == after
    assert {e.code for e in result.edits} == codes
    assert result.not_migrated == ()


def test_attention_classes_built_through_a_table_get_the_index() -> None:
    """InternLM2's shape: ``TABLE[config.attn_implementation](config=config)``, a subclass without ``__init__``."""
    source = LLAMA.replace(
        "self.self_attn = Attention(config=config)", "self.self_attn = TABLE[config.impl](config=config)"
    )
    source += (
        "\n\nclass FlashAttention(Attention):\n    pass\n\n\nTABLE = {'eager': Attention, 'flash': FlashAttention}\n"
    )
    result = migrate(source, FIVE)
    assert result.not_migrated == ()
    assert "self.self_attn = TABLE[config.impl](config=config, layer_idx=layer_idx)" in result.source
    assert (
        "    def __init__(self, config, layer_idx=None):\n        super().__init__()\n        self.layer_idx = layer_idx\n"
        in result.source
    )


def test_a_subclass_handing_its_arguments_on_runs_the_base_init() -> None:
    """StableLM-epoch's flash attention: ``__init__(self, *args, **kwargs)`` calls ``super().__init__(*args, **kwargs)``."""
    flash = "\n\nclass FlashAttention(Attention):\n    def __init__(self, *args, **kwargs):\n"
    flash += "        super().__init__(*args, **kwargs)\n        self.flash = True\n"
    source = LLAMA.replace("Attention(config=config)", "TABLE[config.impl](config=config)") + flash
    source += "\n\nTABLE = {'eager': Attention, 'flash': FlashAttention}\n"
    result = migrate(source, FIVE)
    assert result.not_migrated == ()
    assert "        super().__init__(*args, **kwargs)\n        self.flash = True\n" in result.source


def test_a_loop_that_never_reads_the_past_length_gets_the_cache_before_its_layers() -> None:
    source = LLAMA.replace(
        "        if past_key_values is not None:\n            past_key_values_length = past_key_values[0][0].shape[2]\n",
        "",
    )
    result = migrate(source, FIVE)
    assert result.not_migrated == ()
    build = "        if (use_cache or past_key_values is not None) and not isinstance(past_key_values, Cache):\n"
    assert (
        build + "            past_key_values = DynamicCache(past_key_values)\n        next_decoder_cache"
        not in result.source
    )
    assert (
        build + "            past_key_values = DynamicCache(past_key_values)\n        for idx, decoder_layer"
        in result.source
    )


def test_the_model_loop_builds_the_cache_the_4x_way_where_the_target_has_from_legacy_cache() -> None:
    result = migrate(LLAMA, FOUR)
    assert "past_key_values = DynamicCache.from_legacy_cache(past_key_values)" in result.source
    assert result.source.replace(".from_legacy_cache(", "(") == LLAMA_AFTER


def test_no_legacy_cache_idiom_is_left_in_the_migrated_llama() -> None:
    result = migrate(LLAMA, FIVE)
    tree = ast.parse(result.source)
    left = [h for r in RULES if r.code in ("TB001", "TB002", "TB003") for h in r.find(tree, TreeFacts())]
    assert left == []
    lines = {e.line for e in result.edits}
    assert {LLAMA.splitlines().index(line) + 1 for line in LLAMA.splitlines() if "torch.cat" in line} <= lines


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            LLAMA.replace("self.self_attn = Attention(config=config)", "self.self_attn = Attn(config=config)")
            + "\nAttn = Attention\n",
            "named outside a call",
            id="attention-through-an-alias",
        ),
        pytest.param(
            LLAMA[LLAMA.index("class Model") :],
            "not both in this file",
            id="model-loop-without-attention",
        ),
        pytest.param(
            LLAMA.replace(
                "return hidden_states, next_decoder_cache", "return past_key_values[-1], next_decoder_cache"
            ),
            "still in the migrated file",
            id="another-index-of-the-cache",
        ),
        pytest.param(
            LLAMA.replace(
                "        next_decoder_cache = () if",
                "        use_cache = self.training\n        next_decoder_cache = () if",
            ),
            "use_cache is set again",
            id="use-cache-set-again",
        ),
        pytest.param(
            LLAMA.replace("[DecoderLayer(config) for _ in range(config.num_hidden_layers)]", "[DecoderLayer(config)]"),
            "outside a comprehension over range()",
            id="layers-without-an-index",
        ),
    ],
)
def test_a_cache_idiom_not_recognised_exactly_leaves_every_cache_idiom_of_the_file(source: str, reason: str) -> None:
    result = migrate(source, FIVE)
    assert result.source == source  # all or nothing: a Cache loop over tuple attentions runs no better
    assert result.edits == ()
    # each idiom the rules find is reported (this loop alone has no concat: its attention is elsewhere)
    assert {n.code for n in result.not_migrated} == (
        {"TB001", "TB003"} if "class Attention" not in source else {"TB001", "TB002", "TB003"}
    )
    assert all(reason in n.reason for n in result.not_migrated), result.not_migrated


def test_a_tuple_reorder_stays_while_the_caches_are_tuples() -> None:
    source = LLAMA[LLAMA.index("class Model") :] + REORDER.replace("class M(PreTrainedModel):\n", "class N(Model):\n")
    result = migrate(source, FIVE)
    assert result.source == source
    assert [(n.code, n.reason) for n in result.not_migrated if n.code == "TB004"] == [
        ("TB004", "the file's caches are still tuples")
    ]


@pytest.mark.parametrize(
    ("source", "target"),
    [
        # the target still has what the code uses
        pytest.param(HEAD_MASK, FOUR, id="get-head-mask-on-4x"),
        pytest.param(FX, FOUR, id="fx-import-on-4x"),
        # the file's own get_head_mask (TB005 does not report it)
        pytest.param(
            HEAD_MASK + "\n    def get_head_mask(self, head_mask, n):\n        return [None] * n\n",
            FIVE,
            id="own-head-mask",
        ),
        # the Cache reorders itself already
        pytest.param(
            "class M(PreTrainedModel):\n    def forward(self):\n        pass\n\n"
            "    def _reorder_cache(self, past_key_values, beam_idx):\n"
            "        past_key_values.reorder_cache(beam_idx)\n        return past_key_values\n",
            FIVE,
            id="reorder-through-the-cache",
        ),
        # code that handles both forms takes the Cache branch on the target
        pytest.param(
            "def forward(past_key_values=None, use_cache=None):\n"
            "    if isinstance(past_key_values, Cache):\n        n = past_key_values.get_seq_length()\n"
            "    else:\n        n = past_key_values[0][0].shape[2]\n",
            FIVE,
            id="cache-branch",
        ),
        pytest.param("def broken(:\n", FIVE, id="does-not-parse"),
    ],
)
def test_nothing_to_migrate(source: str, target: IdiomTarget) -> None:
    result = migrate(source, target)
    assert (result.source, result.edits, result.not_migrated) == (source, (), ())


def test_every_byte_outside_the_edits_is_kept() -> None:
    crlf = FX.replace("\n", "\r\n") + "x = 1  # a comment\t kept\r\n"
    result = migrate(crlf, FIVE)
    assert result.source == FX_AFTER.replace("\n", "\r\n") + "x = 1  # a comment\t kept\r\n"


def test_a_head_mask_call_with_other_arguments_is_reported() -> None:
    source = HEAD_MASK.replace("self.config.n_layer)", "self.config.n_layer, is_attention_chunked=True)")
    result = migrate(source, FIVE)
    assert result.source == source
    assert [(n.code, n.line) for n in result.not_migrated] == [("TB005", 7)]


def test_the_target_is_read_from_its_wheel(tmp_path: Path) -> None:
    (tmp_path / "cache_utils.py").write_text("class DynamicCache:\n    def from_legacy_cache(cls): ...\n")
    assert target_of("4.46.3", tmp_path).from_legacy_cache
    (tmp_path / "cache_utils.py").write_text("class DynamicCache:\n    def __init__(self, ddp_cache_data=None): ...\n")
    assert not target_of("5.23.0", tmp_path).from_legacy_cache
    assert target_of("4.46.3", None).from_legacy_cache and not target_of("5.23.0", None).from_legacy_cache


@pytest.mark.parametrize("rule", [r.code for r in RULES])
def test_explain_says_which_rules_have_a_fix(rule: str) -> None:
    from codemod.analyse.blockers import explain
    from codemod.transform.idioms import FIXES

    text = explain(rule) or ""
    if rule in FIXES:
        assert "--unsafe-fixes" in text and FIXES[rule] in text
    else:  # TB006: no fix written
        assert "Reported only: the tool does not migrate it." in text


def test_verify_runs_each_class_with_an_override_in_a_file_whose_idioms_were_fixed(tmp_path: Path) -> None:
    from codemod import git
    from codemod.analyse.scan import scan
    from codemod.checkout import resolve
    from codemod.verify import session

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_llama"
    root = tmp_path / "tree"
    root.mkdir()
    git.run(root, "init", "-q", "-b", "main", isolated=True)
    for path in fixture.iterdir():
        if path.is_file():
            (root / path.name).write_bytes(path.read_bytes())
    git.run(root, "add", "-A", isolated=True)
    git.run(root, "commit", "-q", "-m", "base", isolated=True)
    base = scan(resolve(root))
    modeling = root / "modeling_legacy_llama.py"
    # the fix left prepare_inputs_for_generation's own lines alone but the past length: cut it back to the original
    fixed = migrate(modeling.read_text(), FIVE).source.replace(
        "past_length = past_key_values.get_seq_length()", "past_length = past_key_values[0][0].shape[2]"
    )
    modeling.write_text(fixed)
    targets, _ = session.targets_from_diff(base, "HEAD")
    assert [t.class_name for t in targets] == ["LegacyLlamaForCausalLM"]
    # no idiom fixed (a comment added): the method is the same, no class is run
    modeling.write_text((fixture / "modeling_legacy_llama.py").read_text() + "# a comment\n")
    assert session.targets_from_diff(base, "HEAD")[0] == []


def test_diff_makes_the_idiom_fixes_only_with_unsafe_fixes(tmp_path: Path) -> None:
    """Judged against a stand-in 5.0.0 package (``--mixin``) whose ``DynamicCache`` has no ``from_legacy_cache``."""
    import shutil

    from typer.testing import CliRunner

    from codemod.cli import app
    from tests.conftest import make_target_package

    package = make_target_package(tmp_path / "target", "5.0.0", pretrained_generative=False)
    (package / "cache_utils.py").write_text("class Cache:\n    pass\n\n\nclass DynamicCache(Cache):\n    pass\n")
    tree = tmp_path / "tree"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "legacy_llama", tree)
    runner = CliRunner()
    safe = runner.invoke(app, ["diff", str(tree), "--no-cache", "--mixin", str(package)])
    assert "past_key_value.update(" not in safe.stdout  # unsafe: never without asking
    unsafe = runner.invoke(app, ["diff", str(tree), "--no-cache", "--mixin", str(package), "--unsafe-fixes"])
    added = {line[1:].strip() for line in unsafe.stdout.splitlines() if line.startswith("+")}
    assert "key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)" in added
    assert "past_key_values = DynamicCache(past_key_values)" in added
    assert "def is_torch_fx_available():" in added
    assert (tree / "modeling_legacy_llama.py").read_bytes() == (
        Path(__file__).resolve().parents[1] / "fixtures" / "legacy_llama" / "modeling_legacy_llama.py"
    ).read_bytes()  # diff writes nothing


CACHE_API = """
class Attention(nn.Module):
    def forward(self, hidden_states, past_key_value=None):
        kv_seq_len = hidden_states.shape[-2]
        if past_key_value is not None:
            kv_seq_len += past_key_value.get_usable_length(kv_seq_len, self.layer_idx)
        return kv_seq_len


class Model(PreTrainedModel):
    def forward(self, input_ids, past_key_values=None, use_cache=None):
        if use_cache:
            use_legacy_cache = not isinstance(past_key_values, Cache)
            if use_legacy_cache:
                past_key_values = DynamicCache.from_legacy_cache(past_key_values)
            past_key_values_length = past_key_values.get_usable_length(input_ids.shape[1])
        next_decoder_cache = past_key_values
        next_cache = next_decoder_cache.to_legacy_cache() if use_legacy_cache else next_decoder_cache
        return next_cache

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        past_length = past_key_values.seen_tokens
        return past_length
"""

CACHE_API_AFTER = """
class Attention(nn.Module):
    def forward(self, hidden_states, past_key_value=None):
        kv_seq_len = hidden_states.shape[-2]
        if past_key_value is not None:
            kv_seq_len += past_key_value.get_seq_length(self.layer_idx)
        return kv_seq_len


class Model(PreTrainedModel):
    def forward(self, input_ids, past_key_values=None, use_cache=None):
        if use_cache:
            use_legacy_cache = not isinstance(past_key_values, Cache)
            if use_legacy_cache:
                past_key_values = DynamicCache(past_key_values)
            past_key_values_length = past_key_values.get_seq_length()
        next_decoder_cache = past_key_values
        next_cache = next_decoder_cache
        return next_cache

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        past_length = past_key_values.get_seq_length()
        return past_length
"""


def test_removed_cache_methods_are_moved_onto_what_5x_offers() -> None:
    result = migrate(CACHE_API, FIVE)
    assert result.source == CACHE_API_AFTER
    assert [e.code for e in result.edits] == ["TB009"] * 5
    assert result.not_migrated == ()


def test_on_4_57_only_what_4_54_removed_is_moved() -> None:
    result = migrate(CACHE_API, FOUR)  # from_legacy_cache and to_legacy_cache are still there
    assert "DynamicCache.from_legacy_cache(past_key_values)" in result.source
    assert "next_decoder_cache.to_legacy_cache() if use_legacy_cache" in result.source
    assert "get_usable_length" not in result.source and "seen_tokens" not in result.source


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            "x = past_key_values.get_usable_length(n, layer_idx=0, extra=1)\n",
            "get_usable_length with arguments other than",
            id="usable-length-other-arguments",
        ),
        pytest.param(
            "def f(cache):\n    return cache.to_legacy_cache()\n", "return the Cache itself", id="to-legacy-alone"
        ),
        pytest.param(
            "def crop(past_key_values, n):\n    past_key_values.seen_tokens -= n\n",
            "seen_tokens is set here, not read",
            id="seen-tokens-written-ipex-llm",
        ),
        pytest.param(
            "def crop(past_key_values, n):\n    past_key_values.seen_tokens = n\n",
            "seen_tokens is set here, not read",
            id="seen-tokens-assigned",
        ),
    ],
)
def test_a_removed_cache_method_not_recognised_exactly_is_reported(source: str, reason: str) -> None:
    result = migrate(source, FIVE)
    assert result.source == source
    assert [n.code for n in result.not_migrated] == ["TB009"] and reason in result.not_migrated[0].reason


CONFIG = '''
from transformers import PretrainedConfig


class ToyConfig(PretrainedConfig):
    """A config that sets none of the token ids itself."""

    model_type = "toy"

    def __init__(self, hidden_size=8, max_length=30, **kwargs):
        self.hidden_size = hidden_size
        self.max_length = max_length
        super().__init__(**kwargs)
'''

CONFIG_AFTER = '''
from transformers import PretrainedConfig


class ToyConfig(PretrainedConfig):
    """A config that sets none of the token ids itself."""

    model_type = "toy"
    pad_token_id = None  # 5.0's PretrainedConfig no longer sets it
    top_k = 50  # 5.0's PretrainedConfig no longer sets it

    def __init__(self, hidden_size=8, max_length=30, **kwargs):
        self.hidden_size = hidden_size
        self.max_length = max_length
        super().__init__(**kwargs)
'''


def test_the_config_class_gets_the_4x_default_of_each_setting_the_tree_reads() -> None:
    reads = frozenset({"pad_token_id", "top_k", "max_length", "hidden_size"})  # max_length: its own; hidden_size: no
    result = migrate(CONFIG, IdiomTarget("5.23.0", False, config_reads=reads))
    assert result.source == CONFIG_AFTER
    assert [e.code for e in result.edits] == ["TB007"]
    assert migrate(CONFIG, IdiomTarget("4.57.1", True, config_reads=reads)).source == CONFIG  # 4.57 still sets them


def test_diff_gives_the_tree_config_class_what_its_models_read(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from codemod.cli import app
    from tests.conftest import make_target_package

    package = make_target_package(tmp_path / "target", "5.0.0", pretrained_generative=False)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "configuration_toy.py").write_text(CONFIG)
    (tree / "modeling_toy.py").write_text(
        "from .configuration_toy import ToyConfig\n\n\nclass ToyModel:\n    def __init__(self, config: ToyConfig):\n"
        "        self.padding_idx = config.pad_token_id\n        self.k = config.top_k\n"
    )
    done = CliRunner().invoke(app, ["diff", str(tree), "--no-cache", "--mixin", str(package), "--unsafe-fixes"])
    added = [line[1:].strip() for line in done.stdout.splitlines() if line.startswith("+") and "=" in line]
    assert added == [
        "pad_token_id = None  # 5.0's PretrainedConfig no longer sets it",
        "top_k = 50  # 5.0's PretrainedConfig no longer sets it",
    ]


def test_the_head_mask_copy_shadows_no_name_the_module_imports() -> None:
    # salesforce-lavis's Qformer imports torch's dtype unused; a parameter of that name would be a new pyflakes
    # message (RedefinedWhileUnused), and the tree commands would then leave the file unfixed
    from codemod.analyse import soundness

    source = "from torch import dtype\n" + HEAD_MASK
    result = migrate(source, FIVE)
    assert [e.code for e in result.edits] == ["TB005"]
    assert soundness.new_problems(source, result.source, "qformer.py") == []
