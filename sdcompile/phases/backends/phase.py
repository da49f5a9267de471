"""`sdcompile backends`: what the target's MindIE-SD offers (MindieSDBackend's default path, its ACLGraph modes as
its CompilationConfig declares them) and torchair's backends outside MindIE-SD, their facts (catalog) and
availability on this machine (probes)."""

from __future__ import annotations

from pathlib import Path

from sdcompile.catalogs import load
from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.emulation.mindiesd_standins import standin_catalog
from sdcompile.core.npu.probe import Probe, probe_all
from sdcompile.core.profiles.advice import CONFIG_CLASS, documented_fields
from sdcompile.core.target.config_fields import ConfigFields, target_config
from sdcompile.core.target.package_import import ENV_REFERENCE_OPS
from sdcompile.phases.backends.results import BackendRow, BackendsReport, ConfigMode, StandinRow


def collect_backends(probes: dict[str, Probe] | None = None, repo: Path | str | None = None) -> BackendsReport:
    probes = probe_all() if probes is None else probes
    config = recommend_config(repo)
    have = set(config.fields)
    rows = []
    for entry in load("backends")["backend"]:
        missing = tuple(f for f in entry["config_fields"] if f not in have)
        modes = tuple(ConfigMode(m["field"], f"{CONFIG_CLASS}.{m['field']} = {m['value']}", m["meaning"])
                      for m in entry.get("mode", ()) if m["field"] in have)
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
                provider=entry["provider"],
                offered=not missing,
                missing=missing,
                modes=modes,
            )
        )
    real = probes["torch_npu"].ok and probes["npu_device"].ok
    note = (
        "Real NPU stack detected: every command runs on the NPU."
        if real
        else "No real NPU stack here: only `default` runs, on CPU under the emulated NPU; "
        "ACLGraph and torchair's backends need torch_npu and a device and were not exercised."
    )

    standins = tuple(StandinRow(s.module, s.file, s.why, s.serves) for s in standin_catalog())
    standins_note = (
        f"Only when the real mindiesd package does not import and {ENV_REFERENCE_OPS}=1 asks for them."
        if real
        else "The default backend runs the target's own code under the emulated NPU, except these files of its "
        "mindiesd package, which cannot run without the NPU stack."
    )
    return BackendsReport("npu" if real else "cpu (emulated npu)", tuple(probes.values()), tuple(rows), note,
                          standins, standins_note, collect_versions(), config.source, config.from_tree,
                          config.problem)


def recommend_config(repo: Path | str | None) -> ConfigFields:
    """The target's CompilationConfig fields, else MindIE-SD 3.1.0's documented ones (the problem said)."""

    found = target_config(repo)
    if found is not None and found.from_tree:
        return found
    documented = documented_fields()
    return ConfigFields(documented.fields, documented.source, False, found.problem if found else "")
