"""The "Examples:" block of each command's help: real invocations, run from a folder holding the MindIE-SD tree
`sdcompile fetch-target ./MindIE-SD` copies (tests/test_cli_conventions.py parses every one with the CLI's own
options). Kept to 80 columns; the paths of integrate and copy-audit are what two `profile` examples write."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "analyze": ("sdcompile analyze --model flux --op rmsnorm",
                "sdcompile analyze --model wan --size real --num-layers 1",
                "sdcompile analyze --model-capture flux.sdcap --num-layers 1"),
    "scaffold": ("sdcompile scaffold --model flux --op rmsnorm --repo ./MindIE-SD",
                 "sdcompile scaffold --model flux --op rmsnorm --repo ./MindIE-SD --dry-run"),
    "register": ("sdcompile register --model flux --op rmsnorm --repo ./MindIE-SD",
                 "sdcompile register --check --repo ./MindIE-SD"),
    "verify": ("sdcompile verify --model flux --op rmsnorm --repo ./MindIE-SD",
               "sdcompile verify --model flux --all-groups --repo ./MindIE-SD"),
    "debug": ("sdcompile debug --model flux --op rmsnorm --repo ./MindIE-SD",
              "sdcompile debug --model flux --op rmsnorm --stage after-freezing \\\n"
              "    --repo ./MindIE-SD"),
    "integrate": ("sdcompile integrate profiles/eager profiles/compile --op rmsnorm",),
    "benefit": ("sdcompile benefit --model flux --op rope --repo ./MindIE-SD",
                "sdcompile benefit profiles/off profiles/on --op rope --max-regression 3"),
    "copy-audit": ("sdcompile copy-audit profiles/eager profiles/compile --attn 2d",
                   "sdcompile copy-audit profiles/eager profiles/compile --max-inflation 2"),
    "run": ("sdcompile run --model flux --op rmsnorm",
            "sdcompile run --model wan --op rmsnorm --restart"),
    "matrix": ("sdcompile matrix --models flux,wan --ops rmsnorm,rope --jobs 2 \\\n"
               "    --markdown coverage.md",
               "sdcompile matrix --shard 1/4 --save shard-1.json",
               "sdcompile matrix merge shard-*.json --compare coverage.json"),
    "profile": ("sdcompile profile --model flux --mode eager --out profiles/eager",
                "sdcompile profile --model flux --mode compile --out profiles/compile \\\n"
                "    --repo ./MindIE-SD"),
    "status": ("sdcompile status", "sdcompile status --json"),
    "backends": ("sdcompile backends", "sdcompile backends --json"),
    "doctor": ("sdcompile doctor", "sdcompile doctor --repo ./MindIE-SD --json"),
    "fetch-target": ("sdcompile fetch-target ./MindIE-SD",),
    "models": ("sdcompile models", "sdcompile models CogView4Transformer2DModel flux --check",
               "sdcompile models --check --size real"),
    "new-model": ("sdcompile new-model CogView4Transformer2DModel --out cogview4.py",
                  "sdcompile new-model Flux3Transformer2DModel --dry-run"),
    "capture": ("sdcompile capture --out flux.sdcap -- python infer.py",
                "sdcompile capture --out wan.sdcap --calls 2 -- python run_wan.py"),
    "explain": ("sdcompile explain", "sdcompile explain mismatch 3", "sdcompile explain copy-elimination"),
}

NO_REWRAP = "\b"  # click keeps the lines of a paragraph that starts with this line as written


def with_examples(name: str, doc: str) -> str:
    """`doc` (a command's docstring, dedented) followed by its Examples block."""
    lines = [f"  {line}" for example in EXAMPLES[name] for line in example.splitlines()]
    return f"{doc.rstrip()}\n\nExamples:\n\n{NO_REWRAP}\n" + "\n".join(lines)
