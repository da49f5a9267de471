"""The MindIE-SD source tree sdcompile acts on: discovery, reading, loading, and source edits.

    discovery.py        find the tree (--repo, $SDCOMPILE_REPO, upward from the current folder)
    registry.py         the three registration places read with `ast`; registry_audit.py, ordering.py: register --check
    naming.py           enable_<model>_<op> and the other registration names; edits/ the LibCST edits
    tree_guard.py       one writer per tree, recovery of a half-done edit; source_text.py a source file's text
    package_cache.py    the real MindIE-SD release from the package registry
    loader.py           load_target(): the tree's compilation package imported unmodified, its backend run
                        package_import.py importing the tree's mindiesd (real or stand-ins), pattern_groups.py the
                        groups it holds, compile_session.py one backend run with chosen groups, graph_snapshots.py
                        and pattern_exprs.py what a run records, failures.py how a failure in the tree reads,
                        pass_log.py the "PatternMatchPass replace N patterns." line (live log and saved logs)
"""
