"""A target's section of a declared kind's own settings (``icmp: {count: 5}``), validated by the model the kind
declares (:mod:`monitor.core.kinds`), so a kind added in one module is checked like the config's own.

The config holds the fields of the kinds it knows itself (:data:`CONFIG_KINDS`: http's, and the ``tcp:``,
``tls:``, ``dns:`` and ``heartbeat:`` sections). Any other section named as a kind is that kind's: on a
target of that kind it is validated by the kind's model, its errors placed under the section
(``targets[0].icmp.count``); on a target of another kind it is refused, as the config's own sections are.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, Field, SerializationInfo, SerializerFunctionWrapHandler, ValidationError, model_serializer, model_validator
from pydantic_core import InitErrorDetails

from monitor.config.addresses import kind_of
from monitor.config.values import settle
from monitor.core import kinds

CONFIG_KINDS = ("http", "tcp", "tls", "dns", "heartbeat")  # their fields are the config's own
S = TypeVar("S", bound=BaseModel)


def own_settings(kind: object) -> type[BaseModel] | None:
    """The settings model a declared kind has, None for one of the config's own kinds or one without."""
    if not kinds.known(kind) or kind in CONFIG_KINDS:
        return None
    settings = kinds.get(str(kind)).settings
    return settings if isinstance(settings, type) and issubclass(settings, BaseModel) else None


class KindSections(BaseModel):
    """A model with a section of its kind's own settings: :attr:`kind_settings`, written as the kind's name.

    ``KIND_FIELD`` names the field that says the kind; ``OTHERS_REFUSED``: whether another kind's section is an
    error (a target's) or left out (a /probe module's, as it leaves out the config's own sections of other kinds).
    """

    KIND_FIELD: ClassVar[str] = "kind"
    OTHERS_REFUSED: ClassVar[bool] = True
    kind_settings: Any = Field(default=None, exclude=True, repr=False)

    @model_validator(mode="before")
    @classmethod
    def _own_section(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "kind_settings" in data:
            return _refused(data, "kind_settings") if isinstance(data, dict) else data
        kind = cls._kind_in(data)
        sections = [key for key in data if key not in cls.model_fields and own_settings(key) is not None]
        if not sections:
            return data
        data = dict(data)
        for section in sections:
            if section != kind and cls.OTHERS_REFUSED:
                raise ValueError(f"a {kind} target takes no {section}: settings (they are for {section} targets)")
            value = data.pop(section)
            if section == kind and value is not None:
                data["kind_settings"] = _validated(kind, value)
        return data

    @classmethod
    def _kind_in(cls, data: dict[str, Any]) -> Any:
        """The kind ``data`` says, or its url's scheme names (http if neither)."""
        kind = data.get(cls.KIND_FIELD)
        return kind if kinds.known(kind) else kind_of(data.get("url")) or "http"

    def _with_own_settings(self) -> Self:
        """The kind's settings, defaulted when its section was left out."""
        model = own_settings(getattr(self, self.KIND_FIELD, None))
        if model is not None and self.kind_settings is None:
            settle(self, kind_settings=model())
        return self

    def settings_as(self, model: type[S]) -> S:
        """The target's settings of its kind, as ``model`` (the kind's own); its defaults if it has none."""
        return self.kind_settings if isinstance(self.kind_settings, model) else model()

    @model_serializer(mode="wrap")
    def _dump_own_settings(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(self.kind_settings, BaseModel) and isinstance(data, dict):
            data[getattr(self, self.KIND_FIELD)] = self.kind_settings.model_dump(
                mode=info.mode, by_alias=bool(info.by_alias), exclude_unset=info.exclude_unset
            )
        return data

    @classmethod
    def section_model(cls, name: str) -> type[BaseModel] | None:
        """The model of section ``name``, a declared kind's (for the fields an error lists)."""
        return own_settings(name)

    @classmethod
    def sections(cls) -> list[str]:
        """The sections declared kinds add (every built-in kind loaded): for the fields an error lists."""
        return [kind.name for kind in kinds.loaded() if own_settings(kind.name) is not None]


def _validated(kind: str, value: Any) -> BaseModel:
    """``value`` as ``kind``'s settings; a ValidationError whose errors sit under the section."""
    model = own_settings(kind)
    assert model is not None
    return validated(kind, model, value)


def validated(section: str, model: type[S], value: Any) -> S:
    """``value`` as ``model``; a ValidationError whose errors sit under ``section`` (a kind's, a receiver's)."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        details = [InitErrorDetails(type=e["type"], loc=(section, *e["loc"]), input=e["input"], ctx=e.get("ctx", {})) for e in exc.errors()]
        raise ValidationError.from_exception_data(exc.title, details) from None


def _refused(data: dict[str, Any], key: str) -> Any:
    detail = InitErrorDetails(type="extra_forbidden", loc=(key,), input=data[key])
    raise ValidationError.from_exception_data("Target", [detail])
