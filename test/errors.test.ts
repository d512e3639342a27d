import { describe, expect, it } from 'vitest';
import {
  CommitConflictError,
  ConditionalRequestConflictError,
  SnapshotExpiredError,
  VarveError,
  isRetryable,
} from '../lib/errors.js';

describe('errors', () => {
  it('carry their name, kind and retryability', () => {
    const expired = new SnapshotExpiredError('snapshots 3..5 expired', { from: 3, to: 6 });
    expect(expired).toBeInstanceOf(VarveError);
    expect(expired.name).toBe('SnapshotExpiredError');
    expect(expired.lostRange).toEqual({ from: 3, to: 6 });
    expect(isRetryable(new ConditionalRequestConflictError('k'))).toBe(true);
    expect(isRetryable(new CommitConflictError('file gone'))).toBe(false);
    expect(isRetryable(new Error('plain'))).toBe(false);
  });
});
