"""Show what the Makefile runs, read from the Makefile itself, so the setup page cannot fall out of date.

    ```{makefile-steps}
    ```
lists the steps of ``make test`` in order: for each sub-make of the ``test`` rule, its name, the comment
written above its rule (or above the variable its recipe uses), and its commands with the Makefile's
variables expanded.

    ```{makefile-recipe} $(STAMP)
    ```
shows the commands of one rule (here the install), expanded the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$")
_RULE = re.compile(r"^([^\s:#=][^:=]*?)\s*:(?!=)(.*)$")
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class Makefile:
    """The parts of a GNU Makefile the setup page needs: variables, rules, their recipes and comments."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.variables: dict[str, tuple[str, int]] = {}
        self.rules: dict[str, tuple[list[str], int]] = {}
        current = None
        for number, line in enumerate(self.lines):
            if line.startswith("\t") and current is not None:
                self.rules[current][0].append(line.strip())
                continue
            current = None
            if line.startswith("#") or not line.strip():
                continue
            if (assign := _ASSIGN.match(line)) and not line.startswith("."):
                self.variables[assign.group(1)] = (assign.group(2).strip(), number)
            elif (rule := _RULE.match(line)) and not rule.group(1).startswith("."):
                for target in rule.group(1).split():
                    self.rules[target] = ([], number)
                current = rule.group(1).split()[0]

    def expand(self, text: str, depth: int = 0) -> str:
        if depth > 10:
            raise ValueError(f"Makefile variables nest too deeply in {text!r}")
        def one(match):
            name = match.group(1)
            if name == "MAKE":
                return "make"
            if name not in self.variables:
                return match.group(0)
            return self.expand(self.variables[name][0], depth + 1)
        return _VAR.sub(one, text).replace("$$", "$")

    def comment_above(self, number: int) -> str:
        block = []
        for line in reversed(self.lines[:number]):
            if not line.startswith("#"):
                break
            block.append(line.lstrip("#").strip())
        return " ".join(reversed(block))

    def recipe(self, target: str) -> list[str]:
        key = self.expand(target)
        matches = [t for t in self.rules if self.expand(t) == key]
        if not matches:
            raise ValueError(f"the Makefile has no rule for {target!r}")
        lines = [re.sub(r"\$\(wildcard ([^)]*)\)", r"\1", line.lstrip("@")) for line in self.rules[matches[0]][0]]
        return [self.expand(line.replace("$@", key)) for line in lines]

    def describe(self, target: str) -> str:
        commands, number = self.rules[target]
        text = self.comment_above(number)
        if not text:   # the comment may sit above the variable the recipe uses (NBVAL, say)
            for name in _VAR.findall(" ".join(commands)):
                if name in self.variables and (text := self.comment_above(self.variables[name][1])):
                    break
        return text

    def test_steps(self) -> list[str]:
        steps = []
        for line in self.rules.get("test", ([], 0))[0]:
            match = re.match(r"(?:\$\(TIMED\)\s+)?\$\(MAKE\)(?:\s+--?\S+)*\s+(\S+)$", line)
            if match:
                steps.append(match.group(1))
        if not steps:
            raise ValueError("the Makefile's test rule calls no sub-make")
        return steps


def _makefile(directive: SphinxDirective) -> Makefile:
    path = Path(directive.env.srcdir) / "Makefile"
    directive.env.note_dependency(str(path))
    return Makefile(path.read_text(encoding="utf-8"))


def _code(lines: list[str]) -> nodes.literal_block:
    text = "\n".join(lines)
    block = nodes.literal_block(text, text)
    block["language"] = "bash"
    return block


class MakefileSteps(SphinxDirective):
    has_content = False

    def run(self):
        makefile = _makefile(self)
        listing = nodes.enumerated_list()
        for step in makefile.test_steps():
            item = nodes.list_item()
            para = nodes.paragraph()
            para += nodes.literal(f"make {step}", f"make {step}")
            description = makefile.describe(step)
            if description:
                para += nodes.Text(f": {description}")
            item += para
            item += _code(makefile.recipe(step))
            listing += item
        return [listing]


class MakefileRecipe(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        return [_code(_makefile(self).recipe(self.arguments[0]))]


def setup(app):
    app.add_directive("makefile-steps", MakefileSteps)
    app.add_directive("makefile-recipe", MakefileRecipe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
