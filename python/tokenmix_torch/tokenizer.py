"""Byte-level BPE as tokenmix's tokenizer package runs it, for the
tokenizer.json a run directory keeps (docs/tokenizers.md): the gpt2,
cl100k, o200k and blocks patterns as the same hand-written scanners (\\s is
Unicode's White_Space, (?i:'s…) folds case as Unicode does), then merges
by rank, the leftmost of equal ranks. Text is bytes: bytes that are not
UTF-8 are characters of their own, neither letters, numbers nor space."""
import heapq
import json
import unicodedata

LONG_PIECE = 128  # above it a piece merges through a heap (Go's longPiece)

_WHITE = set(map(chr, [*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                       0x202F, 0x205F, 0x3000]))
_PATTERNS = {
    "gpt2": [r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""],
    "cl100k": [r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
               r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
               r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""],
    "o200k": [r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "blocks": [r"""[^\n]*(?:\n[^\n]+)*\n*"""],
}
_FOLD = {"s": "sSſ", "t": "tT", "r": "rR", "e": "eE", "v": "vV", "m": "mM", "l": "lL", "d": "dD"}


def _cls(c):
    """The scanner's classes of character c: L (letter), N, S (space), O;
    with the letter case or mark as the second value."""
    if "\udc80" <= c <= "\udcff":  # a byte that is not UTF-8 (surrogateescape)
        return "O", ""
    cat = unicodedata.category(c)
    if cat[0] == "L":
        return "L", cat
    if cat[0] == "N":
        return "N", cat
    if c in _WHITE:
        return "S", ""
    return "O", cat if cat[0] == "M" else ""


_UPPER = {"Lu", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"}
_LOWER = {"Ll", "Lm", "Lo", "Mn", "Mc", "Me"}


def _run(s, i, ok):
    j = i
    while j < len(s) and ok(s[j]):
        j += 1
    return j - i


def _contraction(s, i, fold):
    if i + 1 >= len(s) or s[i] != "'":
        return 0
    for w in ("s", "t", "re", "ve", "m", "ll", "d"):
        if i + 1 + len(w) <= len(s) and all(
                (s[i + 1 + k] in _FOLD[ch]) if fold else s[i + 1 + k] == ch for k, ch in enumerate(w)):
            return 1 + len(w)
    return 0


def _space(c):
    return _cls(c)[0] == "S"


def _whitespace(s, i):
    n = _run(s, i, _space)
    if i + n < len(s) and n > 1:
        return n - 1
    return n


def _newlines(s, i):
    n = _run(s, i, _space)
    for k in range(n - 1, -1, -1):
        if s[i + k] in "\r\n":
            return k + 1
    return 0


def _opt_space(s, i, x):
    if s[i] == " " and i + 1 < len(s):
        n = x(s, i + 1)
        if n:
            return 1 + n
    return x(s, i)


def _prefixed(s, i, x):
    c = s[i]
    if _cls(c)[0] not in "LN" and c not in "\r\n" and i + 1 < len(s):
        n = x(s, i + 1)
        if n:
            return 1 + n
    return x(s, i)


def _letters(s, i):
    return _run(s, i, lambda c: _cls(c)[0] == "L")


def _numbers(s, i):
    return _run(s, i, lambda c: _cls(c)[0] == "N")


def _others(s, i):
    return _run(s, i, lambda c: _cls(c)[0] == "O")


def _digits3(s, i):
    return min(3, _numbers(s, i))


def _others_tail(tail):
    def f(s, i):
        n = _others(s, i)
        return n + _run(s, i + n, lambda c: c in tail) if n else 0
    return f


def _upper_lower(s, i):
    n = _run(s, i, lambda c: _cls(c)[1] in _UPPER)
    m = _run(s, i + n, lambda c: _cls(c)[1] in _LOWER)
    end = n + m if m else 0
    if not m:
        for k in range(n, 0, -1):
            if _cls(s[i + k - 1])[1] in _LOWER:
                end = k
                break
    return end + _contraction(s, i + end, True) if end else 0


def _upper_then_lower(s, i):
    n = _run(s, i, lambda c: _cls(c)[1] in _UPPER)
    if not n:
        return 0
    n += _run(s, i + n, lambda c: _cls(c)[1] in _LOWER)
    return n + _contraction(s, i + n, True)


def _next_gpt2(s, i):
    n = _contraction(s, i, False)
    if n:
        return n
    if not _space(s[i]) or (s[i] == " " and i + 1 < len(s)):
        for x in (_letters, _numbers, _others):
            n = _opt_space(s, i, x)
            if n:
                return n
    return _whitespace(s, i)


def _next_cl100k(s, i):
    return (_contraction(s, i, True) or _prefixed(s, i, _letters) or _digits3(s, i)
            or _opt_space(s, i, _others_tail("\r\n")) or _newlines(s, i) or _whitespace(s, i))


def _next_o200k(s, i):
    return (_prefixed(s, i, _upper_lower) or _prefixed(s, i, _upper_then_lower) or _digits3(s, i)
            or _opt_space(s, i, _others_tail("\r\n/")) or _newlines(s, i) or _whitespace(s, i))


def _next_block(s, i):
    j = s.find("\n\n", i)
    if j < 0:
        return len(s) - i
    j += 2
    while j < len(s) and s[j] == "\n":
        j += 1
    return j - i


_NEXT = {"gpt2": _next_gpt2, "cl100k": _next_cl100k, "o200k": _next_o200k, "blocks": _next_block}


def pieces(pattern, data):
    """The pieces of data (bytes) under pattern, as bytes."""
    s, nxt, out, i = data.decode("utf-8", "surrogateescape"), _NEXT[pattern], [], 0
    while i < len(s):
        n = nxt(s, i)
        out.append(s[i:i + n].encode("utf-8", "surrogateescape"))
        i += n
    return out


def _byte_chars():
    bs = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    chars, n = {}, 0
    for b in range(256):
        if b in bs:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return {c: b for b, c in chars.items()}


_CHAR_BYTE = _byte_chars()


class Tokenizer:
    """A tokenizer.json of byte-level BPE, as tokenmix writes it."""

    def __init__(self, pattern, tokens, merges, ignore_merges, special):
        self.pattern, self.tokens, self.ignore_merges = pattern, tokens, ignore_merges
        self.ids = {t: i for i, t in enumerate(tokens) if t is not None and i not in special}
        self.special = special
        self.pairs = {}
        for r, (a, b) in enumerate(merges):
            self.pairs[(a, b)] = (r, self.ids[tokens[a] + tokens[b]])
        self.byte_id = [self.ids[bytes([b])] for b in range(256)]

    @property
    def vocab_size(self):
        return len(self.tokens)

    def encode(self, data):
        """The ids of data (bytes, or str as UTF-8)."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        out = []
        for p in pieces(self.pattern, data):
            if len(p) == 1:
                out.append(self.byte_id[p[0]])
                continue
            if self.ignore_merges and p in self.ids:
                out.append(self.ids[p])
                continue
            if len(p) > LONG_PIECE:
                out += self._merge_long(p)
                continue
            parts = [self.byte_id[b] for b in p]
            while len(parts) > 1:
                best = None
                for k in range(len(parts) - 1):
                    m = self.pairs.get((parts[k], parts[k + 1]))
                    if m is not None and (best is None or m[0] < best[0]):
                        best = (m[0], k, m[1])
                if best is None:
                    break
                parts[best[1]:best[1] + 2] = [best[2]]
            out += parts
        return out

    def _merge_long(self, p):
        """The merges of a long piece through a heap of (rank, position):
        the quadratic scan's result in O(n log n), as Go's appendLongPiece."""
        n = len(p)
        ids = [self.byte_id[b] for b in p]
        nxt, prv = list(range(1, n)) + [-1], list(range(-1, n - 1))
        h = []

        def push(left):
            if left < 0 or nxt[left] < 0:
                return
            m = self.pairs.get((ids[left], ids[nxt[left]]))
            if m is not None:
                heapq.heappush(h, (m[0], left, nxt[left], ids[left], ids[nxt[left]]))

        for i in range(n - 1):
            push(i)
        while h:
            _, left, right, a, b = heapq.heappop(h)
            if nxt[left] != right or ids[left] != a or ids[right] != b:
                continue
            ids[left] = self.pairs[(a, b)][1]
            ids[right] = -1
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            nxt[right] = -2
            push(prv[left])
            push(left)
        out, i = [], 0
        while i >= 0:
            out.append(ids[i])
            i = nxt[i]
        return out

    def decode(self, ids):
        """The bytes of ids."""
        return b"".join(self.tokens[i] for i in ids)

    def token_bytes(self):
        """The byte length of each id (0 for a hole)."""
        return [len(t) if t is not None else 0 for t in self.tokens]


def load(path):
    """The tokenizer.json at path; a file tokenmix would refuse is a
    ValueError naming the field."""
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None

    def bad(field, msg):
        return ValueError(f"{path}: {field}: {msg}")

    if j.get("normalizer") is not None:
        raise bad("normalizer", "not supported (byte-level BPE has none)")
    pre = j.get("pre_tokenizer") or {}
    if pre.get("type") == "ByteLevel":
        pattern = "gpt2"
    elif pre.get("type") == "Sequence":
        regex = ((pre.get("pretokenizers") or [{}])[0].get("pattern") or {}).get("Regex")
        pattern = next((p for p, rs in _PATTERNS.items() if regex in rs), None)
        if pattern is None:
            raise bad("pre_tokenizer.pretokenizers[0].pattern", f"the regex {regex!r} is not gpt2, cl100k, o200k or blocks")
    else:
        raise bad("pre_tokenizer.type", f"{pre.get('type')!r} is not supported")
    m = j.get("model") or {}
    if m.get("type") != "BPE":
        raise bad("model.type", f"{m.get('type')!r} is not supported (want BPE)")
    vocab = m.get("vocab")
    if not isinstance(vocab, dict):
        raise bad("model.vocab", "missing")
    size = max([*vocab.values(), *(a["id"] for a in j.get("added_tokens") or [])], default=-1) + 1
    tokens = [None] * size
    for k, i in vocab.items():
        try:
            tokens[i] = bytes(_CHAR_BYTE[c] for c in k)
        except KeyError:
            raise bad(f"model.vocab[{k!r}]", "not a token of the byte-level alphabet") from None
    by = {t: i for i, t in enumerate(tokens) if t is not None}
    merges = []
    for r, mg in enumerate(m.get("merges") or []):
        a, b = mg.split(" ") if isinstance(mg, str) else mg
        try:
            merges.append((by[bytes(_CHAR_BYTE[c] for c in a)], by[bytes(_CHAR_BYTE[c] for c in b)]))
        except KeyError:
            raise bad(f"model.merges[{r}]", f"{a!r} {b!r} is not in the vocabulary") from None
    special = set()
    for a in j.get("added_tokens") or []:
        tokens[a["id"]] = a["content"].encode()
        special.add(a["id"])
    return Tokenizer(pattern, tokens, merges, bool(m.get("ignore_merges")), special)
