"""Which classes a change touches: ``session.targets_from_diff`` compares each class's method between
the base revision and the working tree (formatting and comments are no change), reading each file
once per side."""

from __future__ import annotations

from pathlib import Path

from codemod import git
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.verify import session

MODEL = """
from transformers import PreTrainedModel


class {name}(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, past_key_values=None, **kwargs):
        pass

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, "custom": 1}}
"""


def commit_all(root: Path) -> None:
    git.run(root, "add", "-A", isolated=True)
    git.run(root, "commit", "-q", "-m", "base", isolated=True)


def committed(tmp_path: Path, file: str, source: str) -> tuple[Path, ScanResult]:
    """A git tree whose base revision holds ``source`` as ``file``, and the scan of that base."""
    root = tmp_path / "tree"
    root.mkdir()
    git.run(root, "init", "-q", "-b", "main", isolated=True)
    (root / file).write_text(source)
    commit_all(root)
    return root, scan(resolve(root))


def test_only_changed_methods_are_targets_and_files_are_read_once(tmp_path, monkeypatch) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    git.run(root, "init", "-q", "-b", "main", isolated=True)
    for name in ("Changed", "Reformatted", "Untouched", "Removed"):
        (root / f"modeling_{name.lower()}.py").write_text(MODEL.format(name=name + "LM"))
    commit_all(root)
    base = scan(resolve(root))
    (root / "modeling_changed.py").write_text(MODEL.format(name="ChangedLM").replace('"custom": 1', '"custom": 2'))
    (root / "modeling_reformatted.py").write_text(
        MODEL.format(name="ReformattedLM").replace("input_ids[:, -1:]", "input_ids[:, -1 :]  # the last token")
    )
    (root / "modeling_removed.py").unlink()
    shown: list[str] = []
    real_show = git.show

    def counting_show(top: Path, revision: str, path: str) -> bytes | None:
        shown.append(path)
        return real_show(top, revision, path)

    parsed: list[str] = []
    real_methods = session.methods_by_class

    def counting_methods(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        parsed.append(text)
        return real_methods(text)

    monkeypatch.setattr(session.git, "show", counting_show)
    monkeypatch.setattr(session, "methods_by_class", counting_methods)
    targets, not_run = session.targets_from_diff(base, "HEAD")
    assert sorted(t.class_name for t in targets) == ["ChangedLM", "RemovedLM"]
    assert not_run == []
    assert sorted(shown) == sorted(f.override.file for f in base.findings)  # once per file
    assert not [t for t in parsed if "UntouchedLM" in t]  # the same bytes on both sides: not parsed
    assert len(parsed) == 6  # both sides of the three files that changed


OWN_INPUT = """
from transformers import PreTrainedModel


class GuidedLM(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, past_key_values=None, **kwargs):
        pass

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, guidance_scale=None, **kwargs):
        if guidance_scale is not None and guidance_scale > 1:
            input_ids = input_ids.repeat((2, 1))
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values}
"""


def test_a_statement_the_change_kept_about_an_own_input_is_what_the_verdict_needs_given(tmp_path) -> None:
    """A change that keeps the guidance statement and hands the rest to super(): an identical verdict must rest
    on a run that gave ``guidance_scale``. So must one that rewrote that statement, or removed it (the new code
    must do with the input what the old did), and one that added a statement reading another own input."""
    root, base = committed(tmp_path, "modeling_guided.py", OWN_INPUT)
    reduced = OWN_INPUT.replace(
        """        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values}""",
        """        return super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)""",
    )
    assert reduced != OWN_INPUT
    (root / "modeling_guided.py").write_text(reduced)
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == (frozenset({"guidance_scale"}),)
    (root / "modeling_guided.py").write_text(reduced.replace("guidance_scale > 1", "guidance_scale > 1.0"))
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == (frozenset({"guidance_scale"}),)
    guidance = "        if guidance_scale is not None and guidance_scale > 1:\n            input_ids = input_ids.repeat((2, 1))\n"
    assert guidance in reduced
    (root / "modeling_guided.py").write_text(reduced.replace(guidance, ""))
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == (frozenset({"guidance_scale"}),)
    added = reduced.replace(
        "guidance_scale=None, **kwargs):", "guidance_scale=None, speaker=None, **kwargs):"
    ).replace(
        "        return super()",
        "        if speaker is not None:\n            input_ids = input_ids + speaker\n        return super()",
    )
    assert added.count("speaker") == 3
    (root / "modeling_guided.py").write_text(added)
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == (frozenset({"guidance_scale"}), frozenset({"speaker"}))


PASSED_ON = """
from transformers import PreTrainedModel


class MaskedLM(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, past_key_values=None, head_mask=None, **kwargs):
        pass

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, head_mask=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "head_mask": head_mask}
"""


def test_an_input_only_passed_on_under_its_own_name_is_not_needed(tmp_path) -> None:
    """ProphetNet's closed dict passed ``"head_mask": head_mask`` on, as the mixin does; its attention refuses any
    head mask, so no run can give one: a change that removes (or writes) such a pass-through needs nothing of it.
    One that computes from the input does."""
    root, base = committed(tmp_path, "modeling_masked.py", PASSED_ON)
    body = PASSED_ON[PASSED_ON.index("        if past_key_values") :]
    reduced = PASSED_ON.replace(
        body,
        "        return super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, "
        "head_mask=head_mask, **kwargs)\n",
    )
    (root / "modeling_masked.py").write_text(reduced)
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == ()
    set_after = reduced.replace(
        "        return super().prepare_inputs_for_generation(",
        "        model_inputs = super().prepare_inputs_for_generation(",
    )
    set_after += '        model_inputs["head_mask"] = head_mask\n        return model_inputs\n'
    (root / "modeling_masked.py").write_text(set_after)
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == ()
    (root / "modeling_masked.py").write_text(reduced.replace("head_mask=head_mask,", "head_mask=head_mask * 2,"))
    (target,), _ = session.targets_from_diff(base, "HEAD")
    assert target.needs == (frozenset({"head_mask"}),)


TRIMMED = """
from transformers import PreTrainedModel


class TextLM(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, past_key_values=None, image_embeds=None, **kwargs):
        pass

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, image_embeds=None, **kwargs):
        model_inputs = super().prepare_inputs_for_generation(
            input_ids, past_key_values=past_key_values, image_embeds=image_embeds, **kwargs
        )
        if past_key_values is not None:
            model_inputs["image_embeds"] = None
        model_inputs.pop("position_ids", None)
        return model_inputs


class AliasLM(TextLM):
    pass
"""


def test_a_plans_targets_need_what_codemod_verify_would_ask_of_the_written_change(tmp_path) -> None:
    """A hook member trimmed in place (5.23's Kosmos-2.5: its ``position_ids`` pop taken over by the dropped-inputs
    hook, its image handling after ``super()`` left as it was) comes from the plan needing nothing, and passed
    ``apply --verify`` on runs without its images, while ``codemod verify`` on the same written tree asked for them.
    ``with_written_needs`` gives the plan's targets what the written change needs, an inheritor what the change of
    the override it inherits needs; a target whose method the written tree does not change keeps its needs."""
    from codemod.verify.runner import Target

    root, base = committed(tmp_path, "modeling_text.py", TRIMMED)
    trimmed = TRIMMED.replace('        model_inputs.pop("position_ids", None)\n', "")
    assert trimmed != TRIMMED
    (root / "modeling_text.py").write_text(trimmed)
    (written, inheritor), _ = session.targets_from_diff(base, "HEAD")
    assert written.needs == inheritor.needs == (frozenset({"image_embeds"}),)
    assert inheritor.class_name == "AliasLM" and inheritor.inherits_from == written.override_id
    planned = [
        Target(written.override_id, written.module, "TextLM", ""),
        Target("modeling_text.py::AliasLM", written.module, "AliasLM", "", written.override_id),
        Target("modeling_text.py::TextLM", written.module, "TextLM", "", needs=(frozenset({"guidance"}),)),
    ]
    originals = {"modeling_text.py": TRIMMED.encode()}
    member, alias, kept = session.with_written_needs(base, planned, originals)
    assert member.needs == alias.needs == (frozenset({"image_embeds"}),)
    assert kept.needs == (frozenset({"guidance"}), frozenset({"image_embeds"}))
    assert session.with_written_needs(base, planned, {}) == planned  # nothing written: the plan's needs
    (root / "modeling_text.py").write_text(TRIMMED)  # the change undone
    assert session.with_written_needs(base, planned, originals) == planned
