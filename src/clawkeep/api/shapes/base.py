"""The base of every contract model (see the package docstring) and the limits the models share."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

SEND_TIMEOUT_DEFAULT_S = 30  # sessions_send waits this long for the reply unless told (OpenClaw's default)
SEND_TIMEOUT_MAX_S = 3600


class Shape(BaseModel):
    """Base of every contract model: camelCase aliases, extra keys kept, JSON-like reads."""

    # defer_build: a model's validator is built when it is first used, so a process that
    # returns one kind of result does not build the schema of every other one at import.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    # --- reading a result like its JSON --------------------------------------------------
    def _field_for(self, key: str) -> str | None:
        for name, field in type(self).model_fields.items():
            if key in (field.alias, name):
                return name
        extra = self.__pydantic_extra__ or {}
        return key if key in extra else None

    def __getitem__(self, key: str) -> Any:
        name = self._field_for(key)
        if name is None or name not in self.model_fields_set and name in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, name)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> list[str]:
        return list(self.to_json())

    def __iter__(self) -> Any:  # iterates its JSON keys, like the dict it documents
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict):
            return self.to_json() == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]
