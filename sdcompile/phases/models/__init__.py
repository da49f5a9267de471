"""`sdcompile models`: the zoo and every diffusers transformer class `--model` takes, and whether each builds."""
