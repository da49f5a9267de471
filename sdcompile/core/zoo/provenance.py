"""Tensor provenance in a recorded forward, followed by identity: chunk/split/unbind pieces, view-like ops that
pass a value through, and the `x * (1 + scale) + shift` a modulation is, with its scale and shift traced back to
the pieces (`chunk(6)[1]`, `chunk(6)[0]`) they came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from sdcompile.core.zoo.runtrace import FrameInfo

_PIECE_OPS = {"chunk", "split", "unbind", "tensorsplit", "splitwithsizes"}
_PASSTHROUGH_OPS = {
    "getitem", "unsqueeze", "squeeze", "view", "reshape", "to", "float", "half", "bfloat16", "typeas", "expand",
    "contiguous", "flatten", "unflatten", "permute", "transpose", "clone", "select", "type", "expandas",
}
_NORM_OPS = ("layernorm", "rmsnorm", "groupnorm", "npurmsnorm")


def _normalised(x_from: str) -> bool:
    """Whether what produced x (a norm op, or a module's class name) normalises: LayerNorm, RMSNorm, GroupNorm,
    npu_rms_norm, AdaLayerNormZero, FP32LayerNorm ..."""
    return "norm" in x_from.lower()


@dataclass(frozen=True)
class Piece:
    """One output of a chunk/split/unbind call."""

    op: str  # "chunk"
    index: int
    count: int
    source: str  # what was split: "output of transformer_blocks.0.norm1.linear (Linear)", "scale_shift_table + ..."
    call: int  # index of the splitting call


@dataclass(frozen=True)
class ModulationEvent:
    frame: FrameInfo
    site: str
    lines: tuple[int, ...]  # the lines of the `1 + scale`, the multiply and the add
    scale: Piece | None
    shift: Piece | None
    normalized_by: str | None  # what produced x: "LayerNorm", "FP32LayerNorm", "layer_norm", ...
    with_shift: bool = True  # False: x * (1 + scale) with no shift added

    def form(self) -> str:
        def name(p: Piece | None, fallback: str) -> str:
            return f"{p.op}({p.count})[{p.index}]" if p else fallback

        base = f"x * (1 + {name(self.scale, 'scale')})"
        if self.with_shift:
            base += f" + {name(self.shift, 'shift')}"
        if self.normalized_by:
            base = base.replace("x *", f"{self.normalized_by}(x) *", 1)
        return base

    def order(self) -> str | None:
        """"shift, scale" or "scale, shift": which the split hands out first (None when not both split)."""
        if self.scale is None or self.shift is None or self.scale.call != self.shift.call:
            return None
        return "shift, scale" if self.shift.index < self.scale.index else "scale, shift"


@dataclass
class Prov:
    kind: str  # "piece" | "one_plus" | "scaled" | "module_out" | "param_mix"
    piece: Piece | None = None
    scale: Piece | None = None
    x_from: str | None = None
    line: int = 0
    lines: tuple[int, ...] = ()
    text: str = ""
    event: int | None = None  # index of the modulation event a "scaled" value started


class Call(NamedTuple):
    """One recorded torch call, as the provenance rules read it."""

    op: str  # normalised op name
    raw: str
    args: tuple
    result: Any
    flat: list  # the tensors it was passed (positional, inside lists, keyword)
    info: FrameInfo
    site: str
    line: int
    index: int  # its index among the run's calls


class Provenance:
    """What each tensor of the run is (by id), and the modulations found on the way."""

    def __init__(self, tensor_type: type):
        self.tensor_type = tensor_type  # torch.Tensor
        self.prov: dict[int, Prov] = {}
        self.keep_alive: list[Any] = []  # provenance is keyed by id(): the tensors must outlive the run
        self.modulations: list[ModulationEvent] = []

    def tag(self, tensor, prov: Prov) -> None:
        self.prov[id(tensor)] = prov
        self.keep_alive.append(tensor)

    def follow(self, call: Call) -> None:
        """Tag the call's result by the first rule that applies (the order matters: an add of 1 is `1 + scale`
        before it is anything else)."""
        if call.op in _PIECE_OPS and call.flat and isinstance(call.result, (tuple, list)):
            self._pieces(call)
            return
        if not isinstance(call.result, self.tensor_type):
            return
        rules = (self._indexed, self._passthrough, self._one_plus, self._plus_shift, self._times_one_plus,
                 self._norm_output, self._table_mix)
        for rule in rules:
            if rule(call):
                return

    # -- the rules: each returns whether the call is settled
    def _pieces(self, call: Call) -> None:
        source = self.prov.get(id(call.flat[0]))
        text = source.text if source and source.text else "a computed tensor"
        pieces = [r for r in call.result if isinstance(r, self.tensor_type)]
        for i, piece in enumerate(pieces):
            self.tag(piece, Prov("piece", piece=Piece(call.op, i, len(pieces), text, call.index)))

    def _indexed(self, call: Call) -> bool:
        args = call.args
        if not (call.op == "getitem" and len(args) == 2 and isinstance(args[0], self.tensor_type)):
            return False
        piece = self._indexed_piece(args[0], args[1], call.index)
        if piece is None:
            return False
        self.tag(call.result, Prov("piece", piece=piece))
        return True

    def _passthrough(self, call: Call) -> bool:
        if not (call.op in _PASSTHROUGH_OPS and call.args and isinstance(call.args[0], self.tensor_type)):
            return False
        inherited = self.prov.get(id(call.args[0]))
        if inherited is not None:
            self.tag(call.result, inherited)
        return True

    def _one_plus(self, call: Call) -> bool:
        if call.op != "add" or len(call.flat) != 1:
            return False
        numbers = [a for a in call.args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        if numbers != [1]:
            return False
        src = self.prov.get(id(call.flat[0]))
        self.tag(call.result, Prov("one_plus", scale=src.piece if src is not None else None, line=call.line))
        return True

    def _plus_shift(self, call: Call) -> bool:
        """`x * (1 + scale) + shift`: a modulation, complete."""
        if not (call.op == "add" and len(call.flat) == 2):
            return False
        flat = call.flat
        for scaled, other in ((flat[0], flat[1]), (flat[1], flat[0])):
            p = self.prov.get(id(scaled))
            if p is not None and p.kind == "scaled":
                if p.x_from is not None and not _normalised(p.x_from):
                    # `x * (1 + scale) + shift` on what a module other than a norm produced (a projection's
                    # output): no fused AdaLN computes it, so it is not a site
                    return True
                shift = self.prov.get(id(other))
                self._modulation(call.info, call.site, p, shift.piece if shift and shift.kind == "piece" else None,
                                 call.line, with_shift=True)
                return True
        return False

    def _times_one_plus(self, call: Call) -> bool:
        if not (call.op == "mul" and len(call.flat) == 2):
            return False
        flat = call.flat
        for one_plus, x in ((flat[0], flat[1]), (flat[1], flat[0])):
            p = self.prov.get(id(one_plus))
            if p is not None and p.kind == "one_plus":
                xp = self.prov.get(id(x))
                scaled = Prov("scaled", scale=p.scale, x_from=xp.x_from if xp else None, lines=(p.line, call.line))
                if scaled.x_from and _normalised(scaled.x_from):
                    # a normalised input times (1 + scale) is AdaLN even when no shift follows (Z-Image)
                    scaled.event = self._modulation(call.info, call.site, scaled, None, call.line, with_shift=False)
                self.tag(call.result, scaled)
                return True
        return False

    def _norm_output(self, call: Call) -> bool:
        if call.op not in _NORM_OPS:
            return False
        self.tag(call.result, Prov("module_out", x_from=call.raw, text=f"{call.raw} output"))
        return True

    def _table_mix(self, call: Call) -> bool:
        """e.g. (scale_shift_table[None] + temb): the modulation table mixed with the conditioning"""
        if call.op != "add":
            return False
        tables = [p.text for p in (self.prov.get(id(t)) for t in call.flat) if p is not None and p.kind == "param"]
        if tables:
            self.tag(call.result, Prov("param_mix", text=f"{' + '.join(tables)} + the conditioning"))
        return True

    def _indexed_piece(self, tensor, key, call: int) -> Piece | None:
        """`t[:, :, 0]` of a split-like tensor (a modulation table mixed with the conditioning, a module
        output): the piece `index(n)[0]` along that dimension."""
        source = self.prov.get(id(tensor))
        if source is None or source.kind not in ("param_mix", "module_out"):
            return None
        parts = key if isinstance(key, tuple) else (key,)
        if any(p is Ellipsis or p is None for p in parts):
            return None
        ints = [(dim, p) for dim, p in enumerate(parts) if isinstance(p, int) and not isinstance(p, bool)]
        if len(ints) != 1 or not all(isinstance(p, (int, slice)) for p in parts):
            return None
        dim, index = ints[0]
        count = tensor.shape[dim]
        return Piece("index", index % count, count, source.text, -1 - dim)

    def _modulation(self, info, site, scaled: Prov, shift: Piece | None, line: int, with_shift: bool) -> int:
        lines = tuple(sorted(set(scaled.lines + (line,))))
        event = ModulationEvent(info, site, lines, scaled.scale, shift, scaled.x_from, with_shift)
        if with_shift and scaled.event is not None:  # the scale-only event recorded at the multiply, completed
            self.modulations[scaled.event] = event
            return scaled.event
        self.modulations.append(event)
        return len(self.modulations) - 1
