"""What every part of the catalog shares: strict frozen models, texts in two languages, requirement strings."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..packages import parse_requirement

__all__ = ["CatalogModel", "Localized", "PackageRequirement"]


class CatalogModel(BaseModel):
    # Strict: a typo in a catalog file is reported, not ignored. Frozen: a loaded catalog is shared by every
    # request and by the engine. A dump writes every field, so the API's schema of an answer embedding one
    # marks them all required.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True,
                              json_schema_serialization_defaults_required=True)


class Localized(CatalogModel):
    """A text shown to users, in English and Simplified Chinese."""

    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)

    def text(self, language: str = "en") -> str:
        return self.zh if language.lower().startswith("zh") else self.en


def _requirement(text: str) -> str:
    parse_requirement(text)
    return text


# A framework or inference engine and, optionally, a version range: "torch", "torch>=2.3", "vllm>=0.6,<0.7".
PackageRequirement = Annotated[str, AfterValidator(_requirement)]
