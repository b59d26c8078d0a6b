"""English's own tables (lemminflect): which parts of speech a word can be. Shared by the parser and by grounding's
relaxation, which tells a dictionary word from a name; lemminflect loads on first use."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=8192)
def word_classes(word: str) -> frozenset[str]:
    """The parts of speech lemminflect's English tables give the word ("NOUN", "VERB", …; none for an unknown)."""
    from lemminflect import getAllLemmas

    return frozenset(getAllLemmas(word))


def is_english(word: str) -> bool:
    """Whether lemminflect's English tables know the word in any part of speech."""
    return bool(word_classes(word))


@lru_cache(maxsize=8192)
def is_base_verb(word: str) -> bool:
    """Whether the word is a verb's base form ("consist", "involve"; not "consists" or "involved")."""
    from lemminflect import getAllLemmas

    return word in getAllLemmas(word).get("VERB", ())
