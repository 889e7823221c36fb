"""A numpy reader for the IDX format of the MNIST files (LeCun et al.), gzipped or not.

IDX layout: a 4-byte magic number ``0x00 0x00 <type> <ndim>``, then ``ndim`` big-endian
uint32 sizes, then the data in C order, big-endian. Type codes: 0x08 uint8, 0x09 int8,
0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. MNIST images are ``0x00000803``
(2051: uint8, 3-D) and labels ``0x00000801`` (2049: uint8, 1-D).
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

__all__ = ["IDX_DTYPES", "read_idx", "read_idx_bytes"]

#: IDX type code -> big-endian numpy dtype.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"


def read_idx_bytes(raw: bytes, source: str = "<bytes>") -> np.ndarray:
    """Parse the bytes of an (uncompressed) IDX file into an array of native byte order.

    Raises ``ValueError`` naming ``source`` when the magic number, the header or the
    length of the data does not fit the IDX format.

    >>> import struct
    >>> raw = bytes([0, 0, 0x08, 1]) + struct.pack(">I", 3) + bytes([7, 8, 9])
    >>> read_idx_bytes(raw).tolist()
    [7, 8, 9]
    """
    if len(raw) < 4:
        raise ValueError(
            f"{source}: not an IDX file (only {len(raw)} bytes, the 4-byte magic number is missing)"
        )
    zero0, zero1, type_code, ndim = raw[0], raw[1], raw[2], raw[3]
    if zero0 != 0 or zero1 != 0 or type_code not in IDX_DTYPES or ndim == 0:
        raise ValueError(
            f"{source}: not an IDX file (magic number 0x{raw[:4].hex()}; expected 0x0000TTNN with "
            "type TT in "
            f"{{08, 09, 0b, 0c, 0d, 0e}} and NN >= 1 dimensions, e.g. 0x00000803 for MNIST images, "
            "0x00000801 "
            "for labels). Is it an HTML error page or a truncated download? Fetch the file again."
        )
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise ValueError(
            f"{source}: truncated IDX header ({len(raw)} bytes, the header needs {header_len})"
        )
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = IDX_DTYPES[type_code]
    expected = header_len + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        what = "truncated" if len(raw) < expected else "has trailing bytes"
        raise ValueError(
            f"{source}: corrupt IDX file ({what}): the header announces shape {shape} of "
            f"{dtype.name} "
            f"({expected} bytes in all) but the file holds {len(raw)} bytes. Fetch the file again."
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header_len).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (plain or gzip-compressed, detected from its first bytes).

    Raises ``FileNotFoundError`` if ``path`` does not exist and ``ValueError`` when it is
    not a valid IDX file (bad magic number, truncated, corrupt gzip stream).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}")
    raw = path.read_bytes()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt gzip stream ({exc}); fetch the file again") from exc
    return read_idx_bytes(raw, source=str(path))
