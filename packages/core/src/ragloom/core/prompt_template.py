"""PromptTemplate: a prompt text with named variables, checked before it is sent.

Templates use ``str.format`` syntax restricted to plain names: ``{user_message}`` is a
variable, ``{{`` and ``}}`` are literal braces. Values are inserted as text and never
re-read as template syntax, so retrieved content with braces is safe. A template that is
malformed, lacks a variable a component needs, or is rendered without a value raises
:class:`~ragloom.core.errors.PromptTemplateError` naming the variable.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from ragloom.core.errors import InvalidArgumentTypeError, PromptTemplateError

__all__ = [
    "PromptTemplate",
]

_FORMATTER = string.Formatter()


class PromptTemplate:
    """A template such as ``"{user_message}\\n\\n{contents}"`` (the spec's ``PromptTemplate``)."""

    __slots__ = ("template", "variables")

    template: str
    variables: frozenset[str]

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise InvalidArgumentTypeError(
                f"prompt template must be str, got {type(template).__name__}"
            )
        try:
            fields = list(_FORMATTER.parse(template))
        except ValueError as exc:
            raise PromptTemplateError(
                f"malformed prompt template ({exc}); write literal braces as {{{{ and }}}}"
            ) from exc
        variables: set[str] = set()
        for _, name, spec, conversion in fields:
            if name is None:
                continue
            if not name.isidentifier() or spec or conversion:
                field = "{" + name + ("!" + conversion if conversion else "")
                field += (":" + spec if spec else "") + "}"
                raise PromptTemplateError(
                    f"prompt template field {field} is not a plain variable name; "
                    "use {name} (or {{ and }} for literal braces)"
                )
            variables.add(name)
        self.template = template
        self.variables = frozenset(variables)

    @classmethod
    def of(cls, template: str | PromptTemplate) -> PromptTemplate:
        """``template`` itself, or a template parsed from a string."""
        return template if isinstance(template, PromptTemplate) else cls(template)

    def require(self, names: Iterable[str], *, used_by: str) -> PromptTemplate:
        """This template, after checking it contains every variable in ``names``."""
        missing = sorted(set(names) - self.variables)
        if missing:
            wanted = ", ".join("{" + name + "}" for name in missing)
            raise PromptTemplateError(
                f"the prompt template of {used_by} must contain {wanted}; "
                f"it has {sorted(self.variables) or 'no variables'} "
                "(ragloom templates use single braces: {name})"
            )
        return self

    def render(self, **values: object) -> str:
        """The text with every variable replaced by ``str(value)``; extra values are ignored."""
        missing = sorted(self.variables - values.keys())
        if missing:
            raise PromptTemplateError(
                f"no value for prompt template variable(s) {', '.join(missing)}; "
                f"given: {', '.join(sorted(values)) or 'none'}"
            )
        return self.template.format_map({name: str(values[name]) for name in self.variables})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PromptTemplate):
            return NotImplemented
        return self.template == other.template

    def __hash__(self) -> int:
        return hash(self.template)

    def __repr__(self) -> str:
        return f"PromptTemplate({self.template!r})"
