"""The line MindIE-SD's PatternMatchPass logs at DEBUG level once per compiled graph
(`logger.debug("PatternMatchPass replace %d patterns.", matched_cnt)` in mindiesd/compilation/passes/
pattern_match_pass.py): read from a live session's log records and from a saved compile log alike."""

import re

# "patterns?": the singular is accepted too, should a release ever word it so
REPLACE_LINE = re.compile(r"PatternMatchPass replace (\d+) patterns?\.")
