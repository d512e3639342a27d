"""An independent Iceberg reader for the export tests: fastavro and pyarrow only, following the
Iceberg table spec (format versions 2 and 3) step by step, without any varve code:

  version-hint.text -> v<N>.metadata.json -> snapshot -> manifest list (Avro)
  -> manifests (Avro; entries with status != DELETED; sequence numbers inherited from the list)
  -> Parquet data files, columns projected by field id (PARQUET:field_id), or through
  schema.name-mapping.default when a file has no ids
  -> minus deletes, by the spec's scan planning rules ("Scan Planning"): v2 position delete files
  (Parquet file_path/pos), and v3 deletion vectors decoded here from their Puffin file (the footer,
  then the deletion-vector-v1 blob at content_offset: big-endian length, magic D1 D3 39 64,
  portable 64-bit Roaring via roaring/pyroaring.py, big-endian CRC-32); a vector replaces the
  position delete files of its data file.
For a v3 snapshot that assigns row ids it also checks row lineage: every live data file's
first_row_id (written or inherited, "First Row ID Inheritance") gives it an id range disjoint
from the others and below the table's next-row-id.

Prints one JSON object: the snapshot id, the files read and every row as {column: canonical text}
(ints and unscaled decimals as decimal text, floats as IEEE-754 hex bits of the double, bytes as
hex, dates as days since 1970-01-01, timestamps as microseconds since the epoch). With --all:
{"snapshots": {"<id>": {"files": n, "deletes": n, "rows": [...]}}} for every listed snapshot.

Usage: read_iceberg.py <metadata folder (path or file:// URI)> [--all]
"""
import json
import math
import os
import struct
import sys
import zlib

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "roaring"))
from pyroaring import decode_roaring32  # noqa: E402  (the test's own Roaring decoder)

DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
PUFFIN_MAGIC = b"PFA1"


def local(uri):
    # Iceberg file paths are plain location strings, not URL-encoded (S3FileIO and Hadoop's Path
    # take the key as written): a Hive-escaped partition folder "p=us%2Fwest" stays as is.
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if "://" in uri:
        raise SystemExit(f"only file:// URIs are supported here, got {uri}")
    return uri


def arrow_type(t):
    simple = {
        "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
        "double": pa.float64(), "string": pa.string(), "binary": pa.binary(), "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
    }
    if t in simple:
        return simple[t]
    if t.startswith("decimal("):
        p, s = (int(x) for x in t[len("decimal("):-1].split(","))
        return pa.decimal128(p, s)
    raise SystemExit(f"unsupported Iceberg type {t}")


def canonical(t, v):
    if v is None:
        return None
    if t == "boolean":
        return "true" if v else "false"
    if t in ("int", "long", "date", "timestamp"):
        return str(v)
    if t in ("float", "double"):
        if math.isnan(v):
            return "NaN"
        return struct.pack(">d", v).hex()
    if t.startswith("decimal("):
        scale = int(t[len("decimal("):-1].split(",")[1])
        # Exact: the default decimal context rounds to 28 digits.
        sign, digits, exponent = v.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * 10 ** (exponent + scale) if exponent + scale >= 0 else None
        assert unscaled is not None, (v, scale)
        return str(-unscaled if sign else unscaled)
    if t == "binary":
        return v.hex()
    return v


def read_avro(uri):
    with open(local(uri), "rb") as f:
        r = fastavro.reader(f)
        return list(r), r.metadata


def decode_vector(blob):
    """The positions of a deletion-vector-v1 blob (Puffin spec), every frame field checked."""
    (length,) = struct.unpack_from(">I", blob, 0)
    assert length == len(blob) - 8, f"blob length field {length}, blob of {len(blob)} bytes"
    assert blob[4:8] == DV_MAGIC, blob[4:8].hex()
    (crc,) = struct.unpack_from(">I", blob, len(blob) - 4)
    assert zlib.crc32(blob[4 : len(blob) - 4]) == crc, "deletion vector CRC-32 mismatch"
    body = blob[8 : len(blob) - 4]
    (count,) = struct.unpack_from("<Q", body, 0)
    at = 8
    positions = []
    last_key = -1
    for _ in range(count):
        (key,) = struct.unpack_from("<I", body, at)
        assert key > last_key, "bitmap keys must ascend"
        last_key = key
        values, used = decode_roaring32(body[at + 4 :])
        positions.extend((key << 32) | v for v in values)
        at += 4 + used
    assert at == len(body), f"{len(body) - at} bytes after the last bitmap"
    return positions


def puffin_vector(df):
    """The positions of the deletion vector a v3 manifest entry names, checked against the Puffin footer."""
    with open(local(df["file_path"]), "rb") as f:
        data = f.read()
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC, "not a Puffin file"
    assert len(data) == df["file_size_in_bytes"], (len(data), df["file_size_in_bytes"])
    (size,) = struct.unpack_from("<i", data, len(data) - 12)
    footer = json.loads(data[len(data) - 12 - size : len(data) - 12])
    offset, length = df["content_offset"], df["content_size_in_bytes"]
    blob = next(b for b in footer["blobs"] if b["offset"] == offset)
    assert blob["type"] == "deletion-vector-v1" and blob["length"] == length, blob
    assert blob["properties"]["referenced-data-file"] == df["referenced_data_file"], blob
    positions = decode_vector(data[offset : offset + length])
    assert len(positions) == int(blob["properties"]["cardinality"]) == df["record_count"], blob
    return positions


