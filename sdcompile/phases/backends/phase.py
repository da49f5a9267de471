"""`sdcompile backends`: the four backends, their facts (catalog) and availability on this machine (probes)."""

from __future__ import annotations

from sdcompile.catalogs import load
from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.probe import Probe, probe_all
from sdcompile.phases.backends.results import BackendRow, BackendsReport, StandinRow


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
