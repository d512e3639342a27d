"""An independent Iceberg reader for the export tests: fastavro and pyarrow only, following the
Iceberg table spec (format version 2) step by step, without any varve code:

  version-hint.text -> v<N>.metadata.json -> current snapshot -> manifest list (Avro)
  -> manifests (Avro; entries with status != DELETED) -> Parquet data files, columns projected by
  field id (PARQUET:field_id), or through schema.name-mapping.default when a file has no ids.

Prints one JSON object: the snapshot id, the files read and every row as {column: canonical text}
(ints and unscaled decimals as decimal text, floats as IEEE-754 hex bits of the double, bytes as
hex, dates as days since 1970-01-01, timestamps as microseconds since the epoch).

Usage: read_iceberg.py <metadata folder (path or file:// URI)>
"""
import json
import math
import os
import struct
import sys

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


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


def main():
    folder = local(sys.argv[1]).rstrip("/")
    with open(os.path.join(folder, "version-hint.text")) as f:
        version = f.read().strip()
    with open(os.path.join(folder, f"v{version}.metadata.json")) as f:
        meta = json.load(f)
    assert meta["format-version"] == 2, meta["format-version"]
    snap_id = meta["current-snapshot-id"]
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == snap_id)
    schema = next(s for s in meta["schemas"] if s["schema-id"] == snap.get("schema-id", meta["current-schema-id"]))
    mapping = {}
    for m in json.loads(meta.get("properties", {}).get("schema.name-mapping.default", "[]")):
        for n in m["names"]:
            mapping[n] = m["field-id"]
    manifests, _ = read_avro(snap["manifest-list"])
    files = []
    for m in manifests:
        assert m["content"] == 0, "the export writes data manifests only"
        entries, _ = read_avro(m["manifest_path"])
        for e in entries:
            if e["status"] == 2:
                continue
            df = e["data_file"]
            assert df["content"] == 0 and df["file_format"].upper() == "PARQUET", df
            files.append(df)
    rows = []
    for df in files:
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
        for r in range(table.num_rows):
            rows.append({f["name"]: canonical(f["type"], vals[r]) for f, vals in cols})
    json.dump({"snapshot": snap_id, "files": len(files), "rows": rows}, sys.stdout)


if __name__ == "__main__":
    main()
