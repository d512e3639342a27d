"""A test-only stand-in for the `pyroaring` package (not in the machine's pip index), written from
the Roaring format spec (github.com/RoaringBitmap/RoaringFormatSpec) without any varve code, so
pyiceberg can read Iceberg v3 deletion vectors and read_iceberg.py can decode them on its own.

BitMap.deserialize reads one 32-bit Roaring bitmap in the portable format (array, bitmap and run
containers; with or without the run cookie) from the start of a buffer and ignores what follows;
serialize() returns exactly the bytes it consumed, which is how pyiceberg steps from one bitmap
of a 64-bit deletion vector to the next (len(bm.serialize())). Only what pyiceberg and the test
reader use: a set of ints.
"""
import struct

SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4


def decode_roaring32(buf):
    """(sorted values, bytes consumed) of the 32-bit Roaring bitmap at the start of `buf`."""
    buf = bytes(buf)
    (cookie,) = struct.unpack_from("<I", buf, 0)
    at = 4
    runs = None
    if cookie & 0xFFFF == SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        runs = buf[at : at + (n + 7) // 8]
        at += (n + 7) // 8
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        (n,) = struct.unpack_from("<I", buf, at)
        at += 4
    else:
        raise ValueError(f"not a Roaring bitmap: cookie {cookie}")
    headers = [struct.unpack_from("<HH", buf, at + 4 * i) for i in range(n)]
    at += 4 * n
    if runs is None or n >= NO_OFFSET_THRESHOLD:
        at += 4 * n  # container offsets: redundant with the sizes, skipped
    values = []
    last_key = -1
    for i, (key, card_minus_1) in enumerate(headers):
        if key <= last_key:
            raise ValueError(f"container keys must ascend: {last_key} then {key}")
        last_key = key
        high = key << 16
        card = card_minus_1 + 1
        if runs is not None and runs[i // 8] >> (i % 8) & 1:
            (nruns,) = struct.unpack_from("<H", buf, at)
            at += 2
            for r in range(nruns):
                start, length_minus_1 = struct.unpack_from("<HH", buf, at + 4 * r)
                values.extend(range(high | start, (high | start) + length_minus_1 + 1))
            at += 4 * nruns
        elif card <= 4096:
            values.extend(high | v for v in struct.unpack_from(f"<{card}H", buf, at))
            at += 2 * card
        else:
            words = struct.unpack_from("<1024Q", buf, at)
            at += 8192
            for w, word in enumerate(words):
                while word:
                    low = word & -word
                    values.append(high | (w * 64 + low.bit_length() - 1))
                    word ^= low
    return values, at


class BitMap(set):
    def __init__(self, it=()):
        super().__init__(it)
        self._bytes = None

    @classmethod
    def deserialize(cls, buf):
        values, used = decode_roaring32(buf)
        bm = cls(values)
        bm._bytes = bytes(buf[:used])
        return bm

    def serialize(self):
        if self._bytes is None:
            raise NotImplementedError("this test stand-in only re-serializes a bitmap it deserialized")
        return self._bytes

    def __iter__(self):
        return iter(sorted(set.__iter__(self)))


class FrozenBitMap(frozenset):
    pass
