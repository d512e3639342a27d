/**
 * What every CLI command starts from: the warehouse (a folder by default, `s3://…` on AWS) and
 * its catalog. Light on purpose: every command declaration imports it, and `varve --help` loads
 * only the declarations (lib/cli/main.ts).
 */
import type { Command } from 'commander';
import type { Catalog } from '../catalog/catalog.js';

/** Where a command prints: stdout for its output, stderr for status lines. */
export type Out = (text: string) => void;

/** What every command gets when it registers itself with the program. */
export interface CliContext {
  program: Command;
  /** The catalog of the warehouse the global flags name (read when the command runs). */
  catalog(): Catalog;
  /** The command's output (stdout). */
  out: Out;
  /** Status lines (stderr), so that stdout stays the command's output alone. */
  status: Out;
}

/** The warehouse a command uses: the flag, else VARVE_WAREHOUSE, else ./warehouse. */
export function warehouseUri(flag?: string): string {
  return flag ?? process.env.VARVE_WAREHOUSE ?? './warehouse';
}
