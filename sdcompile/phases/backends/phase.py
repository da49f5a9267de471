"""`sdcompile backends`: the four backends, their facts (catalog) and availability on this machine (probes)."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.catalogs import load
from sdcompile.core.environment import Versions, collect_versions
from sdcompile.core.npu.probe import Probe, probe_all


@dataclass(frozen=True)
class BackendRow:
    name: str
    title: str
    entry_point: str
    aot_functionalization: str
    mindie_patterns: str
    capture: str
    copy_behaviour: str
    available: str  # "yes", "emulated" (runs on CPU under sdcompile's emulated NPU) or "no"
    reason: str


@dataclass(frozen=True)
class StandinRow:
    """A file of the target's mindiesd package that sdcompile stands in for (catalogs/mindiesd_standins.toml)."""

    module: str
    file: str
    why: str
    serves: str


@dataclass(frozen=True)
class BackendsReport:
    device: str  # what this machine offers: "npu" or "cpu (emulated npu)"
    probes: tuple[Probe, ...]
    backends: tuple[BackendRow, ...]
    note: str
    standins: tuple[StandinRow, ...]  # what the default backend runs instead of the target's NPU-only files
    standins_note: str  # when they are used
    versions: Versions | None = None  # torch, torch_npu (real or emulated, with its behaviours), diffusers


def collect_backends(probes: dict[str, Probe] | None = None) -> BackendsReport:
    probes = probe_all() if probes is None else probes
    rows = []
    for entry in load("backends")["backend"]:
        failing = [probes[name] for name in entry["requires"] if not probes[name].ok]
        if not failing:
            available, reason = "yes", "all probes pass: " + "; ".join(probes[n].detail for n in entry["requires"])
        elif entry.get("emulated"):
            available = "emulated"
            reason = (
                f"{failing[0].detail}: runs on CPU under sdcompile's emulated NPU "
                "(numerics and graphs, no NPU timing)"
            )
        else:
            available, reason = "no", failing[0].detail
        rows.append(
            BackendRow(
                name=entry["name"],
                title=entry["title"],
                entry_point=entry["entry_point"],
                aot_functionalization=entry["aot_functionalization"],
                mindie_patterns=entry["mindie_patterns"],
                capture=entry["capture"],
                copy_behaviour=entry["copy_behaviour"],
                available=available,
                reason=reason,
            )
        )
    real = probes["torch_npu"].ok and probes["npu_device"].ok
    note = (
        "Real NPU stack detected: every command runs on the NPU."
        if real
        else "No real NPU stack here: only `default` runs, on CPU under the emulated NPU; "
        "the other three backends need torch_npu and a device and were not exercised."
    )
    from sdcompile.core.npu.emulation.mindiesd_standins import standin_catalog
    from sdcompile.core.target.package_import import ENV_REFERENCE_OPS

    standins = tuple(StandinRow(s.module, s.file, s.why, s.serves) for s in standin_catalog())
    standins_note = (
        f"Only when the real mindiesd package does not import and {ENV_REFERENCE_OPS}=1 asks for them."
        if real
        else "The default backend runs the target's own code under the emulated NPU, except these files of its "
        "mindiesd package, which cannot run without the NPU stack."
    )
    return BackendsReport("npu" if real else "cpu (emulated npu)", tuple(probes.values()), tuple(rows), note,
                          standins, standins_note, collect_versions())
