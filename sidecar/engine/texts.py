"""Text in several languages: a subject (or an act's reason) given as ``{en, zh-Hant}``.

The game may send a ``subject`` as one string (in whatever language it writes) or as a map
of language tag to text, so a narrative in either language reads its own words. The engine
keeps every subject a ``str``: a map is held as its canonical JSON text (keys sorted, no
spaces), which no plain subject can be (a string subject that is itself a JSON object is
refused), so the two never mix up. Events give the map back as sent (``to_dict``), the wire
replies decode it (:func:`wire_text`), and the narrative picks its language with
:func:`text_in`, falling back to English, then to any language given.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from .model import InvalidEvent

__all__ = ["TEXT_LANGS", "encode_texts", "is_texts", "parse_texts", "text_in", "wire_text"]

#: Languages a text map may hold (the narrative's languages).
TEXT_LANGS = ("en", "zh-Hant")


def _json_map(text: str) -> dict[str, str] | None:
    """The language map ``text`` encodes, or None for a plain string."""
    if not text.startswith("{"):
        return None
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        return None
    return found


def is_texts(text: str) -> bool:
    """Whether a stored subject is a language map (its canonical JSON text)."""
    return _json_map(text) is not None


def encode_texts(texts: Mapping[str, str]) -> str:
    """The canonical stored form of a language map."""
    return orjson.dumps(dict(sorted(texts.items())), option=orjson.OPT_SORT_KEYS).decode()


def parse_texts(value: object, key: str, limit: int) -> str | None:
    """A checked text field: a plain string as given, a language map in its stored form.

    ``None`` passes through (the caller decides whether the field is required). Raises
    :class:`InvalidEvent` naming ``key`` for anything else.
    """
    if value is None or isinstance(value, str):
        if isinstance(value, str) and _json_map(value) is not None:
            raise InvalidEvent(f"field '{key}' is JSON text of a map; send the language map itself")
        return value
    if not isinstance(value, Mapping):
        raise InvalidEvent(f"field '{key}' must be a string or a map of language to text")
    if not value:
        raise InvalidEvent(f"field '{key}' must name at least one language")
    clean: dict[str, str] = {}
    for lang, text in value.items():
        if lang not in TEXT_LANGS:
            raise InvalidEvent(
                f"field '{key}' may be given in {', '.join(TEXT_LANGS)}, not {str(lang)!r:.40}"
            )
        if not isinstance(text, str) or not text:
            raise InvalidEvent(f"field '{key}.{lang}' must be a non-empty string")
        if len(text) > limit:
            raise InvalidEvent(f"field '{key}.{lang}' is longer than {limit} characters")
        if "\x00" in text:
            raise InvalidEvent(f"field '{key}.{lang}' must not contain NUL characters")
        clean[lang] = text
    return encode_texts(clean)


def wire_text(text: str | None) -> str | dict[str, str] | None:
    """A stored text as the game sent it: the string, or the language map."""
    if text is None:
        return None
    found = _json_map(text)
    return text if found is None else found


def text_in(text: str | None, lang: str) -> str:
    """A stored text in ``lang``: a plain string as it is; a map's entry for ``lang``,
    else its English, else its first language's."""
    if not text:
        return ""
    found = _json_map(text)
    if found is None:
        return text
    return found.get(lang) or found.get("en") or next(iter(found.values()), "")
