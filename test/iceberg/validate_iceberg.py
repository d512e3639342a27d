"""Validates Iceberg metadata files against the Iceberg table spec, format versions 2 and 3, with
fastavro only (no varve code): each Avro file's embedded writer schema must declare the spec's
fields (field id, name, type, optionality; the tables "Manifests", "Manifest Lists" of
https://iceberg.apache.org/spec/ transcribed below), its records must validate against that
schema, its file metadata must carry the keys the spec requires, and each metadata JSON must
have every field a table metadata of its format version requires. v3 (each file by its own
format-version): the data_file fields 142-145 and the manifest list's first_row_id (520); every
data manifest of a v3 list has a first_row_id and no delete manifest has one; a deletion vector
(file_format PUFFIN) names its referenced_data_file, content_offset and content_size_in_bytes;
the metadata has next-row-id, and a snapshot whose manifest list is v3 has first-row-id and
added-rows (snapshots from before an upgrade have neither).

Usage: validate_iceberg.py <metadata folder>...   Prints "ok <n> files"; exits 1 naming each problem on stderr.
"""
import json
import os
import sys

import fastavro
from fastavro.validation import validate_many

# (field id, name, type, required) per the spec. Types: Iceberg primitive names, "struct:<name>",
# "list:<type>", "map:<key>,<value>".
DATA_FILE_V2 = [
    (134, "content", "int", True),
    (100, "file_path", "string", True),
    (101, "file_format", "string", True),
    (102, "partition", "struct:partition", True),
    (103, "record_count", "long", True),
    (104, "file_size_in_bytes", "long", True),
    (108, "column_sizes", "map:int,long", False),
    (109, "value_counts", "map:int,long", False),
    (110, "null_value_counts", "map:int,long", False),
    (137, "nan_value_counts", "map:int,long", False),
    (125, "lower_bounds", "map:int,binary", False),
    (128, "upper_bounds", "map:int,binary", False),
    (131, "key_metadata", "binary", False),
    (132, "split_offsets", "list:long", False),
    (135, "equality_ids", "list:int", False),
    (140, "sort_order_id", "int", False),
]
MANIFEST_ENTRY_V2 = [
    (0, "status", "int", True),
    (1, "snapshot_id", "long", False),
    (3, "sequence_number", "long", False),
    (4, "file_sequence_number", "long", False),
    (2, "data_file", "struct:data_file", True),
]
FIELD_SUMMARY = [
    (509, "contains_null", "boolean", True),
    (518, "contains_nan", "boolean", False),
    (510, "lower_bound", "binary", False),
    (511, "upper_bound", "binary", False),
]
MANIFEST_FILE_V2 = [
    (500, "manifest_path", "string", True),
    (501, "manifest_length", "long", True),
    (502, "partition_spec_id", "int", True),
    (517, "content", "int", True),
    (515, "sequence_number", "long", True),
    (516, "min_sequence_number", "long", True),
    (503, "added_snapshot_id", "long", True),
    (504, "added_files_count", "int", True),
    (505, "existing_files_count", "int", True),
    (506, "deleted_files_count", "int", True),
    (512, "added_rows_count", "long", True),
    (513, "existing_rows_count", "long", True),
    (514, "deleted_rows_count", "long", True),
    (507, "partitions", "list:struct:field_summary", False),
    (519, "key_metadata", "binary", False),
]
DATA_FILE_V3 = DATA_FILE_V2 + [
    (142, "first_row_id", "long", False),
    (143, "referenced_data_file", "string", False),
    (144, "content_offset", "long", False),
    (145, "content_size_in_bytes", "long", False),
]
MANIFEST_ENTRY_V3 = MANIFEST_ENTRY_V2
MANIFEST_FILE_V3 = MANIFEST_FILE_V2 + [(520, "first_row_id", "long", False)]
STRUCTS = {"data_file": DATA_FILE_V2, "field_summary": FIELD_SUMMARY}
AVRO_PRIMITIVE = {"int": "int", "long": "long", "string": "string", "binary": "bytes", "boolean": "boolean"}
METADATA_V2_REQUIRED = [
    "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms", "last-column-id",
    "schemas", "current-schema-id", "partition-specs", "default-spec-id", "last-partition-id", "sort-orders",
    "default-sort-order-id",
]
SNAPSHOT_V2_REQUIRED = ["snapshot-id", "sequence-number", "timestamp-ms", "manifest-list", "summary"]

