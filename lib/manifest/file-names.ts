import { randomUUID } from 'node:crypto';

/**
 * Unique names for metadata files: `<prefix><uuid>-<n>` with one random uuid per namer and a
 * counter, as Paimon's FileStorePathFactory does. Names are never reused, so a file written for a
 * failed commit attempt can never be confused with one a snapshot references.
 */
export class MetadataFileNamer {
  private readonly uuid = randomUUID();
  private counter = 0;

  /** A new manifest file name, `manifest-<uuid>-<n>`. */
  manifest(): string {
    return `manifest-${this.uuid}-${this.counter++}`;
  }

  /** A new manifest list name, `manifest-list-<uuid>-<n>`. */
  manifestList(): string {
    return `manifest-list-${this.uuid}-${this.counter++}`;
  }
}
