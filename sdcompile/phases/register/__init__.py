"""The `register` phase (phase 3): the three registration edits of a pattern group, transactional and idempotent;
`--undo`; `--check`. Each module has one job:

    phase.py    the public functions: register (and undo) planned, checked and written together; check_registration
    results.py  the frozen result types (RegisterResult, PieceChange, FileChange)
    render.py   the renderer of the edit and its diffs, and of the --check audit
"""
