/**
 * A MemoryStore that, once armed, runs a hook right before the first delete (plain or
 * conditional) of a key the armed predicate picks: the moment another process writes a key that
 * a maintenance run already read and is about to delete.
 */
import { MemoryStore } from '../../lib/store/memory-store.js';

export class BeforeDeleteStore extends MemoryStore {
  /** How many times an armed hook ran. */
  fired = 0;
  private armed?: { picks: (key: string) => boolean; hook: (key: string) => Promise<void> };

  /** Runs `hook` once, before the first delete of a key `picks` accepts. */
  beforeDelete(picks: (key: string) => boolean, hook: (key: string) => Promise<void>): void {
    this.armed = { picks, hook };
  }

  private async before(key: string): Promise<void> {
    const armed = this.armed;
    if (armed === undefined || !armed.picks(key)) return;
    this.armed = undefined;
    this.fired++;
    await armed.hook(key);
  }

  override async delete(key: string): Promise<void> {
    await this.before(key);
    return super.delete(key);
  }

  override async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    await this.before(key);
    return super.deleteIfMatch(key, etag);
  }
}
