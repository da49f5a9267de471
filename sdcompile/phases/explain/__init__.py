"""The `explain` phase: phase.py (the public function), its result types, render.py (its renderer) and its parts."""
