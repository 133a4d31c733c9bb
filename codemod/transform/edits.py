"""The plan's data: the edits a migration makes, the shards of edits that must change together, and the plan."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable

from codemod.analyse.analysis import Nested
from codemod.analyse.classify import Action
from codemod.contracts import (
    Held,
    Vocabulary,
)


class EditKind(Vocabulary):
    DELETE = "delete"  # remove the method, with its comments and marker
    REDUCE = "reduce"  # same signature; the body calls super() and keeps the model-specific keys
    REMOVE = "remove"  # modular source: the converter's removal stub (raise AttributeError)
    MARK = "mark"  # add "# Overwritten -- <text>"
    DROP_MARKER = "drop-marker"  # remove the method's "# Copied from" (its source changes differently)
    IGNORE_COPY = "ignore-copy"  # add "# Ignore copy" (a class-level copy no longer covers the method)
    HOIST = "hoist"  # install the generic implementation in the stub mixin
    ADD_MIXIN_BASE = "add-mixin-base"  # GenerationMixin among the bases, so can_generate() stays true
    SWAP_DELEGATE = "swap-delegate"  # ask super() where the override asked a sub-model; keep the rest
    HOOK = "hook"  # a mined hook in the mixin: its class attribute and the code that reads it (``Edit.hook``)
    SET_ATTRIBUTE = "set-attribute"  # a class attribute on the model class (``text``: the assignment)
    TRIM = "trim"  # remove the method's top-level statements at ``Edit.remove`` (a hook does what they did)
    #: a method next to the override (``text``: it, ending in its ``return``), with the override's top-level
    #: statements at ``Edit.keep`` moved in front of that ``return`` (a hook asks the model's own condition)
    ADD_METHOD = "add-method"


@dataclasses.dataclass(frozen=True)
class HookCode:
    """What a mined hook (``codemod.transform.hooks``) adds to the mixin: a class attribute that model classes set,
    and the statements of ``prepare_inputs_for_generation`` that read it, at its start (``prologue``) and
    right before its final ``return model_inputs`` (``epilogue``); each 4-space indented at level 0."""

    attribute: str
    declaration: str
    prologue: str = ""
    epilogue: str = ""


@dataclasses.dataclass(frozen=True)
class Edit:
    file: str
    class_name: str
    kind: EditKind
    override_id: str | None
    reason: str
    #: REDUCE/REMOVE/HOIST: the new body (or method, for HOIST), 4-space indented; MARK: the reason; TRIM: the new
    #: reason of an ``# Overwritten --`` mark this tool wrote (empty: the mark stays as it is)
    text: str = ""
    #: REDUCE: indices of the original body's statements to keep, in front of the new body; ADD_METHOD: to move
    keep: tuple[int, ...] = ()
    #: REDUCE/TRIM: the parameters the method still names (others reach super() through **kwargs);
    #: empty to keep the signature as it is
    keep_params: tuple[str, ...] = ()
    #: HOOK: the attribute and code to add to the mixin
    hook: HookCode | None = None
    #: TRIM: indices of the original body's statements to remove
    remove: tuple[int, ...] = ()
    #: REDUCE: indices of the original body's statements to keep right after the new body's first statement
    #: (the super() call): what they compute replaces what the fallback prepared
    keep_after: tuple[int, ...] = ()
    #: REDUCE/TRIM/SWAP_DELEGATE: a body that ends in ``model_inputs = super().<method>(...)`` and ``return
    #: model_inputs`` returns the call itself, as a person writes it (not in a modular family: the converter inlines
    #: a modular source's top-level ``return super()`` call, and regenerates the files made from it)
    direct_return: bool = False
    #: REDUCE: runs of statements inside the kept statements to leave out of them (the fallback does what they did)
    cuts: tuple[Nested, ...] = ()
    #: the override whose shard holds the edit, where that is not ``override_id``'s: a loose copy's marker (see
    #: ``CopyLink.follows``) goes with the change of the override check_copies compares it with
    shard: str | None = None
    #: REDUCE/TRIM: where the method ends as nothing but a ``super()`` call kept for its signature, the class names the
    #: mixin's method with that signature instead (``codemod.transform.alias``); ADD_MIXIN_BASE: only where it does
    alias: bool = False


@dataclasses.dataclass(frozen=True)
class Trim:
    """What a mined hook (``codemod.transform.hooks``) takes out of an override that calls super() already."""

    #: indices of the body's top-level statements to remove (see Edit.remove)
    remove: tuple[int, ...]
    #: parameters that leave the signature: only the removed statements read them, and the method withheld them
    #: from super(); through **kwargs they now reach the mixin, whose hook sets the input from them (Fuyu's
    #: ``image_patches``)
    unnamed: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Shard:
    """Edits that only make sense together (a copy group, a modular family, or one override)."""

    id: str
    kind: str  # "override", "copy-group" or "modular"
    members: tuple[str, ...]  # override ids
    edits: tuple[Edit, ...]
    #: the member the others follow (the source of the copies, the modular parent); its own id alone
    source: str = ""


@dataclasses.dataclass(frozen=True)
class Plan:
    shards: tuple[Shard, ...]
    hoist: Edit | None
    #: overrides whose finding asked for a change that the plan holds back, with the cause
    held: tuple[Held, ...]
    #: the action each selected override ends with
    actions: tuple[tuple[str, Action], ...]
    notes: tuple[str, ...] = ()

    def edits(self) -> list[Edit]:
        out = [self.hoist] if self.hoist else []
        return out + [e for s in self.shards for e in s.edits]

    def by_file(self) -> dict[str, list[Edit]]:
        files: dict[str, list[Edit]] = {}
        for edit in self.edits():
            files.setdefault(edit.file, []).append(edit)
        return files

    def action_of(self, override_id: str) -> Action | None:
        return dict(self.actions).get(override_id)

    def without(self, dropped: Iterable[Held], detail: str | None = None) -> Plan:
        """The same plan minus the shards ``dropped`` holds back (their overrides kept, each with its shard's
        cause, and ``detail`` or else the shard's own)."""
        by_shard = {h.subject: h for h in dropped}
        members = {m: by_shard[s.id] for s in self.shards if s.id in by_shard for m in s.members}
        shards = tuple(s for s in self.shards if s.id not in by_shard)
        actions = tuple((i, Action.KEEP if i in members else a) for i, a in self.actions)
        held = self.held + tuple(
            Held(m, h.cause, h.detail if detail is None else detail)
            for m, h in sorted(members.items())
            if self.action_of(m) is not Action.KEEP
        )
        hoist = self.hoist if any(a is not Action.KEEP for _, a in actions) else None
        return dataclasses.replace(self, shards=shards, actions=actions, held=held, hoist=hoist)

    def digest(self) -> str:
        payload = [(e.file, e.class_name, e.kind.value, e.text, *(["alias"] if e.alias else [])) for e in self.edits()]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]
