"""Character n-grams of the dedup match key, with where each key character came from.

The key is the dedup match key (pipeline/dedup/keys.py) taken character by character: NFKC, OpenCC
t2s, lower case, no whitespace, punctuation or symbols. So 「牀前明月光，疑是地上霜」 in traditional
script, or with other punctuation and line breaks, has the same n-grams as 床前明月光疑是地上霜.
(The dedup key normalises characters whose form depends on their neighbours, combining marks and
Hangul jamo, over the whole text; here every character is mapped on its own, so the corpus and the
items go through one function and agree by construction.)

Each n-gram is a 64-bit polynomial hash of its characters (pipeline/dedup/ngrams.py). Texts are
joined with a separator, and no n-gram spans two texts. `origin` maps each key character back to
its position in the original text, for evidence offsets and snippets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.dedup.keys import char_key
from pipeline.dedup.ngrams import gram_hashes

SEP = 10   # "\n": texts are joined by it; its key form is itself, and no n-gram crosses it


@lru_cache(maxsize=1 << 20)
def _key_of(code: int) -> str:
    return char_key(chr(code))


class _Table:
    """Every character's key seen so far in this process, as arrays indexed by code point: each
    distinct character goes through `char_key` once per process, not once per batch."""
    first = np.zeros(0, dtype=np.uint32)     # the key's character, when it has exactly one
    length = np.zeros(0, dtype=np.int64)     # the key's length (0: dropped)
    known = np.zeros(0, dtype=bool)
    longer = np.zeros(0, dtype=bool)         # the key is longer than one character (in _LONGER)


_LONGER: dict[int, str] = {}


def _table(present: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, length, is_longer) covering the code points `present` (sorted, distinct)."""
    first, length, known, longer = _Table.first, _Table.length, _Table.known, _Table.longer
    size = int(present[-1]) + 1
    if size > len(known):
        grow = max(size, 2 * len(known))
        first, length = np.pad(first, (0, grow - len(first))), np.pad(length, (0, grow - len(length)))
        known, longer = np.pad(known, (0, grow - len(known))), np.pad(longer, (0, grow - len(longer)))
    new = present[~known[present]]
    if len(new):
        first, length, known, longer = first.copy(), length.copy(), known.copy(), longer.copy()
        for code in new.tolist():
            key = "\n" if code == SEP else _key_of(code)
            length[code] = len(key)
            if len(key) == 1:
                first[code] = ord(key)
            elif key:
                _LONGER[code] = key
                longer[code] = True
        known[new] = True
    # swapped in whole: a thread that reads the old arrays still sees a consistent table
    _Table.first, _Table.length, _Table.known, _Table.longer = first, length, known, longer
    return first, length, longer


@dataclass
class Keyed:
    """Many texts as one array of key characters, separated by SEP."""
    codes: np.ndarray        # uint32 key characters; SEP between two texts
    origin: np.ndarray       # int64: for each key character, its index in the joined original text
    text_of: np.ndarray      # int64: for each key character, which text it belongs to
    original: str            # the original texts joined by "\n" (newlines inside a text made spaces)
    starts: np.ndarray       # int64: where each text starts in `original`

    def windows(self, n: int) -> np.ndarray:
        """Start positions of the n-grams that lie inside one text."""
        m = len(self.codes) - n + 1
        if m <= 0:
            return np.empty(0, dtype=np.int64)
        seps = np.concatenate(([0], np.cumsum(self.codes == SEP)))
        return np.flatnonzero(seps[n:n + m] == seps[:m])

    def hashes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, 64-bit hashes) of every n-gram inside one text."""
        pos = self.windows(n)
        return pos, gram_hashes(self.codes, n)[pos] if len(pos) else np.empty(0, dtype=np.uint64)


def keyed(texts: Sequence[str]) -> Keyed:
    """The key of every text, in one array: each distinct character is mapped once through a
    table, then the whole batch through numpy (characters whose key is longer than one, such as
    NFKC's ㍿ -> 株式会社, are expanded in place)."""
    original = "\n".join(t.replace("\n", " ") for t in texts)
    raw = np.frombuffer(original.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    starts = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        np.cumsum(np.fromiter((len(t) + 1 for t in texts[:-1]), dtype=np.int64, count=len(texts) - 1),
                  out=starts[1:])
    if not len(raw):
        empty = np.empty(0, dtype=np.int64)
        return Keyed(np.empty(0, dtype=np.uint32), empty, empty, original, starts)
    present = np.flatnonzero(np.bincount(raw))
    first, length, is_longer = _table(present)
    longer = {code: _LONGER[code] for code in present[is_longer[present]].tolist()}
    lengths = length[raw]
    if not longer:
        origin = np.flatnonzero(lengths)
        codes = first[raw[origin]]
    else:
        origin = np.repeat(np.arange(len(raw)), lengths)
        offsets = np.arange(len(origin)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        codes = first[raw[origin]]
        for code, key in longer.items():
            where = raw[origin] == code
            codes[where] = np.frombuffer(key.encode("utf-32-le"), dtype=np.uint32)[offsets[where]]
    # the texts before a character are the separators before it (texts hold no "\n" of their own)
    is_sep = raw == SEP
    text_of = (np.cumsum(is_sep) - is_sep)[origin]
    return Keyed(codes, origin, text_of, original, starts)