def snapshot_files(snap):
    """(live data entries, live delete entries) of a snapshot, sequence numbers inherited; data files with first_row_id."""
    manifests, _ = read_avro(snap["manifest-list"])
    data, deletes = [], []
    for m in manifests:
        entries, _ = read_avro(m["manifest_path"])
        next_row_id = m.get("first_row_id")
        for e in entries:
            df = e["data_file"]
            seq = e["sequence_number"] if e["sequence_number"] is not None else m["sequence_number"]
            if m["content"] == 0 and next_row_id is not None and df.get("first_row_id") is None:
                df["first_row_id"] = next_row_id
                next_row_id += df["record_count"]
            if e["status"] == 2:
                continue
            assert (df["content"] == 0) == (m["content"] == 0), "a data manifest holds data files only"
            (data if m["content"] == 0 else deletes).append((seq, df))
    return data, deletes


def deleted_positions(data, deletes):
    """Data file path -> deleted positions, by the scan planning rules of the spec."""
    seq_of = {df["file_path"]: seq for seq, df in data}
    vectors, position_files = {}, {}
    for seq, df in deletes:
        assert df["content"] == 1, "the export writes position deletes only"
        if df["file_format"].upper() == "PUFFIN":
            target = df["referenced_data_file"]
            assert target not in vectors, f"two deletion vectors for {target}"
            if target in seq_of and seq_of[target] <= seq:
                vectors[target] = puffin_vector(df)
        else:
            table = pq.read_table(local(df["file_path"]))
            for path, pos in zip(table.column("file_path").to_pylist(), table.column("pos").to_pylist()):
                if path in seq_of and seq_of[path] <= seq:
                    position_files.setdefault(path, set()).add(pos)
    out = {p: set(v) for p, v in position_files.items()}
    out.update({p: set(v) for p, v in vectors.items()})  # a vector replaces the position delete files
    return out


def check_row_lineage(meta, snap, data):
    if meta["format-version"] < 3 or snap.get("first-row-id") is None:
        return
    ranges = sorted((df["first_row_id"], df["first_row_id"] + df["record_count"]) for _, df in data)
    for (a0, a1), (b0, b1) in zip(ranges, ranges[1:]):
        assert a1 <= b0, f"row id ranges overlap: [{a0}, {a1}) and [{b0}, {b1})"
    if ranges:
        assert ranges[-1][1] <= meta["next-row-id"], (ranges[-1], meta["next-row-id"])


def snapshot_rows(meta, snap, mapping):
    schema = next(s for s in meta["schemas"] if s["schema-id"] == snap.get("schema-id", meta["current-schema-id"]))
    data, deletes = snapshot_files(snap)
    check_row_lineage(meta, snap, data)
    gone = deleted_positions(data, deletes)
    rows = []
    for _, df in data:
        assert df["file_format"].upper() == "PARQUET", df
        table = pq.read_table(local(df["file_path"]))
        assert table.num_rows == df["record_count"], (df["file_path"], table.num_rows, df["record_count"])
        by_id = {}
        for i, field in enumerate(table.schema):
            md = field.metadata or {}
            fid = md.get(b"PARQUET:field_id")
            if fid is not None:
                by_id[int(fid)] = i
            elif field.name in mapping:
                by_id[mapping[field.name]] = i
        cols = []
        for f in schema["fields"]:
            t = arrow_type(f["type"])
            if f["id"] in by_id:
                col = table.column(by_id[f["id"]]).cast(t)
            else:
                col = pa.nulls(table.num_rows, type=t)
            if f["type"] in ("date",):
                col = col.cast(pa.int32())
            elif f["type"] == "timestamp":
                col = col.cast(pa.int64())
            cols.append((f, col.to_pylist()))
        dropped = gone.get(df["file_path"], set())
        for r in range(table.num_rows):
            if r not in dropped:
                rows.append({f["name"]: canonical(f["type"], vals[r]) for f, vals in cols})
    return {"files": len(data), "deletes": len(deletes), "rows": rows}


def main():
    folder = local(sys.argv[1]).rstrip("/")
    with open(os.path.join(folder, "version-hint.text")) as f:
        version = f.read().strip()
    while os.path.exists(os.path.join(folder, f"v{int(version) + 1}.metadata.json")):
        version = str(int(version) + 1)
    with open(os.path.join(folder, f"v{version}.metadata.json")) as f:
        meta = json.load(f)
    assert meta["format-version"] in (2, 3), meta["format-version"]
    mapping = {}
    for m in json.loads(meta.get("properties", {}).get("schema.name-mapping.default", "[]")):
        for n in m["names"]:
            mapping[n] = m["field-id"]
    if "--all" in sys.argv[2:]:
        out = {str(s["snapshot-id"]): snapshot_rows(meta, s, mapping) for s in meta["snapshots"]}
        json.dump({"current": meta["current-snapshot-id"], "snapshots": out}, sys.stdout)
        return
    snap_id = meta["current-snapshot-id"]
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == snap_id)
    result = snapshot_rows(meta, snap, mapping)
    json.dump({"snapshot": snap_id, "files": result["files"], "rows": result["rows"]}, sys.stdout)


if __name__ == "__main__":
    main()
