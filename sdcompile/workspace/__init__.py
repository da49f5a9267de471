"""The workspace (.sdcompile/): per model/op artifacts and the lifecycle state each phase records.

    store.py       the layout, state.json and Workspace (record a phase, read a pair's state)
    artifacts.py   every JSON artifact's schema_version and the fields readers use: write_artifact / read_artifact
    phases.py      the seven phases and the verdicts a record may hold
    locks.py       one command at a time per pair (`run`, `profile --out` into a pair): a lock naming its holder
"""