problems = []


def check_type(where, avro_type, spec_type):
    """Checks an Avro (non-null) type against a spec type string."""
    if spec_type.startswith("struct:"):
        name = spec_type[len("struct:"):]
        if not (isinstance(avro_type, dict) and avro_type.get("type") == "record"):
            problems.append(f"{where}: expected a record, got {avro_type}")
            return
        if name == "partition":
            for f in avro_type["fields"]:
                if "field-id" not in f or f["field-id"] < 1000:
                    problems.append(f"{where}.{f['name']}: partition fields need field ids from 1000")
            return
        check_fields(where, avro_type["fields"], STRUCTS[name])
    elif spec_type.startswith("list:"):
        if not (isinstance(avro_type, dict) and avro_type.get("type") == "array" and "element-id" in avro_type):
            problems.append(f"{where}: expected an array with an element-id, got {avro_type}")
            return
        check_type(where + "[]", avro_type["items"], spec_type[len("list:"):])
    elif spec_type.startswith("map:"):
        k, v = spec_type[len("map:"):].split(",")
        ok = isinstance(avro_type, dict) and avro_type.get("type") == "array" and avro_type.get("logicalType") == "map"
        if not ok:
            problems.append(f"{where}: expected an Iceberg int-keyed map (array of key/value records), got {avro_type}")
            return
        kv = {f["name"]: f for f in avro_type["items"]["fields"]}
        if set(kv) != {"key", "value"} or "field-id" not in kv["key"] or "field-id" not in kv["value"]:
            problems.append(f"{where}: map entries need key and value with field ids")
            return
        check_type(where + ".key", kv["key"]["type"], k)
        check_type(where + ".value", kv["value"]["type"], v)
    else:
        if avro_type != AVRO_PRIMITIVE[spec_type]:
            problems.append(f"{where}: expected {AVRO_PRIMITIVE[spec_type]}, got {avro_type}")


def check_fields(where, fields, spec):
    by_id = {f.get("field-id"): f for f in fields}
    for fid, name, typ, required in spec:
        f = by_id.get(fid)
        if f is None:
            if required:
                problems.append(f"{where}: required field {fid} {name} missing")
            continue
        if f["name"] != name:
            problems.append(f"{where}: field {fid} is named {f['name']}, the spec says {name}")
        t = f["type"]
        if required:
            if isinstance(t, list):
                problems.append(f"{where}.{name}: required, but written as a union {t}")
                continue
        else:
            if not (isinstance(t, list) and len(t) == 2 and t[0] == "null" and f.get("default", "x") is None):
                problems.append(f"{where}.{name}: optional fields are unions with null first and a null default, got {t}")
                continue
            t = t[1]
        check_type(f"{where}.{name}", t, typ)
    spec_ids = {s[0] for s in spec}
    for fid in by_id:
        if fid not in spec_ids:
            problems.append(f"{where}: field id {fid} is not in the spec")


def check_v3_records(name, records, is_list):
    for r in records:
        if is_list:
            if (r["content"] == 0) != (r.get("first_row_id") is not None):
                problems.append(f"{name}: manifest {r['manifest_path']} (content {r['content']}) first_row_id {r.get('first_row_id')}")
            continue
        df = r["data_file"]
        if df["content"] != 0 and df.get("first_row_id") is not None:
            problems.append(f"{name}: delete file {df['file_path']} has a first_row_id")
        if df["file_format"].upper() == "PUFFIN":
            for k in ("referenced_data_file", "content_offset", "content_size_in_bytes"):
                if df.get(k) is None:
                    problems.append(f"{name}: deletion vector in {df['file_path']} lacks {k}")


