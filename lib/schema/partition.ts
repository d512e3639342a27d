/**
 * Partition paths, Hive style: `dt=2024-01-01/region=eu`. Keys and values are escaped like Hive's
 * FileUtils.escapePathName (the characters " # % ' * / : = ? \ { [ ] ^ as %XX) plus every
 * control, format or unassigned character (as the %XX of its UTF-8 bytes), so a path segment
 * never contains a separator or an invisible character. A NULL or empty value is written as the default partition
 * name (`partition.default-name`), as in Paimon and Hive.
 */
import { InvalidArgumentError } from '../errors.js';
import type { DataType, Value } from './types.js';
import { formatValue } from './value-codec.js';

const ESCAPED = /["#%'*/:=?\\{[\]^]|\p{C}/gu;
const utf8 = new TextEncoder();

/** `text` with separators, Hive's special characters and invisible characters percent-escaped. */
export function escapePathName(text: string): string {
  return text.replace(ESCAPED, (c) => {
    let out = '';
    for (const b of utf8.encode(c)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    return out;
  });
}

/** Inverse of escapePathName: `%XX` runs decoded as UTF-8; anything else kept as is. */
export function unescapePathName(text: string): string {
  if (!text.includes('%')) return text;
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    const bytes = new Uint8Array(run.length / 3);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(run.slice(3 * i + 1, 3 * i + 3), 16);
    return new TextDecoder().decode(bytes);
  });
}

/** The text a partition value stands for in a path (before escaping); the default name for NULL or "". */
function partitionValueText(type: DataType, v: Value, defaultName: string): string {
  const text = formatValue(type, v, '');
  return text === '' ? defaultName : text;
}

/** The partition path of a row: `k1=v1/k2=v2` in key order, escaped; '' when there are no partition keys. */
export function partitionPath(keys: string[], values: Value[], types: DataType[], defaultName: string): string {
  if (keys.length !== values.length || keys.length !== types.length) {
    throw new InvalidArgumentError(
      `partitionPath got ${keys.length} keys, ${values.length} values and ${types.length} types; pass one of each per partition key`,
    );
  }
  let path = '';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) path += '/';
    path += `${escapePathName(keys[i])}=${escapePathName(partitionValueText(types[i], values[i], defaultName))}`;
  }
  return path;
}

/** The key → value text map of a partition path (unescaped); {} for ''. */
export function parsePartitionPath(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (path === '') return out;
  for (const segment of path.split('/')) {
    const eq = segment.indexOf('=');
    // Keys are escaped, so the first raw "=" separates key from value.
    if (eq <= 0)
      throw new InvalidArgumentError(`partition path "${path}" has a segment "${segment}" that is not key=value`);
    out[unescapePathName(segment.slice(0, eq))] = unescapePathName(segment.slice(eq + 1));
  }
  return out;
}

/**
 * The key → value map of a CLI partition filter `dt=2024-01-01,region=eu` (values as they appear
 * unescaped in partition paths; a NULL partition is the default name).
 */
export function parsePartitionSpec(spec: string): Record<string, string> {
  const out: Record<string, string> = {};
  const rule = 'write partitions as key=value pairs separated by commas, e.g. "dt=2024-01-01,region=eu"';
  if (spec.trim() === '') throw new InvalidArgumentError(`empty partition filter; ${rule}`);
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? '' : part.slice(0, eq).trim();
    if (key === '')
      throw new InvalidArgumentError(`partition filter "${spec}": "${part.trim()}" is not key=value; ${rule}`);
    if (key in out) throw new InvalidArgumentError(`partition filter "${spec}" gives ${key} twice; give each key once`);
    out[key] = part.slice(eq + 1).trim();
  }
  return out;
}
