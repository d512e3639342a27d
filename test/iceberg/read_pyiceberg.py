"""Reads varve's Iceberg export with pyiceberg (apache/iceberg-python, run from its source, which
the caller puts on PYTHONPATH): StaticTable.from_metadata, then scan(snapshot_id=N).to_arrow() for
each snapshot asked for. A server: one JSON request per stdin line,
  {"metadata": "<path of vN.metadata.json>", "snapshots": [N, ...]}
answered by one JSON line, {"snapshots": {"N": {"columns": [...], "rows": [[...], ...]}}} or
{"error": "<exception>"}, so a test pays Python's start once.

A request {"metadata": "...", "summaries": [N, ...]} is answered with each snapshot's summary as
pyiceberg parses it and the counts pyiceberg derives from the snapshot's manifests:
{"summaries": {"N": {"summary": {...}, "counted": {...}}}}, "counted" holding what pyiceberg's
own writer puts in a summary for the entries the snapshot added and deleted (UpdateMetrics: the
`added-*` / `removed-*` / `deleted-*` counts, zeros left out; it counts every position delete file
alike), the deletion vectors (Puffin blobs) among them (`added-dvs` / `removed-dvs`) and the
totals of its live entries.

Values are canonical text (null stays null): ints and dates (days since 1970-01-01) and
timestamps (microseconds) as decimal text, floats as the IEEE-754 hex bits of the double (NaN as
"NaN"), decimals as their unscaled integer, binary as hex, booleans as "true"/"false".
"""
import json
import math
import struct
import sys
import traceback

import pyarrow as pa
from pyiceberg.manifest import DataFileContent, ManifestEntryStatus
from pyiceberg.table import StaticTable
from pyiceberg.table.snapshots import UpdateMetrics


def unscaled(v, scale):
    sign, digits, exponent = v.as_tuple()
    shift = exponent + scale
    assert shift >= 0, (v, scale)
    n = int("".join(map(str, digits)) or "0") * 10 ** shift
    return str(-n if sign else n)


def canonical_column(col):
    t = col.type
    if pa.types.is_date(t):
        return [None if v is None else str(v) for v in col.cast(pa.int32()).to_pylist()]
    if pa.types.is_timestamp(t):
        return [None if v is None else str(v) for v in col.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()]
    values = col.to_pylist()
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in values]
    if pa.types.is_integer(t):
        return [None if v is None else str(v) for v in values]
    if pa.types.is_floating(t):
        return [None if v is None else ("NaN" if math.isnan(v) else struct.pack(">d", v).hex()) for v in values]
    if pa.types.is_decimal(t):
        return [None if v is None else unscaled(v, t.scale) for v in values]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return [None if v is None else v.hex() for v in values]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return values
    raise TypeError(f"unexpected Arrow type {t}")


def read(request):
    table = StaticTable.from_metadata(request["metadata"])
    out = {}
    for sid in request["snapshots"]:
        arrow = table.scan(snapshot_id=sid).to_arrow()
        cols = [canonical_column(arrow.column(i)) for i in range(arrow.num_columns)]
        out[str(sid)] = {"columns": arrow.column_names, "rows": [list(r) for r in zip(*cols)] if cols else []}
    return {"snapshots": out}


def counted(table, snapshot):
    metrics = UpdateMetrics()
    totals = {"data-files": 0, "records": 0, "delete-files": 0, "position-deletes": 0}
    # pyiceberg counts every position delete file alike; a v3 deletion vector (a Puffin blob) is
    # counted apart too, as Iceberg's Java writer does (added-dvs / removed-dvs).
    vectors = {"added-dvs": 0, "removed-dvs": 0}
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            f = entry.data_file
            ours = entry.snapshot_id == snapshot.snapshot_id
            vector = f.content == DataFileContent.POSITION_DELETES and str(f.file_format).upper().endswith("PUFFIN")
            if ours and entry.status == ManifestEntryStatus.ADDED:
                metrics.add_file(f)
                vectors["added-dvs"] += 1 if vector else 0
            if ours and entry.status == ManifestEntryStatus.DELETED:
                metrics.remove_file(f)
                vectors["removed-dvs"] += 1 if vector else 0
            if entry.status == ManifestEntryStatus.DELETED:
                continue
            if f.content == DataFileContent.DATA:
                totals["data-files"] += 1
                totals["records"] += f.record_count
            else:
                totals["delete-files"] += 1
                totals["position-deletes"] += f.record_count
    out = metrics.to_dict()
    for k, v in vectors.items():
        if v > 0:
            out[k] = str(v)
    for k, v in totals.items():
        out["total-" + k] = str(v)
    return out


def summaries(request):
    table = StaticTable.from_metadata(request["metadata"])
    out = {}
    for sid in request["summaries"]:
        snapshot = table.snapshot_by_id(sid)
        summary = {k: str(v) for k, v in snapshot.summary.additional_properties.items()}
        summary["operation"] = snapshot.summary.operation.value
        out[str(sid)] = {"summary": summary, "counted": counted(table, snapshot)}
    return {"summaries": out}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            answer = summaries(request) if "summaries" in request else read(request)
        except Exception as e:  # the test prints it as the reader's failure
            answer = {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