def check_avro(path, spec, required_meta, v3_spec=None):
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        records = list(reader)
        meta = reader.metadata
    schema = json.loads(meta["avro.schema"])
    v3 = meta.get("format-version") == "3"
    if v3:
        STRUCTS["data_file"] = DATA_FILE_V3
        spec = v3_spec
        check_v3_records(os.path.basename(path), records, spec is MANIFEST_FILE_V3)
    check_fields(os.path.basename(path), schema["fields"], spec)
    STRUCTS["data_file"] = DATA_FILE_V2
    for k in required_meta:
        if k not in meta:
            problems.append(f"{os.path.basename(path)}: file metadata lacks {k}")
    try:
        validate_many(records, fastavro.parse_schema(schema), raise_errors=True)
    except Exception as e:  # noqa: BLE001
        problems.append(f"{os.path.basename(path)}: records do not validate: {e}")


def check_metadata(path):
    with open(path) as fh:
        m = json.load(fh)
    name = os.path.basename(path)
    for k in METADATA_V2_REQUIRED:
        if k not in m:
            problems.append(f"{name}: lacks {k}")
    if m.get("format-version") not in (2, 3):
        problems.append(f"{name}: format-version {m.get('format-version')}")
    v3 = m.get("format-version") == 3
    if v3 and not isinstance(m.get("next-row-id"), int):
        problems.append(f"{name}: a v3 table metadata lacks next-row-id")
    for s in m.get("snapshots", []):
        required = list(SNAPSHOT_V2_REQUIRED)
        if v3 and list_format_version(s.get("manifest-list", ""), os.path.dirname(path)) == "3":
            required += ["first-row-id", "added-rows"]
        for k in required:
            if k not in s:
                problems.append(f"{name}: snapshot {s.get('snapshot-id')} lacks {k}")
        if "operation" not in s.get("summary", {}):
            problems.append(f"{name}: snapshot {s.get('snapshot-id')} summary lacks operation")
    ids = {f["id"] for sc in m.get("schemas", []) for f in sc["fields"]}
    if ids and max(ids) > m.get("last-column-id", -1):
        problems.append(f"{name}: last-column-id below a field id")
    if "schema.name-mapping.default" in m.get("properties", {}):
        json.loads(m["properties"]["schema.name-mapping.default"])
    cur = m.get("current-snapshot-id")
    if cur is not None and cur != -1 and all(s["snapshot-id"] != cur for s in m.get("snapshots", [])):
        problems.append(f"{name}: current-snapshot-id {cur} is not among the snapshots")


def list_format_version(uri, folder):
    """The format-version of a manifest list: at its location, or (golden files, s3:// locations) beside the metadata."""
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    if not os.path.exists(path):
        path = os.path.join(folder, os.path.basename(uri))
    if not os.path.exists(path):
        return None
    with open(path, "rb") as fh:
        return fastavro.reader(fh).metadata.get("format-version")


def main():
    n = 0
    for folder in sys.argv[1:]:
        for f in sorted(os.listdir(folder)):
            p = os.path.join(folder, f)
            if f.endswith(".metadata.json"):
                check_metadata(p)
            elif f.startswith("snap-") and f.endswith(".avro"):
                check_avro(p, MANIFEST_FILE_V2, ["snapshot-id", "sequence-number", "format-version"], MANIFEST_FILE_V3)
            elif f.endswith(".avro"):
                meta = ["schema", "partition-spec", "partition-spec-id", "format-version", "content"]
                check_avro(p, MANIFEST_ENTRY_V2, meta, MANIFEST_ENTRY_V3)
            else:
                continue
            n += 1
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"ok {n} files")


if __name__ == "__main__":
    main()
