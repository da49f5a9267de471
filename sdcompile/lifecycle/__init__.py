"""`sdcompile run`: the seven phases as one resumable pipeline (pipeline), its steps (steps), resume state (state),
printed next commands (commands), result (results) and renderer (render).
"""
