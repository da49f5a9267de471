import json
from importlib import metadata

from sdcompile.core.npu.probe import Probe
from sdcompile.phases.backends.phase import collect_backends


def test_backends_on_this_machine_say_plainly_what_is_missing(cli):
    result = cli("backends", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {b["name"]: b for b in doc["backends"]}
    assert list(rows) == ["default", "aclgraph", "torchair_ge", "npugraph_ex"]
    assert {n: rows[n]["provider"] for n in rows} == {"default": "mindiesd", "aclgraph": "mindiesd",
                                                        "torchair_ge": "outside", "npugraph_ex": "outside"}
    assert doc["device"] == "cpu (emulated npu)"
    assert rows["default"]["available"] == "emulated"
    for name in ("torchair_ge", "npugraph_ex", "aclgraph"):
        assert rows[name]["available"] == "no"
        assert "torch_npu is not installed" in rows[name]["reason"]
    assert rows["torchair_ge"]["mindie_patterns"].startswith("lost")
    torch_version = metadata.version("torch")
    assert doc["versions"]["torch_version"] == torch_version and doc["versions"]["torch_npu_emulated"] is True
    text = cli("backends").stdout
    assert f"torch {torch_version} · torch_npu " in text and "(emulated; behaviours: " in text
    assert "torchair_ge" in text and "not exercised" in text
    assert text.count("outside MindIE-SD: MindIE-SD's fusions are lost") == 2
    from sdcompile.core.npu.emulation.mindiesd_standins import standin_catalog

    files = [s.file for s in standin_catalog()]  # the stand-ins verify's target line names, listed here too
    assert [s["file"] for s in doc["standins"]] == files
    assert all(f in text for f in files) and "cannot run without the NPU stack" in text


def _probes(**ok):
    names = ("torch_npu", "npu_device", "npu_graph", "torchair", "npugraph_ex_backend")
    return {n: Probe(n, ok.get(n, False), f"{n} {'present' if ok.get(n) else 'absent'}") for n in names}


def test_availability_follows_the_probes():
    full = collect_backends(_probes(torch_npu=True, npu_device=True, npu_graph=True, torchair=True,
                                    npugraph_ex_backend=True))
    assert full.device == "npu"
    assert {b.name: b.available for b in full.backends} == dict.fromkeys(
        ("default", "aclgraph", "torchair_ge", "npugraph_ex"), "yes")

    no_torchair = collect_backends(_probes(torch_npu=True, npu_device=True, npu_graph=True))
    rows = {b.name: b for b in no_torchair.backends}
    assert rows["torchair_ge"].available == "no" and rows["torchair_ge"].reason == "torchair absent"
    assert rows["npugraph_ex"].available == "no" and rows["aclgraph"].available == "yes"

    no_device = collect_backends(_probes(torch_npu=True))
    assert no_device.device == "cpu (emulated npu)"
    assert {b.name: b.available for b in no_device.backends}["default"] == "emulated"


def test_aclgraph_modes_come_from_the_trees_compilation_config(mindiesd_tree, tmp_path):
    full = {b.name: b for b in collect_backends(_probes(), repo=mindiesd_tree).backends}
    assert [m.line for m in full["aclgraph"].modes][:2] == ["CompilationConfig.aclgraph_with_compile = True",
                                                            "CompilationConfig.aclgraph_only = True"]
    config = mindiesd_tree / "mindiesd/compilation/compiliation_config.py"
    text = config.read_text()
    config.write_text("\n".join(line for line in text.splitlines() if "aclgraph" not in line) + "\n")
    report = collect_backends(_probes(), repo=mindiesd_tree)
    rows = {b.name: b for b in report.backends}
    assert report.config_from_tree and report.config_source == str(config)
    assert rows["aclgraph"].offered is False and rows["aclgraph"].modes == ()
    assert rows["aclgraph"].missing == ("aclgraph_only", "aclgraph_with_compile")
    assert rows["default"].offered and rows["torchair_ge"].provider == "outside"
