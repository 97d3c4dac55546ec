"""Tools a chat model may call: their specifications and the model's requests to run them.

A :class:`ToolSpecification` tells the model a tool's name, what it does and the JSON
schema of its arguments; the model answers with :class:`ToolExecutionRequest` s (the
spec's names, as in LangChain4j). The arguments a model writes are untrusted text:
:meth:`ToolSpecification.parse_arguments` parses them with bounded size and checks them
against the schema before anything runs.

Only the JSON-schema keywords that are checked may appear in a schema (``type``,
``properties``, ``required``, ``additionalProperties``, ``enum``, ``minLength``,
``maxLength``, ``minimum``, ``maximum``, ``items``, ``minItems``, ``maxItems``,
``description``), so a schema never promises the model a rule that is not enforced.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "DEFAULT_MAX_ARGUMENT_CHARS",
    "ToolExecutionRequest",
    "ToolSpecification",
]

DEFAULT_MAX_ARGUMENT_CHARS = 16_000
"""Longest arguments text :meth:`ToolSpecification.parse_arguments` parses by default."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI's API accepts as a function name
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "items",
        "minItems",
        "maxItems",
        "description",
        "title",
    }
)
_TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array", "null"})


@dataclass(frozen=True, slots=True)
class ToolExecutionRequest:
    """The model's request to run tool ``name`` with ``arguments`` (JSON text, unchecked).

    ``id`` pairs the request with its
    :class:`~ragloom.core.chat.messages.ToolExecutionResultMessage`.
    """

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        for attribute in ("id", "name", "arguments"):
            value = getattr(self, attribute)
            if not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"ToolExecutionRequest {attribute} must be str, got {type(value).__name__}"
                )

    def to_dict(self) -> dict[str, str]:
        """``{"id": ..., "name": ..., "arguments": ...}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ToolSpecification:
    """A tool the model may call: ``name``, ``description`` and ``parameters`` (a JSON
    schema of type object; only the keywords listed in the module documentation)."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InvalidArgumentError(
                f"tool name must be 1-64 letters, digits, '_' or '-', got {self.name!r}"
            )
        if not isinstance(self.description, str):
            raise InvalidArgumentTypeError(
                f"tool {self.name!r} description must be str, got {type(self.description).__name__}"
            )
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise InvalidArgumentError(
                f"tool {self.name!r} parameters must be a JSON schema of type object, got "
                f"{self.parameters!r}"
            )
        _check_schema(self.parameters, f"tool {self.name!r} parameters")

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "description": ..., "parameters": ...}`` (a JSON-ready copy)."""
        parameters: dict[str, Any] = json.loads(json.dumps(self.parameters))
        return {"name": self.name, "description": self.description, "parameters": parameters}

    def parse_arguments(
        self, arguments: str, *, max_chars: int = DEFAULT_MAX_ARGUMENT_CHARS
    ) -> dict[str, Any]:
        """The model-written ``arguments`` as a dict, once they fit the schema.

        Raises :class:`~ragloom.core.errors.InvalidArgumentError` naming the field at
        fault: text over ``max_chars``, not JSON (or ``NaN``, duplicate keys, nesting too
        deep), wrong types, missing required or unknown fields, strings or arrays out of
        their length bounds, numbers out of range, values outside ``enum``.
        """
        if not isinstance(arguments, str):
            raise InvalidArgumentTypeError(
                f"tool {self.name!r} arguments must be str, got {type(arguments).__name__}"
            )
        if len(arguments) > max_chars:
            raise InvalidArgumentError(
                f"tool {self.name!r} arguments are {len(arguments)} characters, over the "
                f"limit of {max_chars}"
            )
        try:
            value = json.loads(
                arguments or "{}", parse_constant=_no_constant, object_pairs_hook=_unique_keys
            )
        except (ValueError, RecursionError) as exc:
            raise InvalidArgumentError(
                f"tool {self.name!r} arguments are not valid JSON ({exc}): {_clip(arguments)!r}"
            ) from exc
        _validate(value, self.parameters, "arguments", self.name)
        result: dict[str, Any] = value
        return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _check_schema(schema: Mapping[str, Any], where: str) -> None:
    """Refuse schemas with keywords that :func:`_validate` would not enforce."""
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise InvalidArgumentError(
            f"{where} uses unsupported JSON-schema keyword(s) {', '.join(sorted(unknown))}; "
            f"supported: {', '.join(sorted(_KEYWORDS))}"
        )
    types = schema.get("type")
    names = types if isinstance(types, list) else [types]
    if types is None or not all(isinstance(t, str) and t in _TYPES for t in names):
        raise InvalidArgumentError(
            f"{where} type must be one of {', '.join(sorted(_TYPES))} (or a list), got {types!r}"
        )
    for keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        bound = schema.get(keyword)
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise InvalidArgumentError(f"{where} {keyword} must be an int, got {bound!r}")
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise InvalidArgumentError(f"{where} properties must be a mapping, got {properties!r}")
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            raise InvalidArgumentError(f"{where} property {name!r} must be a schema, got {sub!r}")
        _check_schema(sub, f"{where}.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(name in properties for name in required):
        raise InvalidArgumentError(
            f"{where} required must list declared properties, got {required!r}"
        )
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool):
        raise InvalidArgumentError(f"{where} additionalProperties must be a bool, got {extra!r}")
    items = schema.get("items")
    if items is not None:
        if not isinstance(items, Mapping):
            raise InvalidArgumentError(f"{where} items must be a schema, got {items!r}")
        _check_schema(items, f"{where}[]")


def _is_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, int | float) and math.isfinite(value)  # number


def _validate(value: Any, schema: Mapping[str, Any], path: str, tool: str) -> None:
    def fail(problem: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"tool {tool!r} {path} {problem}")

    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not any(_is_type(value, kind) for kind in types):
        raise fail(f"must be {' or '.join(types)}, got {type(value).__name__} {_clip(repr(value))}")
    if "enum" in schema and value not in schema["enum"]:
        raise fail(f"must be one of {schema['enum']!r}, got {_clip(repr(value))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise fail(f"must have at least {schema['minLength']} characters, got {len(value)}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise fail(f"must have at most {schema['maxLength']} characters, got {len(value)}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise fail(f"must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise fail(f"must be at most {schema['maximum']}, got {value}")
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise fail(f"must have at least {schema['minItems']} items, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise fail(f"must have at most {schema['maxItems']} items, got {len(value)}")
        if "items" in schema:
            for index, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{index}]", tool)
    elif isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        missing = [name for name in schema.get("required", []) if name not in value]
        if missing:
            raise fail(f"is missing required field(s) {', '.join(map(repr, missing))}")
        if schema.get("additionalProperties", True) is False:
            unknown = [name for name in value if name not in properties]
            if unknown:
                raise fail(f"has unknown field(s) {', '.join(map(repr, unknown[:5]))}")
        for name, item in value.items():
            if name in properties:
                _validate(item, properties[name], f"{path}.{name}", tool)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
